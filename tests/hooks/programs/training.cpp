// A training loop through the plain driver API, for following plans end to
// end: a weight buffer checked at each step's start, a forward pass that
// allocates and writes one activation per layer (sizes vary by layer), a
// backward pass that reads them in reverse, checks their bytes and frees
// them. Prints each iteration's virtual time, the wrong bytes the kernels
// saw, the hazards, and cuswap's counters when it is loaded.
//
// Options: --layers N, --iterations N, --layer-us N, --no-marks (never
// call cuswap_iteration_begin), --reorder-at K (iteration K allocates its
// first two activations in the other order), --shrink-at K (iteration K
// runs half the layers, as a last partial batch would), --shrink-from K
// (every iteration from K on does).
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/simcuda/simcuda.h"
#include "tests/simcuda/testkit/testkit.h"

namespace {

using namespace simcuda::testkit;

constexpr uint64_t kMiB = uint64_t{1} << 20;

uint64_t activation_bytes(int layer) {
  return (4 + static_cast<uint64_t>(layer % 4)) * kMiB;
}

uint32_t pattern(int layer, int iteration) {
  return static_cast<uint32_t>(layer * 7919 + iteration * 104729 + 1);
}

}  // namespace

int main(int argc, char** argv) {
  int layers = 16, iterations = 6, reorder_at = -1, shrink_at = -1, shrink_from = -1;
  uint64_t layer_ns = 1'000'000;
  bool marks = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() { return i + 1 < argc ? std::atoll(argv[++i]) : 0; };
    if (arg == "--layers")
      layers = static_cast<int>(next());
    else if (arg == "--iterations")
      iterations = static_cast<int>(next());
    else if (arg == "--layer-us")
      layer_ns = static_cast<uint64_t>(next()) * 1000;
    else if (arg == "--no-marks")
      marks = false;
    else if (arg == "--reorder-at")
      reorder_at = static_cast<int>(next());
    else if (arg == "--shrink-at")
      shrink_at = static_cast<int>(next());
    else if (arg == "--shrink-from")
      shrink_from = static_cast<int>(next());
    else {
      std::fprintf(stderr, "training: unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  auto iteration_begin =
      reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cuswap_iteration_begin"));
  auto stats_json = reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "cuswap_stats_json"));

  CUcontext ctx = nullptr;
  Kernels k;
  CUstream stream = nullptr;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || load_kernels(k) != CUDA_SUCCESS ||
      cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    std::puts("setup failed");
    return 1;
  }
  CUdeviceptr wrong = 0, weights = 0;
  constexpr uint64_t kWeightBytes = 8 * kMiB;
  if (cuMemAlloc(&wrong, 8) != CUDA_SUCCESS || cuMemsetD8(wrong, 0, 8) != CUDA_SUCCESS ||
      cuMemAlloc(&weights, kWeightBytes) != CUDA_SUCCESS ||
      launch_fill_words(k, stream, weights, kWeightBytes, 77, layer_ns) != CUDA_SUCCESS) {
    std::puts("weights failed");
    return 1;
  }
  int failures = 0;
  for (int it = 0; it < iterations; ++it) {
    if (marks && iteration_begin) iteration_begin();
    simcuda_stats before{};
    simcuda_get_stats(&before);
    const bool shrunk = it == shrink_at || (shrink_from >= 0 && it >= shrink_from);
    const int n = shrunk ? layers / 2 : layers;
    std::vector<CUdeviceptr> act(static_cast<size_t>(n), 0);
    failures +=
        launch_check_words(k, stream, weights, kWeightBytes, 77, wrong, layer_ns) != CUDA_SUCCESS;
    for (int i = 0; i < n; ++i) {
      // Reordered: the second activation is allocated before the first.
      if (it == reorder_at && i == 0 && n > 1) {
        failures += cuMemAlloc(&act[1], activation_bytes(1)) != CUDA_SUCCESS;
        failures += cuMemAlloc(&act[0], activation_bytes(0)) != CUDA_SUCCESS;
      } else if (!(it == reorder_at && i == 1)) {
        failures += cuMemAlloc(&act[static_cast<size_t>(i)], activation_bytes(i)) != CUDA_SUCCESS;
      }
      failures += launch_fill_words(k, stream, act[static_cast<size_t>(i)], activation_bytes(i),
                                    pattern(i, it), layer_ns) != CUDA_SUCCESS;
    }
    for (int i = n - 1; i >= 0; --i) {
      failures += launch_check_words(k, stream, act[static_cast<size_t>(i)], activation_bytes(i),
                                     pattern(i, it), wrong, 2 * layer_ns) != CUDA_SUCCESS;
      failures += cuMemFree(act[static_cast<size_t>(i)]) != CUDA_SUCCESS;
    }
    failures += cuStreamSynchronize(stream) != CUDA_SUCCESS;
    simcuda_stats after{};
    simcuda_get_stats(&after);
    std::printf("iteration %d ns %llu\n", it,
                static_cast<unsigned long long>(after.virtual_ns - before.virtual_ns));
  }
  uint64_t wrong_bytes = 0;
  failures += cuMemcpyDtoH(&wrong_bytes, wrong, sizeof wrong_bytes) != CUDA_SUCCESS;
  simcuda_stats stats{};
  simcuda_get_stats(&stats);
  std::printf("wrong bytes %llu\n", static_cast<unsigned long long>(wrong_bytes));
  std::printf("failures %d\n", failures);
  std::printf("hazards %llu\n", static_cast<unsigned long long>(stats.hazards));
  std::printf("peak device MiB %llu\n",
              static_cast<unsigned long long>(stats.peak_device_bytes / kMiB));
  if (stats_json) std::printf("cuswap %s\n", stats_json());
  return failures == 0 && wrong_bytes == 0 ? 0 : 1;
}
