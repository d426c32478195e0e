// What driver calls cost the thread that makes them (Note [Host costs],
// Note [Host time is per thread]), and the counters of VMM calls and of
// calls that made the host wait for the device.
#include <thread>

#include "tests/simcuda/test/fixture.h"

namespace {

class HostCosts : public SimTest {
 protected:
  // Host time the calling thread spends in `call`, in ns.
  template <typename Call>
  uint64_t cost_ns(Call&& call) {
    const uint64_t before = simcuda_host_clock_ns();
    call();
    return simcuda_host_clock_ns() - before;
  }
  CUmemAllocationProp device_prop() {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    return prop;
  }
  CUmemAccessDesc read_write() {
    CUmemAccessDesc access{};
    access.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
  }
};

// Distinct costs, so that a call charged another call's cost shows.
constexpr const char* kDistinct =
    "mem_create_us:101,mem_map_us:102,mem_set_access_us:103,mem_set_access_page_us:7,"
    "mem_unmap_us:104,mem_unmap_page_us:8,mem_release_us:105,mem_release_page_us:9,"
    "address_reserve_us:106,address_free_us:107";

TEST_F(HostCosts, EveryVmmCallChargesItsCostAndIsCounted) {
  start(kDistinct);
  const uint64_t calls = stats().vmm_calls;
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  const CUmemAllocationProp prop = device_prop();
  const CUmemAccessDesc access = read_write();
  const size_t bytes = 8 * kMiB;  // four pages
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemAddressReserve(&base, bytes, 0, 0, 0)); }), 106'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemCreate(&handle, bytes, &prop, 0)); }), 101'000u)
      << "creating device memory costs the same at any size";
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemMap(base, bytes, 0, handle, 0)); }), 102'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemSetAccess(base, bytes, &access, 1)); }),
            103'000u + 4 * 7'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemUnmap(base, bytes)); }), 104'000u + 4 * 8'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemRelease(handle)); }), 105'000u + 4 * 9'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemAddressFree(base, bytes)); }), 107'000u);
  EXPECT_EQ(stats().vmm_calls - calls, 7u);
  EXPECT_EQ(cost_ns([&] { EXPECT_NE(cuMemUnmap(base, bytes), CUDA_SUCCESS); }),
            104'000u + 4 * 8'000u)
      << "a refused call takes its time too";
  EXPECT_EQ(stats().vmm_calls - calls, 8u);
}

TEST_F(HostCosts, ACallCostsOnlyTheThreadThatMakesIt) {
  start(kDistinct);
  const uint64_t main_before = simcuda_host_clock_ns();
  uint64_t other_cost = 0;
  std::thread other([&] {
    ASSERT_CU(cuCtxSetCurrent(ctx));
    const uint64_t before = simcuda_host_clock_ns();
    EXPECT_EQ(before, main_before) << "a thread starts where the latest one is";
    CUdeviceptr base = 0;
    ASSERT_CU(cuMemAddressReserve(&base, 2 * kMiB, 0, 0, 0));
    ASSERT_CU(cuMemAddressFree(base, 2 * kMiB));
    other_cost = simcuda_host_clock_ns() - before;
  });
  other.join();
  EXPECT_EQ(other_cost, 213'000u);
  EXPECT_EQ(simcuda_host_clock_ns(), main_before) << "nothing of it on this thread's clock";
  EXPECT_EQ(stats().virtual_ns, main_before + 213'000u) << "the latest clock is the other's";
  simcuda_host_clock_join(main_before + 5'000);
  EXPECT_EQ(simcuda_host_clock_ns(), main_before + 5'000) << "a hand-off moves the clock on";
  simcuda_host_clock_join(main_before);
  EXPECT_EQ(simcuda_host_clock_ns(), main_before + 5'000) << "never back";
}

TEST_F(HostCosts, EnqueueingCallsChargeTheirOwnCosts) {
  start(
      "launch_latency_us:3,event_record_us:5,stream_wait_us:7,free_async_us:11,"
      "alloc_async_us:13,query_cost_us:17");
  CUstream stream = make_stream();
  CUevent event = make_event(CU_EVENT_DISABLE_TIMING);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(simcuda::testkit::launch_spin(k, stream, 0, 1)); }), 3'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuEventRecord(event, stream)); }), 5'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuStreamWaitEvent(stream, event, 0)); }), 7'000u);
  CUdeviceptr p = 0;
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemAllocAsync(&p, kMiB, stream)); }), 13'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemFreeAsync(p, stream)); }), 11'000u);
  ASSERT_CU(cuStreamSynchronize(stream));
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuEventQuery(event)); }), 17'000u)
      << "a query that answers done is a call too";
}

TEST_F(HostCosts, TheDriversOwnAllocationsChargePerPage) {
  start("mem_alloc_us:10,mem_alloc_page_us:30,mem_free_us:20,mem_free_page_us:40,sync_us:0");
  CUdeviceptr p = 0;
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemAlloc(&p, 6 * kMiB)); }), 10'000u + 3 * 30'000u);
  const uint64_t syncs = stats().host_syncs;
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemFree(p)); }), 20'000u + 3 * 40'000u);
  EXPECT_EQ(stats().host_syncs - syncs, 1u) << "a synchronous free waits for the device";
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemAlloc(&p, kMiB / 2)); }), 10'000u + 30'000u / 4)
      << "a fraction of a page costs its fraction";
}

TEST_F(HostCosts, ASynchronousFreeWaitsForTheDevice) {
  start("launch_latency_us:0,mem_free_us:0,mem_free_page_us:0,sync_us:0");
  CUstream stream = make_stream();
  CUdeviceptr p = alloc(kMiB);
  const uint64_t before = simcuda_host_clock_ns();
  ASSERT_CU(simcuda::testkit::launch_spin(k, stream, 0, 1'000'000));  // 1 ms of device work
  ASSERT_CU(cuMemFree(p));
  EXPECT_EQ(simcuda_host_clock_ns() - before, 1'000'000u)
      << "cuMemFree returned once the kernel on another stream was done";
}

TEST_F(HostCosts, PinningHostMemoryChargesPerByte) {
  start(
      "host_alloc_us:10,host_alloc_page_us:500,host_free_us:5,host_free_page_us:400,"
      "mem_create_us:1,mem_release_us:2,mem_release_page_us:0,sync_us:0");
  void* host = nullptr;
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemHostAlloc(&host, 4 * kMiB, 0)); }),
            10'000u + 2 * 500'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemFreeHost(host)); }), 5'000u + 2 * 400'000u);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_HOST, 0};
  CUmemGenericAllocationHandle handle = 0;
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemCreate(&handle, 2 * kMiB, &prop, 0)); }),
            1'000u + 10'000u + 500'000u)
      << "host-located memory is pinned as it is made";
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuMemRelease(handle)); }), 2'000u + 5'000u + 400'000u);
}

TEST_F(HostCosts, HostSyncsCountTheCallsThatWaitForTheDevice) {
  start();
  CUstream stream = make_stream();
  CUevent event = make_event(CU_EVENT_DISABLE_TIMING);
  CUdeviceptr p = alloc(kMiB);
  auto syncs = [&] { return stats().host_syncs; };
  uint64_t n = syncs();
  ASSERT_CU(simcuda::testkit::launch_spin(k, stream, 0, 1'000'000));
  ASSERT_CU(cuEventRecord(event, stream));
  ASSERT_CU(cuEventSynchronize(event));
  EXPECT_EQ(syncs() - n, 1u) << "an event synchronize on unfinished work";
  n = syncs();
  ASSERT_CU(cuEventSynchronize(event));
  EXPECT_EQ(syncs() - n, 0u) << "on finished work it waits for nothing";
  ASSERT_CU(cuStreamSynchronize(stream));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(syncs() - n, 2u) << "stream and context synchronizes";
  n = syncs();
  char host[64] = {};
  ASSERT_CU(cuMemcpyDtoH(host, p, sizeof host));
  ASSERT_CU(cuMemsetD8(p, 1, 64));
  EXPECT_EQ(syncs() - n, 2u) << "a synchronous copy and a synchronous set";
  n = syncs();
  ASSERT_CU(cuMemcpyDtoHAsync(host, p, sizeof host, stream));
  ASSERT_CU(cuEventQuery(event));
  EXPECT_EQ(syncs() - n, 0u) << "asynchronous calls and queries never wait";
  ASSERT_CU(cuStreamSynchronize(stream));
}

TEST_F(HostCosts, ASynchronizeCostsItsCallBesideTheWait) {
  start("sync_us:9");
  CUstream stream = make_stream();
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuStreamSynchronize(stream)); }), 9'000u);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuCtxSynchronize()); }), 9'000u);
}

TEST_F(HostCosts, OffChargesOnlyLaunchesAndUnansweredQueries) {
  start(std::string("host_costs:false,launch_latency_us:4,query_cost_us:1,")
            .append(kDistinct)
            .c_str());
  CUdeviceptr base = 0;
  CUmemGenericAllocationHandle handle = 0;
  const CUmemAllocationProp prop = device_prop();
  const CUmemAccessDesc access = read_write();
  EXPECT_EQ(cost_ns([&] {
              ASSERT_CU(cuMemAddressReserve(&base, 2 * kMiB, 0, 0, 0));
              ASSERT_CU(cuMemCreate(&handle, 2 * kMiB, &prop, 0));
              ASSERT_CU(cuMemMap(base, 2 * kMiB, 0, handle, 0));
              ASSERT_CU(cuMemSetAccess(base, 2 * kMiB, &access, 1));
              ASSERT_CU(cuMemUnmap(base, 2 * kMiB));
              ASSERT_CU(cuMemRelease(handle));
              ASSERT_CU(cuMemAddressFree(base, 2 * kMiB));
            }),
            0u);
  EXPECT_EQ(stats().vmm_calls, 7u) << "still counted";
  CUstream stream = make_stream();
  CUevent event = make_event(CU_EVENT_DISABLE_TIMING);
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuEventRecord(event, stream)); }), 4'000u)
      << "every enqueue costs a launch";
  ASSERT_CU(cuStreamSynchronize(stream));
  EXPECT_EQ(cost_ns([&] { ASSERT_CU(cuEventQuery(event)); }), 0u);
}

TEST_F(HostCosts, EveryCostIsAKeyAndNoneIsNegative) {
  ASSERT_CU(simcuda_reset("mem_map_us:2.5,host_alloc_page_us:0,host_costs:off"));
  EXPECT_EQ(simcuda_reset("mem_map_us:-1"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("mem_map_us:fast"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("host_costs:maybe"), CUDA_ERROR_INVALID_VALUE);
}

}  // namespace
