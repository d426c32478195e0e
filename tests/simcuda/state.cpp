// simcuda: configuration, entry checks, initialisation, fork, devices,
// contexts, statistics and reset.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/simcuda/sim.h"

namespace simcuda {
namespace {

namespace conf = cuswap::conf;

std::atomic<bool> g_forked{false};

// ---------------------------------------------------------------------------
// SIMCUDA_CONF

bool set_devices(Config& c, const conf::Pair& p) {
  auto n = conf::parse_uint(p.value);
  if (!n || *n < 1 || *n > static_cast<uint64_t>(conf::kMaxDevices)) return false;
  c.devices = static_cast<int>(*n);
  return true;
}

bool set_memory(Config& c, const conf::Pair& p) {
  auto v = conf::parse_per_device_size(p.value);
  if (!v) return false;
  c.memory_bytes = *v;
  return true;
}

bool set_rate(double& out, const conf::Pair& p) {
  auto v = conf::parse_number(p.value);
  if (!v || *v <= 0) return false;
  out = *v;
  return true;
}

bool set_latency(double& out, const conf::Pair& p) {
  auto v = conf::parse_number(p.value);
  if (!v || *v < 0) return false;
  out = *v;
  return true;
}

bool set_bool(bool& out, const conf::Pair& p) {
  if (!p.has_value) return out = true;
  auto v = conf::parse_bool(p.value);
  if (v) out = *v;
  return v.has_value();
}

// One rule: NAME@N, NAME@N+ or either followed by =CODE (a number or a
// CUDA_ERROR_* name is not accepted: numbers only, they are unambiguous).
bool parse_fail_rule(std::string_view item, FailRule& rule) {
  size_t at = item.find('@');
  if (at == 0 || at == std::string_view::npos) return false;
  std::string_view name = item.substr(0, at);
  std::string_view rest = item.substr(at + 1);
  std::string_view code;
  if (size_t eq = rest.find('='); eq != std::string_view::npos) {
    code = rest.substr(eq + 1);
    rest = rest.substr(0, eq);
  }
  bool and_after = !rest.empty() && rest.back() == '+';
  if (and_after) rest.remove_suffix(1);
  auto nth = conf::parse_uint(rest);
  if (!nth || *nth == 0 || !rule.name.assign(name)) return false;
  for (char ch : name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) return false;
  rule.nth = *nth;
  rule.and_after = and_after;
  rule.code = CUDA_SUCCESS;
  if (!code.empty()) {
    auto value = conf::parse_uint(code);
    if (!value || *value == 0 || *value > 100000) return false;
    rule.code = static_cast<CUresult>(*value);
  }
  return true;
}

bool set_fail(Config& c, const conf::Pair& p) {
  conf::ListReader list(p.value);
  std::string_view item;
  int n = 0;
  FailRule parsed[kMaxFailRules];
  while (list.next(item)) {
    if (n == kMaxFailRules || !parse_fail_rule(item, parsed[n])) return false;
    ++n;
  }
  if (!list.ok() || n == 0) return false;
  for (int i = 0; i < n; ++i) {
    c.fail[i].name = parsed[i].name;
    c.fail[i].nth = parsed[i].nth;
    c.fail[i].and_after = parsed[i].and_after;
    c.fail[i].code = parsed[i].code;
  }
  c.n_fail = n;
  return true;
}

// Note [Host costs]: one key per cost.
#define SIMCUDA_HOST_COST_SPEC(key, default_us, what, source) \
  {#key, "a time in microseconds",                            \
   [](Config& c, const conf::Pair& p) { return set_latency(c.costs.key, p); }},

constexpr conf::OptionSpec<Config> kSpecs[] = {
    {"devices", "a device count from 1 to 16", set_devices},
    {"memory", "a size like 1GiB, or per device like [0:1GiB,1:2GiB]", set_memory},
    {"h2d_gbps", "a bandwidth in GB/s above 0",
     [](Config& c, const conf::Pair& p) { return set_rate(c.h2d_gbps, p); }},
    {"d2h_gbps", "a bandwidth in GB/s above 0",
     [](Config& c, const conf::Pair& p) { return set_rate(c.d2h_gbps, p); }},
    {"d2d_gbps", "a bandwidth in GB/s above 0",
     [](Config& c, const conf::Pair& p) { return set_rate(c.d2d_gbps, p); }},
    {"copy_latency_us", "a latency in microseconds",
     [](Config& c, const conf::Pair& p) { return set_latency(c.copy_latency_us, p); }},
    {"host_costs", "a boolean",
     [](Config& c, const conf::Pair& p) { return set_bool(c.host_costs, p); }},
    {"queue_depth", "a count of operations, 0 for no limit",
     [](Config& c, const conf::Pair& p) {
       auto n = conf::parse_uint(p.value);
       if (n) c.queue_depth = *n;
       return n.has_value();
     }},
    {"host_vmm", "a boolean",
     [](Config& c, const conf::Pair& p) { return set_bool(c.host_vmm, p); }},
    {"fail", "rules like cuMemAlloc_v2@3, cuMemMap@2+ or [cuMemCreate@1=2,...]", set_fail},
    SIMCUDA_HOST_COSTS(SIMCUDA_HOST_COST_SPEC)};
#undef SIMCUDA_HOST_COST_SPEC

// ---------------------------------------------------------------------------

std::string_view base_name(std::string_view name) {
  for (std::string_view suffix : {"_ptsz", "_ptds"})
    if (name.ends_with(suffix)) name.remove_suffix(suffix.size());
  size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<long>(v) + 2, name.end(),
                  [](char ch) { return ch >= '0' && ch <= '9'; }))
    name = name.substr(0, v);
  return name;
}

CUresult natural_error(std::string_view name) {
  std::string_view base = base_name(name);
  if (base.starts_with("cuLaunch")) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  for (std::string_view allocating :
       {"cuMemAlloc", "cuMemHostAlloc", "cuMemCreate", "cuMemAddressReserve", "cuMemMap",
        "cuStreamCreate", "cuEventCreate", "cuModuleLoadData", "cuCtxCreate",
        "cuDevicePrimaryCtxRetain"})
    if (base.starts_with(allocating)) return CUDA_ERROR_OUT_OF_MEMORY;
  return CUDA_ERROR_UNKNOWN;
}

CUresult inject(const char* name) {
  State& s = state();
  Config& c = *s.config;
  if (c.n_fail == 0) return CUDA_SUCCESS;
  std::string_view called(name);
  for (int i = 0; i < c.n_fail; ++i) {
    FailRule& rule = c.fail[i];
    if (rule.name.view() != called && rule.name.view() != base_name(called)) continue;
    uint64_t n = rule.calls.fetch_add(1) + 1;
    if (n == rule.nth || (rule.and_after && n > rule.nth)) {
      std::lock_guard lock(s.mu);
      ++s.injected;
      return rule.code != CUDA_SUCCESS ? rule.code : natural_error(called);
    }
  }
  return CUDA_SUCCESS;
}

void build_devices(State& s) {
  s.devices.clear();
  s.devices.resize(static_cast<size_t>(s.config->devices));
  for (int i = 0; i < s.config->devices; ++i) {
    Device& d = s.devices[static_cast<size_t>(i)];
    d.ordinal = i;
    d.capacity = s.config->memory_bytes.get(i, 1ull << 30);
    auto ctx = std::make_unique<Context>();
    ctx->device = i;
    ctx->primary = true;
    d.primary = ctx.get();
    s.contexts.insert(ctx.get());
    s.all_contexts.push_back(std::move(ctx));
    auto pool = std::make_unique<Pool>();
    pool->device = i;
    d.default_pool = pool.get();
    s.pools.insert(pool.get());
    s.all_pools.push_back(std::move(pool));
  }
  s.host_vc.clear();
}

std::unique_ptr<Config> config_from(const char* text, int& warnings) {
  return parse_config(text ? std::string_view(text) : std::string_view(), warnings);
}

State* make_state() {
  auto* s = new State();  // never destroyed: workers may outlive static destructors
  int warnings = 0;
  s->config = config_from(std::getenv("SIMCUDA_CONF"), warnings);
  build_devices(*s);
  return s;
}

// Per-thread context stack, invalidated by reset.
struct ThreadContexts {
  uint64_t generation = 0;
  std::vector<Context*> stack;
};
thread_local ThreadContexts tl_contexts;

std::vector<Context*>& context_stack() {
  State& s = state();
  if (tl_contexts.generation != s.generation) {
    tl_contexts.stack.clear();
    tl_contexts.generation = s.generation;
  }
  return tl_contexts.stack;
}

bool live(Context* ctx) {
  return ctx && state().contexts.count(ctx) != 0;
}

void push_current(Context* ctx) {
  context_stack().push_back(ctx);
}

void on_fork_prepare() {
  state().mu.lock();
}
void on_fork_parent() {
  state().mu.unlock();
}
void on_fork_child() {
  g_forked = true;
  state().mu.unlock();
}

int attribute_value(const Device& d, CUdevice_attribute attr, bool& known) {
  known = true;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return 49152;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return 32;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return 132;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return 0;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH:
      return 1;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
      return 2;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
      return d.ordinal + 1;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
      return 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
      return state().config->host_vmm ? 1 : 0;
    case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
      return 0;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      return 6144;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return 50 << 20;
    default:
      break;
  }
  known = attr > 0 && attr < CU_DEVICE_ATTRIBUTE_MAX;
  return 0;
}

CUresult create_context(CUcontext* pctx, CUdevice dev) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  auto ctx = std::make_unique<Context>();
  ctx->device = dev;
  Context* raw = ctx.get();
  s.contexts.insert(raw);
  s.all_contexts.push_back(std::move(ctx));
  push_current(raw);
  *pctx = raw;
  return CUDA_SUCCESS;
}

// simcuda has only the default pool, so it is always the current one.
CUresult default_pool(CUmemoryPool* pool_out, CUdevice dev) {
  if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  *pool_out = d->default_pool;
  return CUDA_SUCCESS;
}

void fill_stats(const DeviceStats& d, simcuda_stats& out) {
  out.device_bytes_in_use += d.in_use;
  out.peak_device_bytes += d.peak;
  out.host_pinned_bytes += d.host_pinned;
  out.h2d_bytes += d.h2d_bytes;
  out.d2h_bytes += d.d2h_bytes;
  out.d2d_bytes += d.d2d_bytes;
  out.kernels += d.kernels;
  out.copies += d.copies;
  out.hazards += d.hazards;
  out.illegal_address_faults += d.faults;
  out.stall_ns += d.stall_ns;
}

}  // namespace

std::unique_ptr<Config> parse_config(std::string_view text, int& warnings) {
  auto config = std::make_unique<Config>();
  conf::Warner warner;
  warner.source = "SIMCUDA_CONF";
  conf::apply<Config>(text, kSpecs, *config, warner);
  warnings = warner.count;
  return config;
}

State& state() {
  static State* s = make_state();
  return *s;
}

uint64_t ns_from_us(double us) {
  return static_cast<uint64_t>(us * 1000.0 + 0.5);
}

CUresult enter_uninitialised(const char* name) {
  if (g_forked) return CUDA_ERROR_NOT_INITIALIZED;
  return inject(name);
}

CUresult enter(const char* name) {
  if (g_forked || !state().initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return inject(name);
}

Context* current_context() {
  auto& stack = context_stack();
  if (stack.empty() || !live(stack.back())) return nullptr;
  return stack.back();
}

CUresult usable_context(Context*& out) {
  out = current_context();
  if (!out) return CUDA_ERROR_INVALID_CONTEXT;
  return out->sticky;
}

CUresult device_of(CUdevice dev, Device*& out) {
  State& s = state();
  if (dev < 0 || dev >= static_cast<int>(s.devices.size())) return CUDA_ERROR_INVALID_DEVICE;
  out = &s.devices[static_cast<size_t>(dev)];
  return CUDA_SUCCESS;
}

void charge_device(Device& device, uint64_t bytes) {
  device.stats.in_use += bytes;
  device.stats.peak = std::max(device.stats.peak, device.stats.in_use);
}

void uncharge_device(Device& device, uint64_t bytes) {
  device.stats.in_use -= bytes;
}

void note_host_pinned(Device& device, int64_t delta_bytes) {
  device.stats.host_pinned =
      static_cast<uint64_t>(static_cast<int64_t>(device.stats.host_pinned) + delta_bytes);
}

}  // namespace simcuda

using namespace simcuda;

extern "C" {

// ---------------------------------------------------------------------------
// Initialisation and devices

CUresult CUDAAPI cuInit(unsigned int Flags) {
  if (CUresult r = enter_uninitialised(__func__); r != CUDA_SUCCESS) return r;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!s.initialized) {
    static std::once_flag once;
    std::call_once(once, [] {
      install_fault_handler();
      pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
    });
    s.initialized = true;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int* driverVersion) {
  if (CUresult r = enter_uninitialised(__func__); r != CUDA_SUCCESS) return r;
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = CUDA_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  SIM_ENTER();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(ordinal, d); r != CUDA_SUCCESS) return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  SIM_ENTER();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  *count = static_cast<int>(state().devices.size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  SIM_ENTER();
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  std::snprintf(name, static_cast<size_t>(len), "simcuda device %d", dev);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  SIM_ENTER();
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  bool known = false;
  int value = attribute_value(*d, attrib, known);
  if (!known) return CUDA_ERROR_INVALID_VALUE;
  *pi = value;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  SIM_ENTER();
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  *bytes = d->capacity;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  SIM_ENTER();
  return default_pool(pool_out, dev);
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  SIM_ENTER();
  return default_pool(pool, dev);
}

// ---------------------------------------------------------------------------
// Contexts

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  SIM_ENTER();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  ++d->primary_retains;
  *pctx = d->primary;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  if (d->primary_retains == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --d->primary_retains;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  SIM_ENTER();
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  *flags = 0;
  *active = d->primary_retains > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

// Frees everything the primary context owns and clears a sticky error, as
// the real reset does; streams created in it stay usable.
CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  SIM_ENTER();
  State& s = state();
  std::unique_lock lock(s.mu);
  Device* d = nullptr;
  if (CUresult r = device_of(dev, d); r != CUDA_SUCCESS) return r;
  Context* ctx = d->primary;
  wait_all(lock, ctx);
  destroy_context_memory(ctx);
  ctx->sticky = CUDA_SUCCESS;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  SIM_ENTER();
  (void)flags;
  return create_context(pctx, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext* pctx, CUexecAffinityParam* paramsArray, int numParams,
                                unsigned int flags, CUdevice dev) {
  SIM_ENTER();
  (void)paramsArray;
  (void)numParams;
  (void)flags;
  return create_context(pctx, dev);
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* ctxCreateParams,
                                unsigned int flags, CUdevice dev) {
  SIM_ENTER();
  (void)ctxCreateParams;
  (void)flags;
  return create_context(pctx, dev);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  SIM_ENTER();
  State& s = state();
  std::unique_lock lock(s.mu);
  if (!live(ctx) || ctx->primary) return CUDA_ERROR_INVALID_CONTEXT;
  destroy_context_streams(lock, ctx);
  destroy_context_memory(ctx);
  s.contexts.erase(ctx);
  auto& stack = context_stack();
  if (!stack.empty() && stack.back() == ctx) stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  auto& stack = context_stack();
  if (!ctx) {
    if (!stack.empty()) stack.pop_back();
    return CUDA_SUCCESS;
  }
  if (!live(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (stack.empty())
    stack.push_back(ctx);
  else
    stack.back() = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext* pctx) {
  SIM_ENTER();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  auto& stack = context_stack();
  *pctx = stack.empty() ? nullptr : stack.back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  if (!live(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  push_current(ctx);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext* pctx) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  auto& stack = context_stack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx) *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice* device) {
  SIM_ENTER();
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Context* ctx = current_context();
  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  SIM_ENTER();
  State& s = state();
  std::unique_lock lock(s.mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  charge_call(s.config->costs.sync_us);
  count_host_sync();
  wait_all(lock, ctx);
  return ctx->sticky;
}

// ---------------------------------------------------------------------------
// Extension API

SIMCUDA_API void simcuda_get_stats(struct simcuda_stats* out) {
  if (!out) return;
  State& s = state();
  std::lock_guard lock(s.mu);
  *out = simcuda_stats{};
  for (const Device& d : s.devices)
    fill_stats(d.stats, *out);
  out->hazards += s.hazards_without_device;
  out->virtual_ns = std::max(latest_host_clock(), s.max_end_ns);
  out->host_wait_ns = s.host_wait_ns;
  out->injected_failures = s.injected;
  out->vmm_calls = s.vmm_calls;
  out->host_syncs = s.host_syncs;
}

SIMCUDA_API CUresult simcuda_get_device_stats(int device, struct simcuda_stats* out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Device* d = nullptr;
  if (CUresult r = device_of(device, d); r != CUDA_SUCCESS) return r;
  *out = simcuda_stats{};
  fill_stats(d->stats, *out);
  out->virtual_ns = std::max(latest_host_clock(), s.max_end_ns);
  return CUDA_SUCCESS;
}

SIMCUDA_API const char* simcuda_last_hazard(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.last_hazard.c_str();
}

SIMCUDA_API CUdeviceptr simcuda_last_fault_address(void) {
  State& s = state();
  std::lock_guard lock(s.mu);
  return s.last_fault;
}

SIMCUDA_API CUresult simcuda_reset(const char* conf) {
  if (g_forked) return CUDA_ERROR_NOT_INITIALIZED;
  int warnings = 0;
  auto config = config_from(conf ? conf : std::getenv("SIMCUDA_CONF"), warnings);
  if (warnings > 0) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::unique_lock lock(s.mu);
  for (Stream* stream : std::vector<Stream*>(s.streams.begin(), s.streams.end()))
    stop_stream(lock, stream);
  // Everything is idle now: release memory and forget every object.
  while (!s.regions.empty())
    free_region(s.regions.begin()->second.get());
  destroy_all_handles();
  s.shadow.clear();
  s.contexts.clear();
  s.all_contexts.clear();
  s.streams.clear();
  s.all_streams.clear();
  s.events.clear();
  s.all_events.clear();
  s.modules.clear();
  s.all_modules.clear();
  s.pools.clear();
  s.all_pools.clear();
  s.next_seq = s.next_to_place = 1;
  s.host_clocks.clear();
  s.max_end_ns = s.host_wait_ns = s.vmm_calls = s.host_syncs = 0;
  s.next_stream_index = 0;
  s.hazards_without_device = 0;
  s.last_hazard.clear();
  s.last_fault = 0;
  s.injected = 0;
  s.next_buffer_id = s.next_handle_id = 1;
  ++s.generation;
  s.config = std::move(config);
  build_devices(s);
  s.initialized = false;
  return CUDA_SUCCESS;
}

}  // extern "C"
