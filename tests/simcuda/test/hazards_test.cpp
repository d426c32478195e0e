// The hazard detector: unordered conflicting accesses across streams, and
// memory released while work the host has not seen complete still uses it.
#include <chrono>
#include <string>
#include <thread>

#include "tests/simcuda/test/fixture.h"

namespace {

using Hazards = SimTest;
using simcuda::testkit::launch_copy;
using simcuda::testkit::launch_fill;
using simcuda::testkit::launch_spin;

TEST_F(Hazards, UnorderedWriteAndReadOnTwoStreams) {
  start();
  CUdeviceptr a = alloc(4096), b = alloc(4096);
  CUstream s1 = make_stream(), s2 = make_stream();
  ASSERT_CU(launch_fill(k, s1, a, 4096, 1));
  ASSERT_CU(launch_copy(k, s2, b, a, 4096));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 1u);
  std::string text = simcuda_last_hazard();
  EXPECT_NE(text.find("kernel fill"), std::string::npos) << text;
  EXPECT_NE(text.find("kernel copy"), std::string::npos) << text;
}

TEST_F(Hazards, TheSamePairOrderedByAnEventIsNot) {
  start();
  CUdeviceptr a = alloc(4096), b = alloc(4096);
  CUstream s1 = make_stream(), s2 = make_stream();
  CUevent written = make_event();
  ASSERT_CU(launch_fill(k, s1, a, 4096, 1));
  ASSERT_CU(cuEventRecord(written, s1));
  ASSERT_CU(cuStreamWaitEvent(s2, written, 0));
  ASSERT_CU(launch_copy(k, s2, b, a, 4096));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_STREQ(simcuda_last_hazard(), "");
}

TEST_F(Hazards, OrderedThroughTheHost) {
  start();
  CUdeviceptr a = alloc(4096), b = alloc(4096);
  CUstream s1 = make_stream(), s2 = make_stream();
  ASSERT_CU(launch_fill(k, s1, a, 4096, 1));
  ASSERT_CU(cuStreamSynchronize(s1));
  ASSERT_CU(launch_copy(k, s2, b, a, 4096));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

TEST_F(Hazards, ReadsDoNotConflictNorDoDisjointWrites) {
  start();
  CUdeviceptr a = alloc(4096), b = alloc(4096), c = alloc(4096), d = alloc(8192);
  CUstream s1 = make_stream(), s2 = make_stream();
  ASSERT_CU(launch_copy(k, s1, b, a, 4096));
  ASSERT_CU(launch_copy(k, s2, c, a, 4096));
  ASSERT_CU(launch_fill(k, s1, d, 4096, 1));
  ASSERT_CU(launch_fill(k, s2, d + 4096, 4096, 1));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

TEST_F(Hazards, CopiesAgainstKernels) {
  start();
  CUdeviceptr a = alloc(4096);
  void* host = nullptr;
  ASSERT_CU(cuMemAllocHost(&host, 4096));
  CUstream s1 = make_stream(), s2 = make_stream();
  ASSERT_CU(launch_fill(k, s1, a, 4096, 1));
  ASSERT_CU(cuMemcpyDtoHAsync(host, a, 4096, s2));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 1u);
  // Pinned host memory is tracked too: a copy into it racing a copy out.
  CUdeviceptr b = alloc(4096), c = alloc(4096);
  ASSERT_CU(cuMemcpyHtoDAsync(b, host, 4096, s1));
  ASSERT_CU(cuMemcpyDtoHAsync(host, c, 4096, s2));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 2u);
}

TEST_F(Hazards, LegacyStreamOrdersBlockingStreamsOnly) {
  start();
  CUdeviceptr a = alloc(4096), b = alloc(4096);
  CUstream blocking = make_stream(0), non_blocking = make_stream(CU_STREAM_NON_BLOCKING);
  ASSERT_CU(launch_fill(k, blocking, a, 4096, 1));
  ASSERT_CU(launch_copy(k, nullptr, b, a, 4096));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  ASSERT_CU(launch_fill(k, non_blocking, a, 4096, 2));
  ASSERT_CU(launch_copy(k, nullptr, b, a, 4096));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 1u);
}

class HazardsVmm : public SimTest {
 protected:
  // Waits in real time until `n` kernels have run, without the host
  // observing anything (reading statistics orders nothing).
  void wait_for_kernels(uint64_t n) {
    while (stats().kernels < n)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CUdeviceptr mapped(size_t bytes) {
    CUdeviceptr va = 0;
    EXPECT_CU(cuMemAddressReserve(&va, bytes, 0, 0, 0));
    CUmemAllocationProp p{};
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h = 0;
    EXPECT_CU(cuMemCreate(&h, bytes, &p, 0));
    EXPECT_CU(cuMemMap(va, bytes, 0, h, 0));
    EXPECT_CU(cuMemRelease(h));
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    EXPECT_CU(cuMemSetAccess(va, bytes, &access, 1));
    return va;
  }
};

TEST_F(HazardsVmm, UnmapWhileACopyIsStillQueued) {
  start();
  CUdeviceptr va = mapped(2 * kMiB);
  void* host = nullptr;
  ASSERT_CU(cuMemAllocHost(&host, 2 * kMiB));
  CUstream s = make_stream();
  ASSERT_CU(launch_spin(k, s, 200'000));
  ASSERT_CU(cuMemcpyDtoHAsync(host, va, 2 * kMiB, s));
  ASSERT_CU(cuMemUnmap(va, 2 * kMiB));
  EXPECT_EQ(stats().hazards, 1u);
  EXPECT_NE(std::string(simcuda_last_hazard()).find("still queued"), std::string::npos)
      << simcuda_last_hazard();
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS)
      << "the copy then ran into the unmapped range";
}

TEST_F(HazardsVmm, UnmapAfterCompletionTheHostDidNotWaitFor) {
  start();
  CUdeviceptr va = mapped(2 * kMiB);
  CUstream s = make_stream();
  CUevent done = make_event();
  ASSERT_CU(launch_fill(k, s, va, 4096, 1));
  ASSERT_CU(cuEventRecord(done, s));
  while (cuEventQuery(done) == CUDA_ERROR_NOT_READY)
    std::this_thread::yield();
  // cuEventQuery reporting success counts as the host seeing it: no hazard.
  ASSERT_CU(cuMemUnmap(va, 2 * kMiB));
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();

  CUdeviceptr vb = mapped(2 * kMiB);
  ASSERT_CU(launch_fill(k, s, vb, 4096, 1));
  wait_for_kernels(2);  // done, but never observed
  ASSERT_CU(cuMemUnmap(vb, 2 * kMiB));
  EXPECT_EQ(stats().hazards, 1u);
  EXPECT_NE(std::string(simcuda_last_hazard()).find("cuMemUnmap"), std::string::npos);
}

TEST_F(HazardsVmm, StreamOrderedFreeRacingAnotherStream) {
  start();
  CUdeviceptr a = 0;
  CUstream s1 = make_stream(), s2 = make_stream();
  ASSERT_CU(cuMemAllocAsync(&a, 4096, s1));
  ASSERT_CU(launch_spin(k, s2, 50'000));
  ASSERT_CU(launch_fill(k, s2, a, 4096, 1));
  ASSERT_CU(cuStreamSynchronize(s2));
  ASSERT_CU(cuMemFreeAsync(a, s1));  // ordered by the host's synchronisation: fine
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();

  ASSERT_CU(cuMemAllocAsync(&a, 4096, s1));
  ASSERT_CU(launch_fill(k, s2, a, 4096, 2));
  wait_for_kernels(3);  // the fill has run, but nothing orders it before the free
  ASSERT_CU(cuMemFreeAsync(a, s1));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 1u);
}

}  // namespace
