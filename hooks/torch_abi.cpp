// PyTorch's pluggable allocator ABI (include/cuswap/cuswap.h): what
// torch.cuda.memory.CUDAPluggableAllocator loads from libcuswap.so.
//
// Note [The PyTorch allocator ABI]
// - PyTorch calls alloc(size, device, stream) for every block it needs and
//   free(ptr, size, device, stream) when the block is no longer used, on
//   the stream it was allocated on. These go through the handlers of
//   cuMemAllocAsync and cuMemFreeAsync, so they meet the same allocator as
//   an intercepted driver call: under a budget the swapping allocator
//   serves them, and without one the driver does, stream-ordered.
// - The device is PyTorch's: where the current context is another device's
//   (or there is none), the device's primary context is pushed for the call
//   and popped after.
// - Swapping is only safe where cuswap sees the kernels too, so the library
//   must be preloaded (LD_PRELOAD, `cuswap run`), not only loaded by
//   PyTorch: otherwise the process's driver calls do not reach the hooks
//   and cuswap cannot fetch a buffer back before a kernel uses it. Loaded
//   without being preloaded, the calls go straight to the driver, and one
//   warning says so.
// - A failure returns null, which PyTorch turns into its out-of-memory error.
#include <dlfcn.h>

#include <atomic>

#include "common/log.h"
#include "cuswap/cuswap.h"
#include "hooks/handlers.h"

namespace cuswap::hooks {

namespace {

// Whether the process's calls to the driver reach this library's hooks.
bool preloaded() noexcept {
  static const bool yes = [] {
    void* (*real_dlsym)(void*, const char*) =
        cuswap_real_dlsym
            ? cuswap_real_dlsym
            : reinterpret_cast<void* (*)(void*, const char*)>(cuswap_resolve_real_dlsym());
    // The first cuLaunchKernel in the process's lookup order, and whether it
    // is in this library. (The hook's own address would not do: taken in a
    // library that was not preloaded, it is the driver's.)
    void* first = real_dlsym ? real_dlsym(RTLD_DEFAULT, "cuLaunchKernel") : nullptr;
    Dl_info found{}, mine{};
    return first && dladdr(first, &found) != 0 &&
           dladdr(reinterpret_cast<void*>(&preloaded), &mine) != 0 &&
           found.dli_fbase == mine.dli_fbase;
  }();
  if (!yes) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      log::warn(
          "PyTorch's allocator calls reach libcuswap.so, but the driver calls do not: preload it "
          "(LD_PRELOAD, or cuswap run); until then nothing is swapped");
  }
  return yes;
}

// The device's primary context, current for the scope where another one is.
class DeviceScope {
 public:
  DeviceScope(const Driver& d, int device) noexcept : d_(d), device_(device) {
    CUdevice current = -1;
    if (d.cuCtxGetDevice && d.cuCtxGetDevice(&current) == CUDA_SUCCESS && current == device) {
      ok_ = true;
      return;
    }
    CUcontext ctx = nullptr;
    if (!d.cuDevicePrimaryCtxRetain || !d.cuCtxPushCurrent_v2 ||
        d.cuDevicePrimaryCtxRetain(&ctx, device) != CUDA_SUCCESS)
      return;
    if (d.cuCtxPushCurrent_v2(ctx) != CUDA_SUCCESS) {
      d.cuDevicePrimaryCtxRelease_v2(device);
      return;
    }
    ok_ = pushed_ = true;
  }
  ~DeviceScope() {
    if (!pushed_) return;
    CUcontext popped = nullptr;
    d_.cuCtxPopCurrent_v2(&popped);
    d_.cuDevicePrimaryCtxRelease_v2(device_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  bool ok() const noexcept { return ok_; }

 private:
  const Driver& d_;
  int device_;
  bool ok_ = false;
  bool pushed_ = false;
};

}  // namespace

}  // namespace cuswap::hooks

extern "C" {

CUSWAP_API void* cuswap_torch_alloc(ssize_t size, int device, struct CUstream_st* stream) {
  using namespace cuswap::hooks;
  if (size <= 0) return nullptr;
  Entry entry(HookId::cuMemAllocAsync);
  const cuswap::Driver* d = entry.driver();
  if (!d || !d->cuMemAllocAsync) return nullptr;
  DeviceScope scope(*d, device);
  if (!scope.ok()) return nullptr;
  CUdeviceptr ptr = 0;
  const auto bytes = static_cast<size_t>(size);
  const CUresult r = entry.active() && preloaded()
                         ? handle_cuMemAllocAsync(entry, d->cuMemAllocAsync, &ptr, bytes, stream)
                         : d->cuMemAllocAsync(&ptr, bytes, stream);
  return r == CUDA_SUCCESS ? reinterpret_cast<void*>(ptr) : nullptr;
}

CUSWAP_API void cuswap_torch_free(void* ptr, size_t /*size*/, int device,
                                  struct CUstream_st* stream) {
  using namespace cuswap::hooks;
  if (ptr == nullptr) return;
  Entry entry(HookId::cuMemFreeAsync);
  const cuswap::Driver* d = entry.driver();
  if (!d || !d->cuMemFreeAsync) return;
  DeviceScope scope(*d, device);
  if (!scope.ok()) return;
  const auto address = reinterpret_cast<CUdeviceptr>(ptr);
  // A block allocated before the hooks were active is the driver's either way.
  if (entry.active() && preloaded())
    handle_cuMemFreeAsync(entry, d->cuMemFreeAsync, address, stream);
  else
    d->cuMemFreeAsync(address, stream);
}

}  // extern "C"
