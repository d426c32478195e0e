// The driver functions libcuswap.so exports, generated from
// CUSWAP_DRIVER_HOOKED, and the public C ABI (include/cuswap/cuswap.h).
//
// Every hook has the same shape: enter (count, guard, initialise once);
// without a driver there is nothing to call; when the call is not to be
// observed, pass it through; otherwise the handler calls the driver and
// records. Definitions are checked against cuda.h's declarations (this file
// is compiled with __CUDA_API_VERSION_INTERNAL, which declares every
// variant).
#include "cuswap/cuswap.h"
#include "hooks/handlers.h"

#include <string>

extern "C" {

#define CUSWAP_DEFINE_HOOK(name, params, args, handler)                                        \
  __attribute__((visibility("default"))) CUresult CUDAAPI name params {                        \
    ::cuswap::hooks::Entry entry(::cuswap::hooks::HookId::name);                               \
    if (!entry.driver() || !entry.driver()->name) return CUDA_ERROR_NOT_INITIALIZED;           \
    if (!entry.active()) return entry.driver()->name args;                                     \
    return ::cuswap::hooks::handle_##handler(entry, entry.driver()->name, CUSWAP_EXPAND args); \
  }
CUSWAP_DRIVER_HOOKED(CUSWAP_DEFINE_HOOK)
#undef CUSWAP_DEFINE_HOOK

CUSWAP_API void cuswap_iteration_begin(void) {
  cuswap::hooks::Runtime* rt = cuswap::hooks::runtime();
  if (!rt || rt->passthrough.load(std::memory_order_relaxed)) return;
  if (cuswap::trace::Recorder* r = rt->recorder.load(std::memory_order_acquire)) {
    cuswap::hooks::poll_timings(*rt);
    r->record_iteration();
  }
  if (rt->follow) rt->follow->iteration_mark();
}

CUSWAP_API const char* cuswap_stats_json(void) {
  // One string per thread, valid until the thread's next call. A budget
  // always comes with a PlanFollow (runtime/runtime.cpp), which emits them.
  thread_local std::string json;
  cuswap::hooks::Runtime* rt = cuswap::hooks::runtime();
  try {
    json = rt && rt->follow ? rt->follow->stats_json() : "{}";
  } catch (...) {
    return "{}";
  }
  return json.c_str();
}

CUSWAP_API const char* cuswap_version(void) {
  return CUSWAP_VERSION;
}

}  // extern "C"

namespace cuswap::hooks {

void* const kHookAddresses[kHookCount] = {
#define CUSWAP_HOOK_ADDRESS(name, params, args, handler) reinterpret_cast<void*>(&::name),
    CUSWAP_DRIVER_HOOKED(CUSWAP_HOOK_ADDRESS)
#undef CUSWAP_HOOK_ADDRESS
};

}  // namespace cuswap::hooks
