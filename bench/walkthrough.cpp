// The demo: one training step on simcuda whose activations need several
// times the device's memory. The forward pass allocates and writes one
// activation per layer and keeps it for the backward pass, which reads them
// in reverse; on the plain driver the step dies with out-of-memory part way
// through the forward pass. The same step shrunk until it fits runs, and its
// virtual time shows what the full step would cost if it could run.
#include <cuda.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "tests/simcuda/simcuda.h"
#include "tests/simcuda/testkit/testkit.h"

namespace {

using simcuda::testkit::Kernels;

constexpr uint64_t kMiB = 1ull << 20;

struct Step {
  int layers = 0;
  int completed_layers = 0;  // forward layers that got their activation
  CUresult failure = CUDA_SUCCESS;
  uint64_t virtual_ns = 0;
  uint64_t mismatched_bytes = 0;
};

bool check(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "walkthrough: %s failed: %s\n", what, simcuda::testkit::error_name(r));
  return false;
}

// Forward: allocate and write activation i. Backward: read activations in
// reverse, check their bytes, free them.
Step run_step(const Kernels& k, int layers, uint64_t activation_bytes, uint64_t layer_ns,
              bool verbose) {
  Step step;
  step.layers = layers;
  simcuda_stats before{};
  simcuda_get_stats(&before);
  CUstream stream = nullptr;
  CUdeviceptr bad_count = 0;
  if (!check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      !check(cuMemAlloc(&bad_count, sizeof(uint64_t)), "cuMemAlloc") ||
      !check(cuMemsetD8(bad_count, 0, sizeof(uint64_t)), "cuMemsetD8")) {
    step.failure = CUDA_ERROR_UNKNOWN;
    return step;
  }
  std::vector<CUdeviceptr> activations;
  for (int i = 0; i < layers; ++i) {
    CUdeviceptr p = 0;
    CUresult r = cuMemAlloc(&p, activation_bytes);
    size_t free_bytes = 0, total = 0;
    cuMemGetInfo(&free_bytes, &total);
    if (verbose)
      std::printf("  layer %3d  cuMemAlloc(%llu MiB) -> %-26s in use %5llu / %llu MiB\n", i + 1,
                  static_cast<unsigned long long>(activation_bytes / kMiB),
                  simcuda::testkit::error_name(r),
                  static_cast<unsigned long long>((total - free_bytes) / kMiB),
                  static_cast<unsigned long long>(total / kMiB));
    if (r != CUDA_SUCCESS) {
      step.failure = r;
      break;
    }
    activations.push_back(p);
    simcuda::testkit::launch_fill(k, stream, p, activation_bytes, static_cast<uint32_t>(i + 1),
                                  layer_ns);
  }
  step.completed_layers = static_cast<int>(activations.size());
  if (step.failure == CUDA_SUCCESS) {
    for (int i = layers - 1; i >= 0; --i)
      simcuda::testkit::launch_check(k, stream, activations[static_cast<size_t>(i)],
                                     activation_bytes, static_cast<uint32_t>(i + 1), bad_count,
                                     2 * layer_ns);
  }
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(cuMemcpyDtoH(&step.mismatched_bytes, bad_count, sizeof(uint64_t)), "cuMemcpyDtoH");
  for (CUdeviceptr p : activations)
    cuMemFree(p);
  cuMemFree(bad_count);
  cuStreamDestroy(stream);
  simcuda_stats after{};
  simcuda_get_stats(&after);
  step.virtual_ns = after.virtual_ns - before.virtual_ns;
  return step;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"simcuda walk-through: a training step that needs more device memory than there is"};
  uint64_t memory_mib = 1024, activation_mib = 64;
  double oversubscription = 4.0;
  uint64_t layer_us = 500;
  app.add_option("--memory-mib", memory_mib, "device memory, MiB")->check(CLI::Range(64, 65536));
  app.add_option("--activation-mib", activation_mib, "bytes kept per layer, MiB")
      ->check(CLI::Range(1, 4096));
  app.add_option("--oversubscribe", oversubscription, "activations / device memory")
      ->check(CLI::Range(1.0, 64.0));
  app.add_option("--layer-us", layer_us, "virtual compute time of one forward layer, us");
  CLI11_PARSE(app, argc, argv);

  char conf[128];
  std::snprintf(conf, sizeof conf, "memory:%lluMiB", static_cast<unsigned long long>(memory_mib));
  if (!check(simcuda_reset(conf), "simcuda_reset") || !check(cuInit(0), "cuInit")) return 1;
  CUcontext ctx = nullptr;
  Kernels k;
  if (!check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain") ||
      !check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent") ||
      !check(simcuda::testkit::load_kernels(k), "loading kernels"))
    return 1;

  const uint64_t activation_bytes = activation_mib * kMiB;
  const int layers = static_cast<int>(static_cast<double>(memory_mib) * oversubscription /
                                      static_cast<double>(activation_mib));
  char name[64] = {};
  cuDeviceGetName(name, sizeof name, 0);
  std::printf("device: %s, %llu MiB (simcuda, the CPU stand-in for the driver)\n", name,
              static_cast<unsigned long long>(memory_mib));
  std::printf(
      "step:   %d layers keep a %llu MiB activation each for the backward pass: "
      "%llu MiB, %.1fx the device\n\n",
      layers, static_cast<unsigned long long>(activation_mib),
      static_cast<unsigned long long>(layers * activation_mib), oversubscription);

  std::printf("forward pass on the plain driver:\n");
  Step full = run_step(k, layers, activation_bytes, layer_us * 1000, /*verbose=*/true);
  if (full.failure == CUDA_SUCCESS) {
    // Under cuswap with a budget the whole step runs: say how it went.
    simcuda_stats full_stats{};
    simcuda_get_stats(&full_stats);
    std::printf("\nresult: the whole step ran: virtual time %.2f ms, %llu bytes wrong, %llu hazards, "
                "peak %llu MiB of %llu\n",
                static_cast<double>(full.virtual_ns) / 1e6,
                static_cast<unsigned long long>(full.mismatched_bytes),
                static_cast<unsigned long long>(full_stats.hazards),
                static_cast<unsigned long long>(full_stats.peak_device_bytes / kMiB),
                static_cast<unsigned long long>(memory_mib));
    return full.mismatched_bytes == 0 && full_stats.hazards == 0 ? 0 : 1;
  } else {
    std::printf("\nresult: %s at layer %d of %d; the step cannot run on this device.\n",
                simcuda::testkit::error_name(full.failure), full.completed_layers + 1, layers);
  }

  // The largest step that fits: every activation plus the small counter.
  int fitting = static_cast<int>((memory_mib - 2) / activation_mib);
  Step small = run_step(k, fitting, activation_bytes, layer_us * 1000, /*verbose=*/false);
  simcuda_stats stats{};
  simcuda_get_stats(&stats);
  std::printf("\nthe largest step that fits: %d layers (%.0f%% of the model)\n", fitting,
              100.0 * fitting / layers);
  std::printf("  %s, virtual time %.2f ms, %llu bytes wrong, %llu hazards, peak %llu MiB\n",
              simcuda::testkit::error_name(small.failure),
              static_cast<double>(small.virtual_ns) / 1e6,
              static_cast<unsigned long long>(small.mismatched_bytes),
              static_cast<unsigned long long>(stats.hazards),
              static_cast<unsigned long long>(stats.peak_device_bytes / kMiB));
  std::printf("  the whole step would take about %.2f ms of compute if its activations fit\n",
              static_cast<double>(small.virtual_ns) / 1e6 * layers / fitting);
  bool ok = small.failure == CUDA_SUCCESS && small.mismatched_bytes == 0 && stats.hazards == 0;
  return ok ? 0 : 1;
}
