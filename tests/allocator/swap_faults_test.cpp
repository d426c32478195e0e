// Every driver call the allocator makes, failed at several points: the
// application sees success or a proper error, never a crash, never wrong
// bytes, never an unordered access.
#include <cuda.h>

#include <optional>
#include <string>
#include <vector>

#include "tests/allocator/swap_fixture.h"

namespace {

struct Fault {
  const char* name;
  bool host_vmm;
};

class SwapFaults : public SwapTest,
                   public ::testing::WithParamInterface<std::tuple<Fault, int, bool>> {};

TEST_P(SwapFaults, BytesSurviveAFailedCall) {
  const auto& [fault, nth, every_later] = GetParam();
  // A budget well below the device's memory: only cuswap keeps to it.
  const std::string conf = std::string("memory:32MiB,host_vmm:") +
                           (fault.host_vmm ? "true" : "false") + ",fail:" + fault.name + "@" +
                           std::to_string(nth) + (every_later ? "+" : "");
  constexpr uint64_t kBudget = 16 * kMiB;
  start_swap(conf.c_str(), budget(kBudget));
  constexpr uint64_t kBytes = 8 * kMiB;  // four of them, two at a time under the budget
  std::vector<CUdeviceptr> buffers;
  std::vector<std::optional<uint32_t>> expected;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) {
      if (round == 0) {
        CUdeviceptr p = 0;
        CUresult r = allocator->allocate(kBytes, &p);
        expect_consistent("an allocation");
        if (r != CUDA_SUCCESS) {
          EXPECT_EQ(p, 0u);
          continue;
        }
        buffers.push_back(p);
        expected.emplace_back();
        continue;
      }
      if (static_cast<size_t>(i) >= buffers.size()) continue;
      const uint32_t value = 0x20 + round * 4 + i;
      CUresult r = fill_words(nullptr, buffers[i], kBytes, value);
      if (r == CUDA_SUCCESS) expected[i] = value;
      // After a failed fill nothing is known about the bytes it may have
      // written only if the launch ran; a failed prepare launches nothing.
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (!expected[i]) continue;
      std::vector<unsigned char> host(kBytes);
      CUresult r =
          use(nullptr, {buffers[i]}, [&] { return cuMemcpyDtoH(host.data(), buffers[i], kBytes); });
      if (r != CUDA_SUCCESS) continue;
      EXPECT_EQ(simcuda::testkit::pattern_mismatches(host.data(), kBytes, *expected[i]), 0u)
          << "buffer " << i << " round " << round;
    }
  }
  for (CUdeviceptr p : buffers)
    EXPECT_CU(swap_free(p, nullptr, false));
  const simcuda_stats sim = stats();
  EXPECT_EQ(sim.hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(sim.illegal_address_faults, 0u);
  EXPECT_LE(sim.peak_device_bytes, kBudget);
}

const Fault kFaults[] = {
    {"cuMemCreate", true},
    {"cuMemCreate", false},
    {"cuMemMap", true},
    {"cuMemMap", false},
    {"cuMemUnmap", true},
    {"cuMemUnmap", false},
    {"cuMemSetAccess", true},
    {"cuMemSetAccess", false},
    {"cuMemAddressReserve", true},
    {"cuMemAddressReserve", false},
    {"cuMemcpyDtoHAsync", false},
    {"cuMemcpyHtoDAsync", false},
    {"cuMemcpyDtoDAsync", true},
    {"cuEventCreate", true},
    {"cuEventRecord", true},
    {"cuEventRecord", false},
    {"cuEventQuery", true},
    {"cuStreamWaitEvent", true},
    {"cuStreamWaitEvent", false},
    {"cuStreamSynchronize", true},
    {"cuStreamSynchronize", false},
    {"cuStreamCreate", true},
    {"cuMemHostAlloc", false},
    {"cuMemRelease", true},
    {"cuMemGetAllocationGranularity", true},
    {"cuDeviceTotalMem", true},
    {"cuMemAddressFree", true},
    {"cuEventSynchronize", false},
    {"cuEventSynchronize", true},
    {"cuDeviceGetAttribute", true},
    {"cuCtxGetCurrent", true},
    {"cuDeviceGet", true},
    {"cuDeviceGetCount", true},
};

std::string fault_name(const ::testing::TestParamInfo<std::tuple<Fault, int, bool>>& param_info) {
  const auto& [fault, nth, every_later] = param_info.param;
  return std::string(fault.name) + (fault.host_vmm ? "_HostMapped_" : "_Stash_") +
         std::to_string(nth) + (every_later ? "_AndLater" : "");
}

INSTANTIATE_TEST_SUITE_P(Faults, SwapFaults,
                         ::testing::Combine(::testing::ValuesIn(kFaults),
                                            ::testing::Values(1, 2, 4), ::testing::Bool()),
                         fault_name);

}  // namespace
