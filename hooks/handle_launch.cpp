// Handlers: kernel launches. What a launch touches is found by scanning its
// parameters (Note [Scanning launch parameters]) before the launch, so the
// allocator can bring evicted buffers back first; graph launches touch
// buffers cuswap cannot see.
#include "hooks/handlers.h"

namespace cuswap::hooks {
namespace {

template <typename Call>
CUresult launch(Entry& entry, CUfunction f, CUstream stream, void** kernel_params, void** extra,
                uint8_t flags, Call&& call) noexcept {
  Runtime& rt = *entry.active();
  const CUstream handle = entry.stream_handle(stream);
  Use use;
  use.flags = flags;
  if (CUresult r = begin_launch(rt, f, handle, kernel_params, extra, use); r != CUDA_SUCCESS)
    return r;
  CUresult r = call();
  end_launch(rt, handle, entry.stream_value(stream), use, r);
  return r;
}

}  // namespace

CUresult handle_cuLaunchKernel(Entry& entry, Real_cuLaunchKernel real, CUfunction f,
                               unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY,
                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                               CUstream hStream, void** kernelParams, void** extra) noexcept {
  return launch(entry, f, hStream, kernelParams, extra, 0, [&] {
    return real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                hStream, kernelParams, extra);
  });
}

CUresult handle_cuLaunchKernelEx(Entry& entry, Real_cuLaunchKernelEx real,
                                 const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                 void** extra) noexcept {
  if (!config) return real(config, f, kernelParams, extra);
  return launch(entry, f, config->hStream, kernelParams, extra, 0,
                [&] { return real(config, f, kernelParams, extra); });
}

CUresult handle_cuLaunchCooperativeKernel(Entry& entry, Real_cuLaunchCooperativeKernel real,
                                          CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void** kernelParams) noexcept {
  return launch(entry, f, hStream, kernelParams, nullptr, trace::kLaunchCooperative, [&] {
    return real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                hStream, kernelParams);
  });
}

CUresult handle_cuGraphLaunch(Entry& entry, Real_cuGraphLaunch real, CUgraphExec hGraphExec,
                              CUstream hStream) noexcept {
  return launch(entry, nullptr, hStream, nullptr, nullptr, trace::kLaunchGraph,
                [&] { return real(hGraphExec, hStream); });
}

}  // namespace cuswap::hooks
