// The cost of cuswap's hooks on the launch path, on nulldriver (a driver
// whose functions return at once). Run it three ways, as
// scripts/bench-hooks.sh does:
//   without cuswap                  -> Launch/direct and Launch/through_symbol agree
//   LD_PRELOAD=libcuswap.so          -> Launch/through_symbol - Launch/direct = pass-through cost
//   ... CUSWAP_CONF=record:/dev/null,record_timing:false
//                                    -> the cost of recording a launch that
//                                       touches 4 of 100,000 live buffers
//   ... CUSWAP_CONF=record:/dev/null -> the same, timed on the device: two
//                                       event records and a query per launch
//                                       (Note [Device durations]); the
//                                       difference is the cost of durations
//   ... CUSWAP_CONF=budget:64GiB,online:false
//                                    -> a launch under a budget: the allocator
//                                       owns every buffer and prepares and
//                                       finishes the 4 the launch names
#include <cuda.h>
#include <dlfcn.h>

#include <benchmark/benchmark.h>

#include <vector>

extern "C" CUresult nulldriver_cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                              unsigned, unsigned, unsigned, CUstream, void**,
                                              void**);

namespace {

struct Setup {
  std::vector<CUdeviceptr> buffers;
  CUdeviceptr args[4] = {};
  void* params[4] = {&args[0], &args[1], &args[2], &args[3]};
  CUfunction function = reinterpret_cast<CUfunction>(0x1000);

  Setup() {
    cuInit(0);
    buffers.resize(100'000);
    for (size_t i = 0; i < buffers.size(); ++i)
      cuMemAlloc(&buffers[i], i % 10 == 0 ? (size_t{4} << 20) : 4096);
    for (int i = 0; i < 4; ++i)
      args[i] = buffers[static_cast<size_t>(i) * 24'999] + 64;
  }
};

Setup& setup() {
  static Setup s;
  return s;
}

void BM_Launch_direct(benchmark::State& state) {
  Setup& s = setup();
  for (auto _ : state)
    benchmark::DoNotOptimize(
        nulldriver_cuLaunchKernel(s.function, 1, 1, 1, 1, 1, 1, 0, nullptr, s.params, nullptr));
}

void BM_Launch_through_symbol(benchmark::State& state) {
  Setup& s = setup();
  state.SetLabel(dlsym(RTLD_DEFAULT, "cuswap_version") ? "cuswap loaded" : "no cuswap");
  for (auto _ : state)
    benchmark::DoNotOptimize(
        cuLaunchKernel(s.function, 1, 1, 1, 1, 1, 1, 0, nullptr, s.params, nullptr));
}

BENCHMARK(BM_Launch_direct)->Repetitions(9)->ReportAggregatesOnly(true);
BENCHMARK(BM_Launch_through_symbol)->Repetitions(9)->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
