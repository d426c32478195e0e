// The process's one runtime: its initialisation (Note [Initialisation],
// runtime.h), the hook entry guard, the map from real entry points to
// hooks, and fork and exit. Everything the runtime does once started is in
// runtime.cpp, which the tests call directly.
#include <dlfcn.h>
#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "common/log.h"
#include "runtime/runtime.h"

namespace cuswap::hooks {
namespace {

// Hook nesting depth and "this thread is initialising": initial-exec TLS,
// readable from the first instruction of a hook without allocating.
__attribute__((tls_model("initial-exec"))) thread_local int tl_depth = 0;
__attribute__((tls_model("initial-exec"))) thread_local bool tl_initialising = false;

std::atomic<Runtime*> g_runtime{nullptr};
pthread_once_t g_once = PTHREAD_ONCE_INIT;

void on_fork_child() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (!rt) return;
  // The child has no writer thread and shares the parent's file: it records
  // nothing and passes every call through.
  rt->forked.store(true);
  rt->passthrough.store(true);
  if (trace::Recorder* r = rt->recorder.load(std::memory_order_acquire)) r->disable_in_child();
}

void on_exit() {
  Runtime* rt = g_runtime.load(std::memory_order_acquire);
  if (rt && !rt->forked.load()) close_out(*rt);
}

// The Driver table already holds each hooked function's real entry point.
void build_real_to_hook(Runtime& rt) {
  std::vector<Runtime::RealToHook> pairs;
#define CUSWAP_REAL_TO_HOOK(name, params, args, handler) \
  if (rt.driver.name) pairs.push_back({reinterpret_cast<void*>(rt.driver.name), HookId::name});
  CUSWAP_DRIVER_HOOKED(CUSWAP_REAL_TO_HOOK)
#undef CUSWAP_REAL_TO_HOOK
  std::sort(pairs.begin(), pairs.end(),
            [](const auto& a, const auto& b) { return a.real < b.real; });
  rt.real_to_hook = std::make_unique<Runtime::RealToHook[]>(pairs.size());
  std::copy(pairs.begin(), pairs.end(), rt.real_to_hook.get());
  rt.real_to_hook_count = pairs.size();
}

void initialise() {
  tl_initialising = true;
  conf::Warner warner;
  conf::Options options = conf::options_from_environment(warner);
  log::set_level(options.log);
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    log::error("cannot load libcuda.so.1 ({}); cuswap is inactive", why ? why : "unknown");
    tl_initialising = false;
    return;
  }
  try {
    auto* rt = new Runtime();  // lives as long as the process: hooks may run during exit
    rt->libcuda = handle;
    rt->driver.load(handle, cuswap_real_dlsym);
    build_real_to_hook(*rt);
    configure(*rt, options);
    pthread_atfork(nullptr, nullptr, on_fork_child);
    std::atexit(on_exit);
    g_runtime.store(rt, std::memory_order_release);
  } catch (...) {
    log::error("out of memory while starting; cuswap is inactive");
  }
  tl_initialising = false;
}

}  // namespace

Runtime* runtime() noexcept {
  if (Runtime* rt = g_runtime.load(std::memory_order_acquire)) return rt;
  if (tl_initialising) return nullptr;
  pthread_once(&g_once, initialise);
  return g_runtime.load(std::memory_order_acquire);
}

void* Runtime::hook_for(void* real) const noexcept {
  const RealToHook* begin = real_to_hook.get();
  const RealToHook* end = begin + real_to_hook_count;
  const RealToHook* it = std::lower_bound(
      begin, end, real, [](const RealToHook& pair, void* key) { return pair.real < key; });
  return it != end && it->real == real ? kHookAddresses[static_cast<size_t>(it->id)] : nullptr;
}

Entry::Entry(HookId id) noexcept : id_(id) {
  ++tl_depth;
  Runtime* rt = runtime();
  if (!rt) return;
  driver_ = &rt->driver;
  rt->calls.count(static_cast<size_t>(id));
  if (tl_depth == 1 && !rt->passthrough.load(std::memory_order_relaxed)) active_ = rt;
}

Entry::~Entry() {
  --tl_depth;
}

uint64_t Entry::stream_value(CUstream stream) const noexcept {
  if (!stream && kHookPerThread[static_cast<size_t>(id_)])
    return reinterpret_cast<uint64_t>(CU_STREAM_PER_THREAD);
  return reinterpret_cast<uint64_t>(stream);
}

}  // namespace cuswap::hooks
