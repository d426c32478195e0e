// Handlers: kernel launches. What a launch touches is found by scanning its
// parameters (Note [Scanning launch parameters]); graph launches touch
// buffers cuswap cannot see.
#include "hooks/handlers.h"

namespace cuswap::hooks {

CUresult handle_cuLaunchKernel(Entry& entry, Real_cuLaunchKernel real, CUfunction f,
                               unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                               unsigned int blockDimX, unsigned int blockDimY,
                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                               CUstream hStream, void** kernelParams, void** extra) noexcept {
  CUresult r = real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                    sharedMemBytes, hStream, kernelParams, extra);
  if (r == CUDA_SUCCESS)
    note_launch(*entry.active(), f, entry.stream_value(hStream), kernelParams, extra, 0);
  return r;
}

CUresult handle_cuLaunchKernelEx(Entry& entry, Real_cuLaunchKernelEx real,
                                 const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                                 void** extra) noexcept {
  CUresult r = real(config, f, kernelParams, extra);
  if (r == CUDA_SUCCESS)
    note_launch(*entry.active(), f, entry.stream_value(config->hStream), kernelParams, extra, 0);
  return r;
}

CUresult handle_cuLaunchCooperativeKernel(Entry& entry, Real_cuLaunchCooperativeKernel real,
                                          CUfunction f, unsigned int gridDimX,
                                          unsigned int gridDimY, unsigned int gridDimZ,
                                          unsigned int blockDimX, unsigned int blockDimY,
                                          unsigned int blockDimZ, unsigned int sharedMemBytes,
                                          CUstream hStream, void** kernelParams) noexcept {
  CUresult r = real(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                    sharedMemBytes, hStream, kernelParams);
  if (r == CUDA_SUCCESS)
    note_launch(*entry.active(), f, entry.stream_value(hStream), kernelParams, nullptr,
                trace::kLaunchCooperative);
  return r;
}

CUresult handle_cuGraphLaunch(Entry& entry, Real_cuGraphLaunch real, CUgraphExec hGraphExec,
                              CUstream hStream) noexcept {
  CUresult r = real(hGraphExec, hStream);
  if (r == CUDA_SUCCESS)
    note_launch(*entry.active(), nullptr, entry.stream_value(hStream), nullptr, nullptr,
                trace::kLaunchGraph);
  return r;
}

}  // namespace cuswap::hooks
