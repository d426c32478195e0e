// simcuda: device memory as host mappings. Linear allocations, pool
// allocations and pinned host memory are anonymous mappings whose addresses
// serve as device pointers (one address space, as with unified addressing);
// VMM reservations live in vmm.cpp.
//
// Device memory is charged against the device's capacity the way the real
// driver rounds it: allocations under 1 MiB in 512-byte units, larger ones in
// 2 MiB pages, so an allocator above cannot count on byte-exact accounting.
#include <sys/mman.h>

#include <algorithm>

#include "tests/simcuda/sim.h"

namespace simcuda {
namespace {

constexpr uint64_t round_up(uint64_t value, uint64_t unit) {
  return (value + unit - 1) / unit * unit;
}

uint64_t charge_for(size_t bytes) {
  return bytes < (1u << 20) ? round_up(bytes, 512) : round_up(bytes, kGranularity);
}

size_t page_bytes(size_t bytes) {
  return static_cast<size_t>(round_up(bytes, 4096));
}

Region* add_region(Region::Kind kind, uintptr_t base, size_t size, size_t mapped, Context* ctx,
                   int device) {
  State& s = state();
  auto region = std::make_unique<Region>();
  region->kind = kind;
  region->base = base;
  region->size = size;
  region->mapped_bytes = mapped;
  region->ctx = ctx;
  region->device = device;
  region->id = s.next_buffer_id++;
  Region* raw = region.get();
  s.regions[base] = std::move(region);
  return raw;
}

// Allocates linear device memory of `bytes` in `ctx`'s device.
CUresult alloc_linear(Context* ctx, size_t bytes, Region::Kind kind, Pool* pool, CUdeviceptr* out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  Device& device = s.devices[static_cast<size_t>(ctx->device)];
  uint64_t charge = charge_for(bytes);
  if (device.stats.in_use + charge > device.capacity) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t mapped = page_bytes(bytes);
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  Region* region =
      add_region(kind, reinterpret_cast<uintptr_t>(p), bytes, mapped, ctx, ctx->device);
  region->charged_bytes = charge;
  region->pool = pool;
  charge_device(device, charge);
  if (pool) {
    pool->used += charge;
    pool->used_high = std::max(pool->used_high, pool->used);
    pool->reserved_high = std::max(pool->reserved_high, pool->used);
  }
  *out = region->base;
  return CUDA_SUCCESS;
}

// A region that cuMemFree / cuMemFreeAsync may free at `ptr`.
Region* freeable(CUdeviceptr ptr) {
  auto& regions = state().regions;
  auto it = regions.find(ptr);
  if (it == regions.end()) return nullptr;
  Region* region = it->second.get();
  bool linear = region->kind == Region::Kind::linear || region->kind == Region::Kind::pool;
  return linear && !region->freeing ? region : nullptr;
}

CUresult alloc_async(CUdeviceptr* dptr, size_t bytesize, Pool* pool, CUstream hStream,
                     DefaultStream default_stream) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, default_stream, stream); r != CUDA_SUCCESS) return r;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  if (!pool) {
    pool = s.devices[static_cast<size_t>(stream->ctx->device)].default_pool;
  } else if (!s.pools.count(pool)) {
    return CUDA_ERROR_INVALID_VALUE;
  } else if (pool->device != stream->ctx->device) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  charge_call(s.config->costs.alloc_async_us);
  return alloc_linear(stream->ctx, bytesize, Region::Kind::pool, pool, dptr);
}

CUresult free_async(CUdeviceptr dptr, CUstream hStream, DefaultStream default_stream) {
  State& s = state();
  std::unique_lock lock(s.mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, default_stream, stream); r != CUDA_SUCCESS) return r;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  Region* region = freeable(dptr);
  if (!region) return CUDA_ERROR_INVALID_VALUE;
  region->freeing = true;
  auto op = std::make_shared<Op>();
  op->kind = OpKind::free_async;
  op->region = region;
  op->ranges.push_back({region->base, region->base + region->size, SIMCUDA_WRITE});
  enqueue(lock, stream, std::move(op));
  return CUDA_SUCCESS;
}

CUresult alloc_host(void** pp, size_t bytesize, unsigned int Flags) {
  if (!pp || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (Flags &
      ~(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED))
    return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  charge_call(s.config->costs.host_alloc_us, s.config->costs.host_alloc_page_us, bytesize);
  size_t mapped = page_bytes(bytesize);
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  add_region(Region::Kind::host, reinterpret_cast<uintptr_t>(p), bytesize, mapped, ctx,
             ctx->device);
  note_host_pinned(s.devices[static_cast<size_t>(ctx->device)], static_cast<int64_t>(mapped));
  *pp = p;
  return CUDA_SUCCESS;
}

}  // namespace

Region* find_region(uintptr_t address) {
  auto& regions = state().regions;
  auto it = regions.upper_bound(address);
  if (it == regions.begin()) return nullptr;
  --it;
  Region* region = it->second.get();
  return address < region->base + region->size ? region : nullptr;
}

bool known_range(uintptr_t address, size_t bytes) {
  Region* region = find_region(address);
  return region && bytes <= region->base + region->size - address;
}

bool is_device_address(uintptr_t address) {
  Region* region = find_region(address);
  return region && region->kind != Region::Kind::host;
}

bool accessible(uintptr_t address, size_t bytes, int mode) {
  Region* region = find_region(address);
  if (!region || bytes > region->base + region->size - address) return false;
  if (region->kind != Region::Kind::reservation) return true;
  uintptr_t at = address, end = address + bytes;
  auto it = region->mappings.upper_bound(at);
  if (it == region->mappings.begin()) return false;
  --it;
  while (at < end) {
    if (it == region->mappings.end()) return false;
    const Mapping& m = it->second;
    if (at < m.start || at >= m.start + m.size) return false;
    if ((m.access & mode) != mode) return false;
    at = m.start + m.size;
    ++it;
  }
  return true;
}

void free_region(Region* region) {
  State& s = state();
  forget_accesses(region->base, region->base + region->size);
  if (region->kind == Region::Kind::reservation) unmap_all(*region);
  munmap(reinterpret_cast<void*>(region->base), region->mapped_bytes);
  Device& device = s.devices[static_cast<size_t>(region->device)];
  uncharge_device(device, region->charged_bytes);
  if (region->kind == Region::Kind::host)
    note_host_pinned(device, -static_cast<int64_t>(region->mapped_bytes));
  if (region->pool) region->pool->used -= region->charged_bytes;
  s.regions.erase(region->base);
}

void destroy_context_memory(Context* ctx) {
  State& s = state();
  std::vector<Region*> owned;
  for (auto& [base, region] : s.regions)
    if (region->ctx == ctx && region->kind != Region::Kind::reservation)
      owned.push_back(region.get());
  for (Region* region : owned)
    free_region(region);
}

Region* add_reservation(uintptr_t base, size_t size, int device) {
  Region* region = add_region(Region::Kind::reservation, base, size, size, nullptr, device);
  return region;
}

void finish_free_async(Op& op) {
  free_region(op.region);
}

}  // namespace simcuda

using namespace simcuda;

extern "C" {

CUresult CUDAAPI cuMemGetInfo_v2(size_t* free, size_t* total) {
  SIM_ENTER();
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  const Device& device = s.devices[static_cast<size_t>(ctx->device)];
  *total = device.capacity;
  *free = device.capacity > device.stats.in_use ? device.capacity - device.stats.in_use : 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  SIM_ENTER();
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  const HostCosts& costs = state().config->costs;
  charge_call(costs.mem_alloc_us, costs.mem_alloc_page_us, bytesize);
  return alloc_linear(ctx, bytesize, Region::Kind::linear, nullptr, dptr);
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes) {
  SIM_ENTER();
  if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  size_t pitch = static_cast<size_t>(round_up(WidthInBytes, 512));
  if (Height > SIZE_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  const HostCosts& costs = state().config->costs;
  charge_call(costs.mem_alloc_us, costs.mem_alloc_page_us, pitch * Height);
  CUresult r = alloc_linear(ctx, pitch * Height, Region::Kind::linear, nullptr, dptr);
  if (r == CUDA_SUCCESS) *pPitch = pitch;
  return r;
}

// cuMemFree waits for the device to be idle first, as the real one does in
// practice (cudaFree synchronizes the device); stream-ordered frees are
// cuMemFreeAsync.
CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  SIM_ENTER();
  State& s = state();
  std::unique_lock lock(s.mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  Region* region = freeable(dptr);
  if (!region) return CUDA_ERROR_INVALID_VALUE;
  region->freeing = true;
  charge_call(s.config->costs.mem_free_us, s.config->costs.mem_free_page_us, region->size);
  count_host_sync();
  wait_all(lock, nullptr);
  free_region(region);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  Region* region = find_region(dptr);
  if (!region || region->kind == Region::Kind::host) return CUDA_ERROR_NOT_FOUND;
  uintptr_t base = region->base;
  size_t size = region->size;
  if (region->kind == Region::Kind::reservation) {
    auto it = region->mappings.upper_bound(dptr);
    if (it == region->mappings.begin()) return CUDA_ERROR_NOT_FOUND;
    --it;
    if (dptr >= it->second.start + it->second.size) return CUDA_ERROR_NOT_FOUND;
    base = it->second.start;
    size = it->second.size;
  }
  if (pbase) *pbase = base;
  if (psize) *psize = size;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  SIM_ENTER();
  return alloc_host(pp, bytesize, Flags);
}

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t bytesize) {
  SIM_ENTER();
  return alloc_host(pp, bytesize, 0);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
  SIM_ENTER();
  State& s = state();
  std::unique_lock lock(s.mu);
  auto it = s.regions.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.regions.end() || it->second->kind != Region::Kind::host || it->second->freeing)
    return CUDA_ERROR_INVALID_VALUE;
  Region* region = it->second.get();
  region->freeing = true;
  charge_call(s.config->costs.host_free_us, s.config->costs.host_free_page_us, region->size);
  count_host_sync();
  wait_all(lock, nullptr);
  free_region(region);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void* data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  SIM_ENTER();
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Region* region = find_region(ptr);
  if (!region) return CUDA_ERROR_INVALID_VALUE;
  bool host = region->kind == Region::Kind::host;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      *static_cast<CUcontext*>(data) = region->ctx;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      *static_cast<unsigned*>(data) = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      *static_cast<CUdeviceptr*>(data) = ptr;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      if (!host) return CUDA_ERROR_INVALID_VALUE;
      *static_cast<void**>(data) = reinterpret_cast<void*>(ptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      *static_cast<unsigned long long*>(data) = region->id;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      *static_cast<bool*>(data) = false;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      *static_cast<bool*>(data) = false;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      *static_cast<int*>(data) = region->device;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      *static_cast<CUdeviceptr*>(data) = region->base;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      *static_cast<size_t*>(data) = region->size;
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      *static_cast<bool*>(data) = accessible(ptr, 1, 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: {
      int flags = accessible(ptr, 1, SIMCUDA_READ | SIMCUDA_WRITE)
                      ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
                  : accessible(ptr, 1, SIMCUDA_READ) ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
                                                     : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
      *static_cast<int*>(data) = flags;
      return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      *static_cast<CUmemoryPool*>(data) = region->pool;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

// ---------------------------------------------------------------------------
// Stream-ordered allocation

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  SIM_ENTER();
  return alloc_async(dptr, bytesize, nullptr, hStream, DefaultStream::legacy);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  SIM_ENTER();
  return alloc_async(dptr, bytesize, nullptr, hStream, DefaultStream::per_thread);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream) {
  SIM_ENTER();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, hStream, DefaultStream::legacy);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream) {
  SIM_ENTER();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  return alloc_async(dptr, bytesize, pool, hStream, DefaultStream::per_thread);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  SIM_ENTER();
  return free_async(dptr, hStream, DefaultStream::legacy);
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  SIM_ENTER();
  return free_async(dptr, hStream, DefaultStream::per_thread);
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  SIM_ENTER();
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (!state().pools.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  auto* as_int = static_cast<int*>(value);
  auto* as_u64 = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      *as_int = pool->reuse_follow_event_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      *as_int = pool->reuse_allow_opportunistic;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      *as_int = pool->reuse_allow_internal_dependencies;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *as_u64 = pool->release_threshold;
      return CUDA_SUCCESS;
    // Freed pool memory goes back to the device at once, so what the pool
    // reserves is what is in use.
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *as_u64 = pool->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *as_u64 = pool->reserved_high;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *as_u64 = pool->used_high;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  SIM_ENTER();
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  if (!state().pools.count(pool)) return CUDA_ERROR_INVALID_VALUE;
  // The value's type depends on the attribute: read only what it is.
  auto as_int = [value] { return *static_cast<const int*>(value); };
  auto as_u64 = [value] { return *static_cast<const cuuint64_t*>(value); };
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
      pool->reuse_follow_event_dependencies = as_int();
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
      pool->reuse_allow_opportunistic = as_int();
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse_allow_internal_dependencies = as_int();
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      pool->release_threshold = as_u64();
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (as_u64() != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->reserved_high = pool->used;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (as_u64() != 0) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  SIM_ENTER();
  (void)minBytesToKeep;
  std::lock_guard lock(state().mu);
  return state().pools.count(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
