// A program linked to the toolkit's real CUDA runtime. On simcuda its calls
// fail (simcuda has no private export tables), but its start-up walks
// cuGetProcAddress for every driver entry point, which is what this shows.
#include <cuda_runtime_api.h>

#include <cstdio>

int main() {
  int count = -1;
  cudaError_t r = cudaGetDeviceCount(&count);
  std::printf("cudaGetDeviceCount -> %s\n", cudaGetErrorName(r));
  return 0;
}
