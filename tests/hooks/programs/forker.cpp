// fork() with cuswap loaded: the child must work (its driver calls fail as
// they do on a real driver after fork, and it must not crash or record);
// the parent carries on and records as before.
#include <cuda.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "tests/simcuda/testkit/testkit.h"

int main() {
  CUcontext ctx = nullptr;
  simcuda::testkit::Kernels k;
  CUdeviceptr a = 0, b = 0;
  if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) ||
      simcuda::testkit::load_kernels(k) || cuMemAlloc(&a, 4096))
    return 2;
  pid_t pid = fork();
  if (pid < 0) return 2;
  if (pid == 0) {
    CUdeviceptr c = 0;
    CUresult r = cuMemAlloc(&c, 4096);  // the driver is unusable in a child
    std::printf("child: cuMemAlloc -> %d\n", static_cast<int>(r));
    std::fflush(stdout);
    _exit(r == CUDA_SUCCESS ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  bool child_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  bool parent_ok = cuMemAlloc(&b, 4096) == CUDA_SUCCESS &&
                   simcuda::testkit::launch_copy(k, nullptr, b, a, 4096) == CUDA_SUCCESS &&
                   cuCtxSynchronize() == CUDA_SUCCESS && cuMemFree(a) == CUDA_SUCCESS &&
                   cuMemFree(b) == CUDA_SUCCESS;
  std::printf("child %s, parent %s\n", child_ok ? "ok" : "FAILED", parent_ok ? "ok" : "FAILED");
  return child_ok && parent_ok ? 0 : 1;
}
