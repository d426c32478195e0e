// Two of the three doors into the driver: cuGetProcAddress (how the CUDA
// runtime, and so PyTorch, cuBLAS and cuDNN, find every driver entry point)
// and dlsym on a libcuda handle (how TensorFlow does). Both ask the real
// driver first and then swap a real entry point for cuswap's hook of the
// same exact versioned name (`_v2`, `_ptsz`, ...) recognised by its address;
// what cuswap does not hook is returned as the driver gave it. A lookup of
// cuGetProcAddress itself returns the hook, or every later lookup would go
// around cuswap.
#include <dlfcn.h>

#include "hooks/handlers.h"
#include "hooks/uninstrumented.h"

namespace cuswap::hooks {
namespace {

void swap_for_hook(Runtime& rt, void** pfn) {
  if (!pfn || !*pfn) return;
  if (void* hook = rt.hook_for(*pfn)) {
    *pfn = hook;
    rt.procaddress_answered.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

CUresult handle_cuGetProcAddress(Entry& entry, Real_cuGetProcAddress real, const char* symbol,
                                 void** pfn, int cudaVersion, cuuint64_t flags) noexcept {
  CUresult r = real(symbol, pfn, cudaVersion, flags);
  if (r == CUDA_SUCCESS) swap_for_hook(*entry.active(), pfn);
  return r;
}

CUresult handle_cuGetProcAddress_v2(Entry& entry, Real_cuGetProcAddress_v2 real, const char* symbol,
                                    void** pfn, int cudaVersion, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult* symbolStatus) noexcept {
  CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (r == CUDA_SUCCESS) swap_for_hook(*entry.active(), pfn);
  return r;
}

}  // namespace cuswap::hooks

// Note [Overriding dlsym]: the shim exports an unversioned `dlsym`, which
// binds both dlsym@GLIBC_2.34 and dlsym@GLIBC_2.2.5 references. glibc
// resolves RTLD_NEXT relative to the object that called dlsym, which it
// finds from the return address, so an RTLD_NEXT lookup must reach the real
// dlsym with the caller's return address intact: a tail jump. That is
// written in assembly (hooks/dlsym.cpp), because a compiler makes no promise
// of a tail call (not at -O0, not under sanitizers). Every other handle
// comes here.
extern "C" CUSWAP_UNINSTRUMENTED __attribute__((visibility("hidden"))) void* cuswap_dlsym_other(
    void* handle, const char* symbol) {
  using cuswap::hooks::Runtime;
  if (!cuswap_resolve_real_dlsym()) return nullptr;
  void* found = cuswap_real_dlsym(handle, symbol);
  if (!found || !symbol || symbol[0] != 'c' || symbol[1] != 'u') return found;
  // cuswap's own C ABI (cuswap_version, looked up to see whether cuswap is
  // there) is no driver name: it does not start the runtime.
  constexpr char kOwn[] = "cuswap_";
  size_t i = 2;
  while (kOwn[i] && symbol[i] == kOwn[i])
    ++i;
  if (!kOwn[i]) return found;
  Runtime* rt = cuswap::hooks::runtime();  // nullptr while initialising on this thread
  if (!rt || rt->passthrough.load(std::memory_order_relaxed)) return found;
  void* hook = rt->hook_for(found);
  if (!hook) return found;
  rt->dlsym_answered.fetch_add(1, std::memory_order_relaxed);
  return hook;
}
