// Replacement operator new/delete that count per thread. Every delete
// forwards to free so that the pairs stay matched (also under
// AddressSanitizer).
#include "tests/support/allocation_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local uint64_t t_allocations = 0;

void* counted_malloc(std::size_t size_bytes) {
  ++t_allocations;
  return std::malloc(size_bytes == 0 ? 1 : size_bytes);
}
void* counted_aligned(std::size_t size_bytes, std::align_val_t alignment) {
  ++t_allocations;
  const auto align = static_cast<std::size_t>(alignment);
  const std::size_t rounded = (size_bytes + align - 1) / align * align;
  return std::aligned_alloc(align, rounded == 0 ? align : rounded);
}
// Out of line so that GCC, having inlined new as malloc, does not also see
// delete as free and call the pair mismatched (-Wmismatched-new-delete).
[[gnu::noinline]] void release(void* p) noexcept {
  std::free(p);
}
}  // namespace

void* operator new(std::size_t size_bytes) {
  if (void* p = counted_malloc(size_bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size_bytes) {
  if (void* p = counted_malloc(size_bytes)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size_bytes, const std::nothrow_t&) noexcept {
  return counted_malloc(size_bytes);
}
void* operator new[](std::size_t size_bytes, const std::nothrow_t&) noexcept {
  return counted_malloc(size_bytes);
}
void* operator new(std::size_t size_bytes, std::align_val_t alignment) {
  if (void* p = counted_aligned(size_bytes, alignment)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size_bytes, std::align_val_t alignment) {
  if (void* p = counted_aligned(size_bytes, alignment)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t size_bytes, std::align_val_t alignment,
                   const std::nothrow_t&) noexcept {
  return counted_aligned(size_bytes, alignment);
}
void* operator new[](std::size_t size_bytes, std::align_val_t alignment,
                     const std::nothrow_t&) noexcept {
  return counted_aligned(size_bytes, alignment);
}
void operator delete(void* p) noexcept {
  release(p);
}
void operator delete[](void* p) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  release(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  release(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
  release(p);
}

namespace cuswap::testing {
uint64_t allocations_on_this_thread() noexcept {
  return t_allocations;
}
}  // namespace cuswap::testing
