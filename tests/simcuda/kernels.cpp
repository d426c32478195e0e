// simcuda: kernels as host functions, modules, launches, and the fault guard.
//
// Note [Guarded op bodies]: a kernel or copy runs on its stream's worker
// between sigsetjmp(jump, 1) and a SIGSEGV/SIGBUS handler that jumps back
// when the fault happened inside a guarded body on that thread. The launch
// then ends with CUDA_ERROR_ILLEGAL_ADDRESS, sticky for the context, as on a
// GPU. savemask=1 restores the signal mask, or the next fault on the worker
// would find SIGSEGV blocked and kill the process. Faults anywhere else go
// to the handler that was installed before, so real crashes still crash.
// Kernel functions must not hold locks or own resources across accesses.
#include <signal.h>

#include <cstring>

#include "tests/simcuda/sim.h"

namespace simcuda {

__attribute__((tls_model("initial-exec"))) thread_local GuardedRun* tl_guard = nullptr;

namespace {

struct sigaction g_previous_segv, g_previous_bus;

void on_fault(int sig, siginfo_t* info, void* context) {
  if (GuardedRun* guard = tl_guard) {
    guard->fault_address = reinterpret_cast<uintptr_t>(info->si_addr);
    tl_guard = nullptr;
    siglongjmp(guard->jump, 1);
  }
  const struct sigaction& previous = sig == SIGSEGV ? g_previous_segv : g_previous_bus;
  if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
    previous.sa_sigaction(sig, info, context);
    return;
  }
  if (!(previous.sa_flags & SA_SIGINFO) && previous.sa_handler != SIG_DFL &&
      previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  // Default action: returning re-executes the faulting instruction, which
  // now kills the process with the right signal.
  signal(sig, SIG_DFL);
}

// What a kernel's simcuda_launch::internal points at.
struct LaunchState {
  Op* op = nullptr;
  bool faulted = false;
  uintptr_t fault_address = 0;
};

size_t natural_alignment(size_t size) {
  size_t align = 1;
  while (align < 8 && size % (align * 2) == 0)
    align *= 2;
  return align;
}

CUresult resolve_function(CUfunction f, const Kernel*& out) {
  if (!f || !state().functions.count(f)) return CUDA_ERROR_INVALID_HANDLE;
  out = f->kernel;
  return CUDA_SUCCESS;
}

// Copies the arguments into the op, from kernelParams or an `extra` buffer.
CUresult copy_arguments(const Kernel& kernel, void** params, void** extra, Op& op) {
  if (params && extra) return CUDA_ERROR_INVALID_VALUE;
  op.args.assign(kernel.args_bytes, 0);
  if (params) {
    for (size_t i = 0; i < kernel.sizes.size(); ++i) {
      if (!params[i]) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(op.args.data() + kernel.offsets[i], params[i], kernel.sizes[i]);
    }
    return CUDA_SUCCESS;
  }
  if (!extra) return kernel.sizes.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  const void* buffer = nullptr;
  const size_t* buffer_size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buffer = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      buffer_size = static_cast<const size_t*>(extra[i + 1]);
    else
      return CUDA_ERROR_INVALID_VALUE;
  }
  if (!buffer || !buffer_size || *buffer_size < kernel.args_bytes) return CUDA_ERROR_INVALID_VALUE;
  if (kernel.args_bytes) std::memcpy(op.args.data(), buffer, kernel.args_bytes);
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                unsigned shared_mem_bytes, CUstream hStream, void** params, void** extra,
                DefaultStream ds) {
  for (int i = 0; i < 3; ++i)
    if (grid[i] == 0 || block[i] == 0) return CUDA_ERROR_INVALID_VALUE;
  if (static_cast<uint64_t>(block[0]) * block[1] * block[2] > 1024) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(state().mu);
  const Kernel* kernel = nullptr;
  if (CUresult r = resolve_function(f, kernel); r != CUDA_SUCCESS) return r;
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  auto op = std::make_shared<Op>();
  op->kind = OpKind::kernel;
  op->kernel = kernel;
  std::copy(grid, grid + 3, op->grid);
  std::copy(block, block + 3, op->block);
  op->shared_mem_bytes = shared_mem_bytes;
  if (CUresult r = copy_arguments(*kernel, params, extra, *op); r != CUDA_SUCCESS) return r;
  enqueue(lock, stream, std::move(op));
  return CUDA_SUCCESS;
}

CUresult launch_ex(const CUlaunchConfig* config, CUfunction f, void** params, void** extra,
                   DefaultStream ds) {
  if (!config || (config->numAttrs && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  return launch(f, grid, block, config->sharedMemBytes, config->hStream, params, extra, ds);
}

uint64_t run_kernel(Op& op, bool& faulted, uintptr_t& fault_address) {
  const Kernel& kernel = *op.kernel;
  std::vector<void*> params(kernel.offsets.size());
  for (size_t i = 0; i < params.size(); ++i)
    params[i] = op.args.data() + kernel.offsets[i];
  LaunchState launch_state;
  launch_state.op = &op;
  simcuda_launch launch{};
  std::copy(op.grid, op.grid + 3, launch.grid);
  std::copy(op.block, op.block + 3, launch.block);
  launch.shared_mem_bytes = op.shared_mem_bytes;
  launch.stream = op.stream;
  launch.device = op.ctx->device;
  launch.internal = &launch_state;
  GuardedRun guard;
  volatile uint64_t duration_ns = 0;
  tl_guard = &guard;
  if (sigsetjmp(guard.jump, 1) == 0) {
    duration_ns = kernel.fn(params.data(), &launch);
    tl_guard = nullptr;
  } else {
    faulted = true;
    fault_address = guard.fault_address;
  }
  if (launch_state.faulted) {
    faulted = true;
    fault_address = launch_state.fault_address;
  }
  return faulted ? 0 : duration_ns;
}

}  // namespace

KernelRegistry& kernel_registry() {
  static KernelRegistry* registry = new KernelRegistry();  // outlives static destructors
  return *registry;
}

void install_fault_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_fault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, &g_previous_segv);
  sigaction(SIGBUS, &action, &g_previous_bus);
}

uint64_t run_op_body(Op& op, bool& faulted, uintptr_t& fault_address) {
  if (op.kind == OpKind::kernel) return run_kernel(op, faulted, fault_address);
  GuardedRun guard;
  tl_guard = &guard;
  if (sigsetjmp(guard.jump, 1) == 0) {
    if (op.kind == OpKind::copy)
      execute_copy(op);
    else
      execute_set(op);
    tl_guard = nullptr;
  } else {
    faulted = true;
    fault_address = guard.fault_address;
  }
  return 0;
}

}  // namespace simcuda

using namespace simcuda;

extern "C" {

SIMCUDA_API CUresult simcuda_register_kernel(const char* name, simcuda_kernel_fn fn,
                                             const size_t* param_sizes, unsigned n_params) {
  if (!name || !*name || !fn || (n_params && !param_sizes)) return CUDA_ERROR_INVALID_VALUE;
  auto kernel = std::make_unique<Kernel>();
  kernel->name = name;
  kernel->fn = fn;
  size_t offset = 0;
  for (unsigned i = 0; i < n_params; ++i) {
    size_t size = param_sizes[i];
    if (size == 0 || size > 4096) return CUDA_ERROR_INVALID_VALUE;
    size_t align = natural_alignment(size);
    offset = (offset + align - 1) / align * align;
    kernel->offsets.push_back(offset);
    kernel->sizes.push_back(size);
    offset += size;
  }
  kernel->args_bytes = offset;
  KernelRegistry& registry = kernel_registry();
  std::lock_guard lock(registry.mu);
  auto it = registry.kernels.find(kernel->name);
  if (it == registry.kernels.end())
    registry.kernels.emplace(kernel->name, std::move(kernel));
  else
    *it->second = std::move(*kernel);  // functions already found keep pointing at it
  return CUDA_SUCCESS;
}

SIMCUDA_API int simcuda_access(struct simcuda_launch* launch, CUdeviceptr ptr, size_t bytes,
                               int mode) {
  if (!launch || !launch->internal) return 1;
  auto* ls = static_cast<LaunchState*>(launch->internal);
  if (mode == 0 || (mode & ~(SIMCUDA_READ | SIMCUDA_WRITE))) return 1;
  if (bytes == 0) return 0;
  std::lock_guard lock(state().mu);
  if (ptr + bytes < ptr || !accessible(ptr, bytes, mode)) {
    ls->faulted = true;
    ls->fault_address = ptr;
    return 1;
  }
  record_access(*ls->op, Range{ptr, ptr + bytes, mode});
  return 0;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  SIM_ENTER();
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  auto owned = std::make_unique<Module>();
  owned->ctx = ctx;
  *module = owned.get();
  s.modules.insert(owned.get());
  s.all_modules.push_back(std::move(owned));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  SIM_ENTER();
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!hmod || !s.modules.count(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& [name, function] : hmod->functions)
    s.functions.erase(function.get());
  s.modules.erase(hmod);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  SIM_ENTER();
  if (!hfunc || !name) return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  if (!hmod || !s.modules.count(hmod)) return CUDA_ERROR_INVALID_HANDLE;
  auto found = hmod->functions.find(name);
  if (found == hmod->functions.end()) {
    KernelRegistry& registry = kernel_registry();
    std::lock_guard registry_lock(registry.mu);
    auto it = registry.kernels.find(name);
    if (it == registry.kernels.end()) return CUDA_ERROR_NOT_FOUND;
    auto function = std::make_unique<CUfunc_st>();
    function->kernel = it->second.get();
    s.functions.insert(function.get());
    found = hmod->functions.emplace(name, std::move(function)).first;
  }
  *hfunc = found->second.get();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                                    size_t* paramSize) {
  SIM_ENTER();
  if (!paramOffset || !paramSize) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  const Kernel* kernel = nullptr;
  if (CUresult r = resolve_function(func, kernel); r != CUDA_SUCCESS) return r;
  if (paramIndex >= kernel->sizes.size()) return CUDA_ERROR_INVALID_VALUE;
  *paramOffset = kernel->offsets[paramIndex];
  *paramSize = kernel->sizes[paramIndex];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction hfunc) {
  SIM_ENTER();
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  const Kernel* kernel = nullptr;
  if (CUresult r = resolve_function(hfunc, kernel); r != CUDA_SUCCESS) return r;
  *name = kernel->name.c_str();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void** kernelParams,
                                void** extra) {
  SIM_ENTER();
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra,
                DefaultStream::legacy);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void** kernelParams, void** extra) {
  SIM_ENTER();
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra,
                DefaultStream::per_thread);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                  void** extra) {
  SIM_ENTER();
  return launch_ex(config, f, kernelParams, extra, DefaultStream::legacy);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f,
                                       void** kernelParams, void** extra) {
  SIM_ENTER();
  return launch_ex(config, f, kernelParams, extra, DefaultStream::per_thread);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           CUstream hStream, void** kernelParams) {
  SIM_ENTER();
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, nullptr,
                DefaultStream::legacy);
}

CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                unsigned int gridDimY, unsigned int gridDimZ,
                                                unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                CUstream hStream, void** kernelParams) {
  SIM_ENTER();
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, nullptr,
                DefaultStream::per_thread);
}

}  // extern "C"
