// The swapping allocator on simcuda: oversubscription in both eviction
// modes, pointers the scan cannot see, stream-ordered reuse, frees in the
// middle of moves, pass-through under the budget, two devices.
#include <cuda.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>
#include <tuple>

#include "tests/allocator/swap_fixture.h"

namespace {

using cuswap::Residency;

constexpr uint64_t k32MiB = 32 * kMiB;

// "host_vmm:true" evicts to host memory mapped at the range; "false" to the
// pinned stash with the range unmapped.
class Oversubscription : public SwapTest, public ::testing::WithParamInterface<bool> {
 protected:
  std::string sim_conf() const {
    return std::string("memory:96MiB,host_vmm:") + (GetParam() ? "true" : "false");
  }
};

// The device has 96 MiB; the tests below give cuswap a budget of 64 MiB,
// which only cuswap enforces: the device would take a page more.
TEST_P(Oversubscription, WithoutCuswapTheFourthAllocationFails) {
  start(sim_conf().c_str());
  CUdeviceptr a = 0, b = 0, c = 0, d = 0;
  ASSERT_CU(cuMemAlloc(&a, k32MiB));
  ASSERT_CU(cuMemAlloc(&b, k32MiB));
  ASSERT_CU(cuMemAlloc(&c, k32MiB));
  EXPECT_EQ(cuMemAlloc(&d, k32MiB), CUDA_ERROR_OUT_OF_MEMORY);
}

// Eight 32 MiB buffers on a 64 MiB budget, written and read back by kernels
// and copies from four threads on three streams, in random order; every
// word its own value.
TEST_P(Oversubscription, EveryByteSurvivesFromManyThreads) {
  start_swap(sim_conf().c_str(), budget(64 * kMiB));
  constexpr int kBuffers = 8, kThreads = 4, kRounds = 12;
  CUstream streams[3] = {make_stream(), make_stream(), make_stream()};
  std::vector<CUdeviceptr> buffers, counters;
  std::vector<CUevent> last(kBuffers);
  std::vector<uint32_t> expected(kBuffers);
  for (int b = 0; b < kBuffers; ++b) {
    buffers.push_back(swap_alloc(k32MiB));
    counters.push_back(swap_alloc(8));
    last[b] = make_event();
    expected[b] = 0x10 + b;
    ASSERT_CU(fill(streams[0], counters[b], 8, 0));
    ASSERT_CU(fill_words(streams[0], buffers[b], k32MiB, expected[b]));
    ASSERT_CU(cuEventRecord(last[b], streams[0]));
  }
  std::atomic<int> failures{0};
  std::atomic<int> first_error{0};
  std::atomic<uint64_t> wrong_bytes{0};
  auto ok = [&](CUresult r) {
    if (r == CUDA_SUCCESS) return true;
    ++failures;
    int none = 0;
    first_error.compare_exchange_strong(none, static_cast<int>(r));
    return false;
  };
  auto worker = [&](int t) {
    ASSERT_CU(cuCtxSetCurrent(ctx));
    std::mt19937 rng(1234 + t);
    std::vector<unsigned char> host(k32MiB);
    for (int round = 0; round < kRounds; ++round) {
      // Each thread owns two buffers; their uses are ordered by events.
      const int b = 2 * t + static_cast<int>(rng() % 2);
      CUstream s = streams[rng() % 3];
      ok(cuStreamWaitEvent(s, last[b], 0));
      switch (rng() % 3) {
        case 0:
          expected[b] = (expected[b] + 37) & 0xff;
          ok(fill_words(s, buffers[b], k32MiB, expected[b]));
          break;
        case 1:
          ok(check_words(s, buffers[b], k32MiB, expected[b], counters[b]));
          break;
        default:
          if (!ok(read(s, host.data(), buffers[b], k32MiB)) || !ok(cuStreamSynchronize(s))) break;
          wrong_bytes += simcuda::testkit::pattern_mismatches(host.data(), k32MiB, expected[b]);
      }
      ok(cuEventRecord(last[b], s));
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(worker, t);
  for (auto& thread : threads)
    thread.join();
  for (CUstream s : streams)
    ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(failures.load(), 0) << "first error " << first_error.load();
  EXPECT_EQ(wrong_bytes.load(), 0u);
  for (int b = 0; b < kBuffers; ++b) {
    EXPECT_EQ(read_counter(counters[b]), 0u) << "buffer " << b;
    ASSERT_CU(check_words(nullptr, buffers[b], k32MiB, expected[b], counters[b]));
    EXPECT_EQ(read_counter(counters[b]), 0u) << "buffer " << b << " at the end";
  }
  const simcuda_stats sim = stats();
  EXPECT_EQ(sim.hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(sim.illegal_address_faults, 0u);
  EXPECT_LE(sim.peak_device_bytes, 64 * kMiB);
  const cuswap::SwapStats swap = allocator->stats();
  EXPECT_GT(swap.evictions, 0u);
  EXPECT_GT(swap.prefetches, 0u);
  EXPECT_LE(swap.peak_device_bytes, 64 * kMiB);
  EXPECT_EQ(swap.bytes_to_device, swap.prefetches * k32MiB);
}

// A kernel that loads through a pointer stored in device memory, where the
// parameter scan cannot see it.
TEST_P(Oversubscription, PointersInDeviceMemory) {
  start_swap(sim_conf().c_str(), budget(64 * kMiB));
  CUdeviceptr table = swap_alloc(64), out = swap_alloc(8);
  CUdeviceptr hidden = swap_alloc(k32MiB);
  ASSERT_CU(fill(nullptr, hidden, k32MiB, 0x5a));
  // The pointer goes to the device inside a small host buffer, as a
  // framework's pointer table would.
  const CUdeviceptr entry = hidden + 4096;
  allocator->note_host_words(&entry, sizeof entry);
  ASSERT_CU(use(nullptr, {table}, [&] { return cuMemcpyHtoD(table, &entry, sizeof entry); }));
  // Pressure: more large buffers, each used after allocation.
  for (int i = 0; i < 3; ++i) {
    CUdeviceptr other = swap_alloc(16 * kMiB);
    ASSERT_CU(fill(nullptr, other, 16 * kMiB, i));
  }
  ASSERT_CU(cuCtxSynchronize());
  if (GetParam()) {
    EXPECT_NE(allocator->residency(hidden), Residency::resident);  // evicted, or its copy runs
  } else {
    EXPECT_EQ(allocator->residency(hidden), Residency::resident) << "escaped: never evicted";
    EXPECT_EQ(allocator->stats().escaped_buffers, 1u);
  }
  ASSERT_CU(use(nullptr, {table, out}, [&] {
    void* params[] = {&table, &out};
    return cuLaunchKernel(k.load_indirect, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
  }));
  uint64_t loaded = 0;
  ASSERT_CU(use(nullptr, {out}, [&] { return cuMemcpyDtoH(&loaded, out, 8); }));
  EXPECT_EQ(loaded, 0x5a5a5a5a5a5a5a5aull);
  EXPECT_EQ(stats().illegal_address_faults, 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

INSTANTIATE_TEST_SUITE_P(Modes, Oversubscription, ::testing::Bool(), [](const auto& param_info) {
  return param_info.param ? "HostMapped" : "Stash";
});

TEST_F(SwapTest, StreamOrderedFreeIsReusedInOrder) {
  start_swap("memory:256MiB", budget(256 * kMiB));
  CUstream s1 = make_stream(), s2 = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  ASSERT_CU(fill(s1, a, k32MiB, 7));
  ASSERT_CU(swap_free(a, s1, true));
  // The same stream takes it back as it is.
  CUdeviceptr b = swap_alloc(k32MiB);
  EXPECT_EQ(b, a);
  ASSERT_CU(fill(s1, b, k32MiB, 8));
  ASSERT_CU(swap_free(b, s1, true));
  // Another stream gets it too, ordered after s1's work by the free's event.
  CUdeviceptr c = swap_alloc(k32MiB);
  EXPECT_EQ(c, a);
  ASSERT_CU(fill(s2, c, k32MiB, 9));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(allocator->stats().reused_ranges, 2u);
  EXPECT_EQ(mismatches(c, k32MiB, 9), 0u);
  // Small buffers follow the same rule.
  CUdeviceptr small = swap_alloc(4096);
  ASSERT_CU(fill(s1, small, 4096, 3));
  ASSERT_CU(swap_free(small, s1, true));
  CUdeviceptr small2 = swap_alloc(4096);
  EXPECT_EQ(small2, small);
  ASSERT_CU(fill(s2, small2, 4096, 4));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Note [The small pool]: small buffers of every size share one slab, cut in
// 512-byte units, and freed neighbours join for a bigger one, all without a
// driver call; slabs of one size class each mapped a page per size.
TEST_F(SwapTest, SmallBuffersOfEverySizeShareASlab) {
  start_swap("memory:256MiB", budget(256 * kMiB));
  CUstream s = make_stream();
  CUdeviceptr a = swap_alloc(4096);
  const uint64_t vmm_before = stats().vmm_calls;
  CUdeviceptr b = swap_alloc(4096);
  std::vector<CUdeviceptr> others;
  for (uint64_t bytes : {600u, 3000u, 70'000u, 300'000u, 513u})
    others.push_back(swap_alloc(bytes));
  EXPECT_EQ(stats().vmm_calls, vmm_before) << "one slab for every size";
  EXPECT_EQ(b, a + 4096);
  EXPECT_EQ(others.back() % 256, 0u) << "aligned as the driver's allocations";
  ASSERT_CU(fill(s, a, 4096, 1));
  ASSERT_CU(fill(s, b, 4096, 2));
  ASSERT_CU(fill(s, others[3], 300'000, 3));
  ASSERT_CU(swap_free(a, s, true));
  ASSERT_CU(swap_free(b, s, true));
  // Joined: both together hold a buffer of both sizes, where they were.
  CUdeviceptr joined = swap_alloc(8192);
  EXPECT_EQ(joined, a);
  ASSERT_CU(fill(s, joined, 8192, 4));
  EXPECT_EQ(stats().vmm_calls, vmm_before);
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(mismatches(joined, 8192, 4), 0u);
  EXPECT_EQ(mismatches(others[3], 300'000, 3), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(allocator->stats().allocations_small, 8u);
}

// Note [The address arena]: a freed range is split for smaller buffers and
// joined again once they are freed, all without a driver call.
TEST_F(SwapTest, FreedRangesSplitAndJoinWithoutDriverCalls) {
  start_swap("memory:256MiB", budget(256 * kMiB));
  CUstream s1 = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  ASSERT_CU(fill(s1, a, k32MiB, 1));
  ASSERT_CU(swap_free(a, s1, true));
  const uint64_t vmm_before = stats().vmm_calls;
  CUdeviceptr b = swap_alloc(k32MiB / 2);
  CUdeviceptr c = swap_alloc(k32MiB / 2);
  EXPECT_EQ(std::min(b, c), a);
  EXPECT_EQ(std::max(b, c), a + k32MiB / 2);
  ASSERT_CU(fill(s1, b, k32MiB / 2, 2));
  ASSERT_CU(fill(s1, c, k32MiB / 2, 3));
  ASSERT_CU(swap_free(b, s1, true));
  ASSERT_CU(swap_free(c, s1, true));
  CUdeviceptr d = swap_alloc(k32MiB);
  EXPECT_EQ(d, a) << "the two halves joined";
  ASSERT_CU(fill(s1, d, k32MiB, 4));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().vmm_calls, vmm_before);
  EXPECT_EQ(allocator->stats().reused_ranges, 3u);
  EXPECT_EQ(mismatches(d, k32MiB, 4), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Note [Counted driver calls]: the allocator counts its VMM calls by kind,
// and their sum is what the driver saw; a range reused as it is costs none.
TEST_F(SwapTest, DriverCallsAreCountedByKind) {
  start_swap("memory:256MiB", budget(256 * kMiB));
  auto vmm = [](const cuswap::SwapStats& s) {
    return s.vmm_creates + s.vmm_releases + s.vmm_maps + s.vmm_unmaps + s.vmm_set_access +
           s.vmm_reserves + s.vmm_address_frees;
  };
  const uint64_t driver_before = stats().vmm_calls;
  CUstream s1 = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  cuswap::SwapStats swap = allocator->stats();
  EXPECT_EQ(swap.vmm_creates, 16u) << "a page at a time";
  EXPECT_EQ(swap.vmm_reserves, 1u);
  EXPECT_GE(swap.vmm_maps, 1u);
  EXPECT_EQ(swap.vmm_set_access, 1u) << "access set once for the range";
  EXPECT_EQ(vmm(swap), stats().vmm_calls - driver_before);
  ASSERT_CU(fill(s1, a, k32MiB, 7));
  ASSERT_CU(swap_free(a, s1, true));
  const uint64_t before_reuse = vmm(allocator->stats());
  EXPECT_EQ(swap_alloc(k32MiB), a);
  EXPECT_EQ(vmm(allocator->stats()), before_reuse) << "a reused range costs no VMM call";
  EXPECT_EQ(vmm(allocator->stats()), stats().vmm_calls - driver_before);
  ASSERT_CU(cuStreamSynchronize(s1));
}

// cuMemFree returns once the device is idle, so a program may free a buffer
// that work it queued still reads, and the allocator may never have seen
// that work (here a kernel launched past it). The pages go to the next
// allocation, of another size, only after it (Note [A synchronous free]).
TEST_F(SwapTest, ASynchronousFreeWaitsForWorkItDidNotSee) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUdeviceptr counter = swap_alloc(8);
  ASSERT_CU(fill(nullptr, counter, 8, 0));
  CUdeviceptr a = swap_alloc(k32MiB);
  ASSERT_CU(fill_words(nullptr, a, k32MiB, 5));
  // Unseen by the allocator: a kernel that holds the stream for a virtual
  // millisecond, then one that reads `a`.
  ASSERT_CU(simcuda::testkit::launch_spin(k, nullptr, 0, 1000000));
  ASSERT_CU(simcuda::testkit::launch_check_words(k, nullptr, a, k32MiB, 5, counter, 20000));
  ASSERT_CU(swap_free(a));
  // 48 MiB: the budget has room for 30 MiB of new pages, so `a`'s are taken.
  CUdeviceptr b = swap_alloc(48 * kMiB);
  ASSERT_CU(fill(nullptr, b, 48 * kMiB, 1));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().illegal_address_faults, 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(read_counter(counter), 0u);
  EXPECT_EQ(mismatches(b, 48 * kMiB, 1), 0u);
}

// Note [Idle streams]: memory freed synchronously waits for every stream's
// work, but a stream that has done nothing since (here the legacy stream,
// used once to set up) is asked once, not waited on at each reuse.
TEST_F(SwapTest, AQuietStreamIsNotWaitedOnAtEachReuse) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUdeviceptr counter = swap_alloc(8);
  ASSERT_CU(fill(nullptr, counter, 8, 0));
  ASSERT_CU(cuCtxSynchronize());
  CUstream s1 = make_stream();
  const uint64_t waits_before = allocator->stats().stream_waits;
  for (int i = 0; i < 20; ++i) {
    CUdeviceptr a = swap_alloc(k32MiB);
    ASSERT_CU(fill(s1, a, k32MiB, static_cast<uint32_t>(i)));
    ASSERT_CU(check(s1, a, k32MiB, static_cast<uint32_t>(i), counter));
    ASSERT_CU(swap_free(a, nullptr, false));
  }
  ASSERT_CU(cuStreamSynchronize(s1));
  EXPECT_LE(allocator->stats().stream_waits - waits_before, 1u);
  EXPECT_EQ(read_counter(counter), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// At a full budget an allocation takes the pages of a cached free range.
// It takes one whose last use is done before it waits for one still in use.
TEST_F(SwapTest, AFullBudgetTakesTheRangeThatIsNoLongerInUse) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream busy = make_stream(), idle = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  CUdeviceptr b = swap_alloc(k32MiB);
  // Freed on their streams (as PyTorch frees): the older free's stream runs
  // on for a virtual second; the newer one's is done.
  constexpr uint64_t kSecond = 1'000'000'000;
  ASSERT_CU(fill(busy, a, k32MiB, 1));
  ASSERT_CU(fill(idle, b, k32MiB, 2));
  ASSERT_CU(cuStreamSynchronize(idle));
  ASSERT_CU(simcuda::testkit::launch_spin(k, busy, 0, kSecond));
  ASSERT_CU(swap_free(a, busy, true));
  ASSERT_CU(swap_free(b, idle, true));
  // 24 MiB: no range of its size, no page left in the budget; either
  // range has pages enough.
  const uint64_t waited = stats().host_wait_ns;
  CUdeviceptr c = swap_alloc(24 * kMiB);
  EXPECT_LT(stats().host_wait_ns - waited, kSecond / 2)
      << "the allocation waited for the busy range";
  ASSERT_CU(fill(idle, c, 24 * kMiB, 3));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(stats().illegal_address_faults, 0u);
  EXPECT_EQ(mismatches(c, 24 * kMiB, 3), 0u);
}

// Note [Reactive evictions in flight]: an allocation that finds no room
// evicts without the host waiting for the copy; the new buffer's first use,
// on another stream, waits for it on the device. The victim comes back
// with its bytes, and one freed while its copy runs costs no wait either.
TEST_F(SwapTest, EvictingForRoomLeavesTheHostFree) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream s = make_stream();
  CUstream other = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  CUdeviceptr b = swap_alloc(k32MiB);
  ASSERT_CU(fill_words(s, a, k32MiB, 1));
  ASSERT_CU(fill_words(s, b, k32MiB, 2));
  const uint64_t waits = allocator->stats().host_waits;
  CUdeviceptr c = swap_alloc(k32MiB);  // evicts a, whose fill may still run
  EXPECT_EQ(allocator->stats().host_waits, waits);
  EXPECT_EQ(allocator->residency(a), Residency::evicting);
  ASSERT_CU(fill_words(other, c, k32MiB, 3));
  CUdeviceptr d = swap_alloc(k32MiB);  // evicts b; freed before its copy is known done
  EXPECT_EQ(allocator->residency(b), Residency::evicting);
  ASSERT_CU(swap_free(b, other, true));
  ASSERT_CU(fill_words(other, d, k32MiB, 4));
  EXPECT_EQ(allocator->stats().host_waits, waits);
  CUdeviceptr counter = swap_alloc(8);
  ASSERT_CU(use(other, {counter}, [&] { return cuMemsetD8Async(counter, 0, 8, other); }));
  for (auto [p, seed] : {std::pair{c, 3u}, {d, 4u}, {a, 1u}})
    ASSERT_CU(check_words(other, p, k32MiB, seed, counter));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(read_counter(counter), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_GE(allocator->stats().evictions, 1u);
  EXPECT_LE(stats().peak_device_bytes, 64 * kMiB);
}

// Note [Joined events]: free pieces side by side that each still owe a
// copy join, their copies one event: a buffer as big as both takes their
// range without a driver call or a host wait, and its first use, on
// another stream, runs after both copies.
TEST_F(SwapTest, FreePiecesOwingCopiesJoin) {
  start_swap("memory:64MiB,host_vmm:false", budget(k32MiB));
  CUstream s = make_stream(), other = make_stream();
  constexpr uint64_t k16MiB = 16 * kMiB;
  CUdeviceptr a = swap_alloc(k16MiB), b = swap_alloc(k16MiB);
  ASSERT_EQ(b, a + k16MiB);
  ASSERT_CU(fill(s, a, k16MiB, 1));
  ASSERT_CU(fill(s, b, k16MiB, 2));
  ASSERT_CU(allocator->start_eviction(a));
  ASSERT_CU(allocator->start_eviction(b));
  ASSERT_CU(cuCtxSynchronize());
  // A buffer that wants all their pages lands them.
  CUdeviceptr d = swap_alloc(k32MiB);
  ASSERT_CU(fill(s, d, k32MiB, 4));
  ASSERT_CU(swap_free(d, s, true));
  ASSERT_CU(cuCtxSynchronize());
  // Both come back behind a virtual millisecond of work on s, and are
  // freed there before their copies run.
  ASSERT_CU(simcuda::testkit::launch_spin(k, s, 0, 1000000));
  ASSERT_CU(allocator->start_prefetch(a, s, nullptr));
  ASSERT_CU(allocator->start_prefetch(b, s, nullptr));
  ASSERT_EQ(allocator->residency(a), Residency::prefetching);
  ASSERT_EQ(allocator->residency(b), Residency::prefetching);
  ASSERT_CU(swap_free(a, s, true));
  ASSERT_CU(swap_free(b, s, true));
  const uint64_t vmm = stats().vmm_calls, waits = allocator->stats().host_waits;
  CUdeviceptr c = swap_alloc(k32MiB);
  EXPECT_EQ(c, a) << "the two pieces joined";
  EXPECT_EQ(stats().vmm_calls, vmm);
  EXPECT_EQ(allocator->stats().host_waits, waits);
  ASSERT_CU(fill(other, c, k32MiB, 3));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(mismatches(c, k32MiB, 3), 0u);
  EXPECT_EQ(allocator->stats().prefetches_planned, 2u);
}

// Note [Choosing victims]: a buffer allocated and not yet used is the most
// recent one, not the first to go for having no use to wait for; its use
// neither waits on the host nor brings it back.
TEST_F(SwapTest, ABufferNotYetUsedIsNotTheFirstVictim) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream s = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  ASSERT_CU(fill_words(s, a, k32MiB, 1));
  ASSERT_CU(simcuda::testkit::launch_spin(k, s, 0, 1000000));  // a's use is not known done
  CUdeviceptr fresh = swap_alloc(k32MiB);
  CUdeviceptr c = swap_alloc(k32MiB);  // no room: one of the two goes
  EXPECT_EQ(allocator->residency(fresh), Residency::resident);
  EXPECT_NE(allocator->residency(a), Residency::resident);
  const cuswap::SwapStats before = allocator->stats();
  ASSERT_CU(fill_words(s, fresh, k32MiB, 2));
  ASSERT_CU(fill_words(s, c, k32MiB, 3));
  EXPECT_EQ(allocator->stats().host_waits, before.host_waits);
  EXPECT_EQ(allocator->stats().evictions_cancelled, before.evictions_cancelled);
  CUdeviceptr counter = swap_alloc(8);
  ASSERT_CU(use(s, {counter}, [&] { return cuMemsetD8Async(counter, 0, 8, s); }));
  for (auto [p, seed] : {std::pair{fresh, 2u}, {c, 3u}, {a, 1u}})
    ASSERT_CU(check_words(s, p, k32MiB, seed, counter));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(read_counter(counter), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Note [Evicting ahead]: a budget nearly full moves nothing until
// something must be evicted for room; from then on, an allocation that
// leaves less than a sixteenth free (here 4 MiB) starts evicting the least
// recently used beyond what it needed.
TEST_F(SwapTest, OnceOverTheBudgetRoomIsMadeAhead) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream s = make_stream();
  std::vector<std::pair<CUdeviceptr, uint64_t>> buffers;
  auto add = [&](uint64_t bytes) {
    buffers.emplace_back(swap_alloc(bytes), bytes);
    return fill_words(s, buffers.back().first, bytes, static_cast<uint32_t>(buffers.size()));
  };
  ASSERT_CU(add(k32MiB));
  for (int i = 0; i < 15; ++i)
    ASSERT_CU(add(2 * kMiB));  // 2 MiB free, less than the 4 MiB kept ahead
  EXPECT_EQ(allocator->stats().evictions, 0u);
  EXPECT_EQ(allocator->stats().evictions_ahead, 0u);
  ASSERT_CU(add(4 * kMiB));  // evicts the 32 MiB for room, 30 MiB of it on its way
  EXPECT_EQ(allocator->stats().evictions_ahead, 0u);
  EXPECT_NE(allocator->residency(buffers[0].first), Residency::resident);
  ASSERT_CU(add(k32MiB));  // takes those 30 MiB and 2 MiB more, then 4 MiB ahead
  EXPECT_EQ(allocator->stats().evictions_ahead, 1u);
  for (size_t i : {1, 2, 3})
    EXPECT_NE(allocator->residency(buffers[i].first), Residency::resident) << i;
  EXPECT_EQ(allocator->residency(buffers[4].first), Residency::resident);
  CUdeviceptr counter = swap_alloc(8);
  ASSERT_CU(use(s, {counter}, [&] { return cuMemsetD8Async(counter, 0, 8, s); }));
  for (size_t i = 0; i < buffers.size(); ++i)
    ASSERT_CU(
        check_words(s, buffers[i].first, buffers[i].second, static_cast<uint32_t>(i + 1), counter));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(read_counter(counter), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Note [Placed as a step ago]: once the step is known, a large allocation
// takes the range its like took a step earlier, though best fit would now
// take a hole that fits it exactly.
TEST_F(SwapTest, ALargeAllocationGoesWhereItWentAStepEarlier) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream s = make_stream();
  CUdeviceptr hole = swap_alloc(6 * kMiB), wall = swap_alloc(2 * kMiB);
  ASSERT_CU(fill_words(s, wall, 2 * kMiB, 1));
  constexpr uint64_t kStep[] = {6, 2, 2, 2, 2, 2, 2, 2};  // MiB
  std::vector<CUdeviceptr> first;                         // each step's first buffer
  for (int step = 0; step < 10; ++step) {
    if (step == 6) {
      ASSERT_CU(swap_free(hole, s, true));  // 6 MiB free, beside the wall
    }
    std::vector<CUdeviceptr> held;
    for (uint64_t mib : kStep) {
      held.push_back(swap_alloc(mib * kMiB));
      ASSERT_CU(fill_words(s, held.back(), mib * kMiB, 2));
    }
    first.push_back(held[0]);
    for (CUdeviceptr p : held)
      ASSERT_CU(swap_free(p, s, true));
  }
  for (int step = 6; step < 10; ++step)
    EXPECT_EQ(first[step], first[5]) << "step " << step;
  EXPECT_NE(first[6], hole);
  const cuswap::SwapStats before = allocator->stats();
  CUdeviceptr other = swap_alloc(4 * kMiB);  // not the step's: best fit, the hole
  EXPECT_EQ(other, hole);
  EXPECT_EQ(allocator->stats().vmm_maps, before.vmm_maps);
  EXPECT_EQ(wrong_words(s, {{wall, 2 * kMiB, 1}}), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Note [A step that fits]: a warm-up that had to evict for room starts
// evicting ahead, and a repeating step whose buffers fit the budget, with
// less than a sixteenth of it free at its peak, stops it again once the
// step is known: nothing moves in the steps after.
TEST_F(SwapTest, AStepThatFitsStopsEvictingAhead) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream s = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB), b = swap_alloc(8 * kMiB);
  ASSERT_CU(fill_words(s, a, k32MiB, 1));
  ASSERT_CU(fill_words(s, b, 8 * kMiB, 2));
  CUdeviceptr warm_up = swap_alloc(k32MiB);  // evicts a for room
  ASSERT_CU(fill_words(s, warm_up, k32MiB, 3));
  ASSERT_EQ(allocator->stats().evictions, 1u);
  ASSERT_CU(swap_free(warm_up, s, true));
  // A step: eight buffers, 22 MiB, beside a and b: 62 MiB of the 64 at its
  // peak, 2 MiB free where 4 are kept ahead.
  constexpr uint64_t kStep[] = {2, 4, 2, 2, 2, 4, 2, 4};
  std::vector<uint64_t> ahead;  // evictions ahead after each step
  for (int step = 0; step < 12; ++step) {
    ASSERT_CU(fill_words(s, a, k32MiB, 1));
    ASSERT_CU(fill_words(s, b, 8 * kMiB, 2));
    std::vector<CUdeviceptr> held;
    for (uint64_t mib : kStep) {
      held.push_back(swap_alloc(mib * kMiB));
      ASSERT_CU(fill_words(s, held.back(), mib * kMiB, 10));
    }
    for (CUdeviceptr p : held)
      ASSERT_CU(swap_free(p, s, true));
    ahead.push_back(allocator->stats().evictions_ahead);
  }
  EXPECT_GT(ahead[0], 0u) << "the warm-up started evicting ahead";
  EXPECT_EQ(ahead[11], ahead[7]) << "evicting ahead went on in steps that fit: "
                                 << ::testing::PrintToString(ahead);
  EXPECT_EQ(wrong_words(s, {{a, k32MiB, 1}, {b, 8 * kMiB, 2}}), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Note [Marks behind the host]: with the host far ahead of the device, a
// victim whose last use ran long before is copied out as soon as the
// device passes that use, not once it catches up with the host, so the
// buffer that takes its pages, queued behind the host's work, does not
// stall for the copy.
TEST_F(SwapTest, AnOldVictimsCopyDoesNotWaitForTheHostsLead) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream s = make_stream();
  constexpr uint64_t k16MiB = 16 * kMiB;
  CUdeviceptr x = swap_alloc(k32MiB), a = swap_alloc(k16MiB), b = swap_alloc(k16MiB);
  ASSERT_CU(fill_words(s, x, k32MiB, 1));
  ASSERT_CU(fill_words(s, a, k16MiB, 2));
  ASSERT_CU(fill_words(s, b, k16MiB, 3));
  CUdeviceptr y = swap_alloc(k16MiB);  // no room: x, the least recently used, goes
  ASSERT_NE(allocator->residency(x), Residency::resident);
  ASSERT_CU(fill_words(s, y, k16MiB, 4));
  ASSERT_CU(fill_words(s, a, k16MiB, 2));  // after the event x's copy was ordered by
  ASSERT_CU(fill_words(s, b, k16MiB, 5));
  ASSERT_CU(cuCtxSynchronize());
  const uint64_t stalled = stats().stall_ns;  // y's fill waited for x's copy
  // 20 virtual ms of work the host queues at once: a's last use is far behind.
  for (int i = 0; i < 200; ++i)
    ASSERT_CU(use(s, {y}, [&] { return simcuda::testkit::launch_spin(k, s, 0, 100000); }));
  CUdeviceptr z = swap_alloc(k32MiB);  // takes x's pages and a's: a goes
  EXPECT_NE(allocator->residency(a), Residency::resident);
  ASSERT_CU(fill_words(s, z, k32MiB, 6));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().stall_ns, stalled) << "z's first use waited for a's copy out";
  CUdeviceptr counter = swap_alloc(8);
  ASSERT_CU(use(s, {counter}, [&] { return cuMemsetD8Async(counter, 0, 8, s); }));
  for (auto [p, bytes, seed] : {std::tuple{x, k32MiB, 1u},
                                {a, k16MiB, 2u},
                                {b, k16MiB, 5u},
                                {y, k16MiB, 4u},
                                {z, k32MiB, 6u}})
    ASSERT_CU(check_words(s, p, bytes, seed, counter));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(read_counter(counter), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Eight 8 MiB buffers fill a 64 MiB budget; four more evict the first five,
// least recently used first (with `plan_first`, after a plan's eviction of
// the last): the first for room, and each allocation then one more ahead
// of need, whose pages the next takes (Note [Evicting ahead]). The stage
// of Note [Prefetching ahead]'s tests.
class FetchAheadTest : public SwapTest {
 protected:
  static constexpr uint64_t k8MiB = 8 * kMiB;
  void overflow(bool plan_first) {
    start_swap("memory:96MiB", budget(64 * kMiB));
    s = make_stream();
    for (uint32_t i = 0; i < 8; ++i) {
      a.push_back(swap_alloc(k8MiB));
      ASSERT_CU(fill(s, a.back(), k8MiB, i + 1));
    }
    ASSERT_CU(cuCtxSynchronize());
    if (plan_first) {
      ASSERT_CU(allocator->start_eviction(a[7]));
    }
    for (uint32_t i = 0; i < 4; ++i) {
      b.push_back(swap_alloc(k8MiB));
      ASSERT_CU(fill(s, b.back(), k8MiB, 100 + i));
    }
    ASSERT_CU(cuCtxSynchronize());
  }
  CUstream s = nullptr;
  std::vector<CUdeviceptr> a, b;
};

// Note [Prefetching ahead]: once live bytes fall from their peak, each free
// brings back the buffers last evicted for room, last first, while a
// quarter of the budget stays free, and their uses find them there.
TEST_F(FetchAheadTest, FallingFromThePeakFetchesTheLastEvictedAhead) {
  ASSERT_NO_FATAL_FAILURE(overflow(/*plan_first=*/false));
  EXPECT_EQ(allocator->stats().evictions_ahead, 4u);
  EXPECT_NE(allocator->residency(a[4]), Residency::resident);
  EXPECT_EQ(allocator->residency(a[5]), Residency::resident);
  EXPECT_EQ(allocator->stats().prefetches_ahead, 0u);
  // A free leaves 16 MiB: not the buffer and a quarter of the budget.
  ASSERT_CU(swap_free(b[3], s, true));
  EXPECT_EQ(allocator->stats().prefetches_ahead, 0u);
  // Two leave 24 MiB: the last evicted comes back, and only it.
  ASSERT_CU(swap_free(b[2], s, true));
  EXPECT_EQ(allocator->stats().prefetches_ahead, 1u);
  EXPECT_NE(allocator->residency(a[4]), Residency::evicted);
  EXPECT_EQ(allocator->residency(a[3]), Residency::evicted);
  ASSERT_CU(swap_free(b[1], s, true));
  EXPECT_EQ(allocator->stats().prefetches_ahead, 2u);
  EXPECT_NE(allocator->residency(a[3]), Residency::evicted);
  EXPECT_EQ(allocator->residency(a[2]), Residency::evicted);
  const uint64_t on_demand = allocator->stats().prefetches_on_demand;
  std::vector<char> heads(32);  // read into until the synchronize below
  ASSERT_CU(read(s, heads.data(), a[4], 16));
  ASSERT_CU(read(s, heads.data() + 16, a[3], 16));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(allocator->stats().prefetches_on_demand, on_demand);
  for (uint32_t i = 0; i < 8; ++i)
    EXPECT_EQ(mismatches(a[i], k8MiB, i + 1), 0u) << i;
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_LE(stats().peak_device_bytes, 64 * kMiB);
}

// Where a plan moves buffers (start_eviction, start_prefetch), fetching
// back is the plan's: frees bring nothing back ahead.
TEST_F(FetchAheadTest, UnderAPlanNothingIsFetchedAhead) {
  ASSERT_NO_FATAL_FAILURE(overflow(/*plan_first=*/true));
  for (CUdeviceptr p : b)
    ASSERT_CU(swap_free(p, s, true));
  EXPECT_EQ(allocator->stats().prefetches_ahead, 0u);
  EXPECT_GE(allocator->stats().evictions, 4u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// An eviction takes back the host copy of a prefetch that has landed before
// it pins more host memory (Note [Host copies by best fit]): here the
// third eviction reuses the first one's copy, so two copies are ever pinned.
TEST_F(SwapTest, AnEvictionReusesTheHostCopyOfALandedPrefetch) {
  start_swap("memory:96MiB", budget(64 * kMiB));
  CUstream s = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  CUdeviceptr b = swap_alloc(k32MiB);
  ASSERT_CU(fill(s, a, k32MiB, 1));
  ASSERT_CU(fill(s, b, k32MiB, 2));
  CUdeviceptr c = swap_alloc(k32MiB);  // evicts a: a first host copy
  ASSERT_CU(fill(s, c, k32MiB, 3));
  std::vector<char> head(16);
  ASSERT_CU(read(s, head.data(), a, head.size()));  // brings a back, evicting b: a second
  ASSERT_CU(cuCtxSynchronize());                    // a's prefetch has landed: its copy is free
  const uint64_t creates = allocator->stats().vmm_creates;
  CUdeviceptr d = swap_alloc(k32MiB);  // evicts c into a's old copy
  EXPECT_EQ(allocator->residency(c), Residency::evicting);
  ASSERT_CU(fill(s, d, k32MiB, 4));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(allocator->stats().vmm_creates, creates);
  EXPECT_EQ(allocator->stats().peak_host_bytes, 2 * k32MiB);
  EXPECT_EQ(mismatches(a, k32MiB, 1), 0u);
  EXPECT_EQ(mismatches(d, k32MiB, 4), 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

TEST_F(SwapTest, FreeWhilePrefetching) {
  start_swap("memory:64MiB,host_vmm:false", budget(48 * kMiB));
  CUstream s = make_stream();
  CUdeviceptr a = swap_alloc(k32MiB);
  ASSERT_CU(fill(s, a, k32MiB, 1));
  CUdeviceptr b = swap_alloc(k32MiB);  // evicts a
  ASSERT_CU(fill(s, b, k32MiB, 2));
  ASSERT_NE(allocator->residency(a), Residency::resident);  // its copy may still run
  // A use brings it back; it is freed before the copy is known to be done.
  ASSERT_CU(fill(s, a, 16, 3));
  EXPECT_EQ(allocator->residency(a), Residency::prefetching);
  ASSERT_CU(swap_free(a, nullptr, false));
  // Its range goes to the next buffer of its size, which waits for the copy.
  CUstream other = make_stream();
  CUdeviceptr c = swap_alloc(k32MiB);
  ASSERT_CU(fill(other, c, k32MiB, 4));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(mismatches(c, k32MiB, 4), 0u);
}

// A launch cuswap cannot see into (a graph launch, unreadable parameters)
// names no buffer. In stash mode an evicted buffer's range is unmapped, so
// the use brings every evicted buffer back first, and the prefetch's event
// is the only thing its stream waits for.
TEST_F(SwapTest, AnUnseenUseInStashModeWaitsForWhatItBringsBack) {
  start_swap("memory:96MiB,host_vmm:false", budget(64 * kMiB));
  CUstream s = make_stream();
  CUdeviceptr counter = swap_alloc(8);
  ASSERT_CU(fill(s, counter, 8, 0));
  CUdeviceptr a = swap_alloc(k32MiB);
  ASSERT_CU(fill_words(s, a, k32MiB, 5));
  CUdeviceptr b = swap_alloc(k32MiB);  // evicts a
  ASSERT_CU(fill_words(s, b, k32MiB, 6));
  ASSERT_NE(allocator->residency(a), Residency::resident);  // its copy may still run
  // Everything must fit at once for such a use: b goes.
  ASSERT_CU(cuStreamSynchronize(s));
  ASSERT_CU(swap_free(b));
  cuswap::UseBuffers unseen;
  unseen.unknown = true;
  ASSERT_CU(allocator->prepare(s, unseen));
  const CUresult r = simcuda::testkit::launch_check_words(k, s, a, k32MiB, 5, counter, 20000);
  allocator->finish(s, unseen, r);
  ASSERT_CU(r);
  expect_consistent("the unseen use");
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  EXPECT_EQ(read_counter(counter), 0u);
  EXPECT_EQ(allocator->stats().prefetches, 1u);
}

TEST_F(SwapTest, FreeWhileAnotherThreadEvicts) {
  start_swap("memory:64MiB", budget(64 * kMiB));
  for (int round = 0; round < 10; ++round) {
    CUdeviceptr a = swap_alloc(k32MiB);
    ASSERT_CU(fill(nullptr, a, k32MiB, round));
    CUdeviceptr b = swap_alloc(k32MiB);
    ASSERT_CU(fill(nullptr, b, k32MiB, round + 1));
    CUdeviceptr c = 0;
    std::thread evictor([&] {
      ASSERT_CU(cuCtxSetCurrent(ctx));
      c = swap_alloc(k32MiB);  // evicts a or b
    });
    std::thread freer([&] { ASSERT_CU(swap_free(a, nullptr, false)); });
    evictor.join();
    freer.join();
    ASSERT_CU(fill(nullptr, c, k32MiB, 9));
    ASSERT_CU(use(nullptr, {b}, [&] { return cuCtxSynchronize(); }));
    EXPECT_EQ(mismatches(c, k32MiB, 9), 0u);
    ASSERT_CU(fill(nullptr, b, 16, round + 1));  // brings b back if it went
    EXPECT_EQ(mismatches(b, k32MiB, static_cast<unsigned char>(round + 1)), 0u);
    ASSERT_CU(swap_free(b, nullptr, false));
    ASSERT_CU(swap_free(c, nullptr, false));
  }
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Under the budget nothing moves, and the bytes are what a plain driver
// gives.
TEST_F(SwapTest, UnderTheBudgetNothingMoves) {
  start_swap("memory:1GiB", budget(1024 * kMiB));
  std::vector<CUdeviceptr> buffers;
  for (int i = 0; i < 8; ++i) {
    buffers.push_back(swap_alloc((i + 1) * 3 * kMiB + 123));
    ASSERT_CU(fill(nullptr, buffers.back(), (i + 1) * 3 * kMiB + 123, 0x30 + i));
  }
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(mismatches(buffers[i], (i + 1) * 3 * kMiB + 123, 0x30 + i), 0u);
  const cuswap::SwapStats swap = allocator->stats();
  EXPECT_EQ(swap.evictions, 0u);
  EXPECT_EQ(swap.prefetches, 0u);
  EXPECT_EQ(swap.bytes_to_host, 0u);
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_CU(allocator->mem_get_info(&free_bytes, &total_bytes));
  EXPECT_EQ(total_bytes, 1024 * kMiB);
  EXPECT_EQ(free_bytes, total_bytes - swap.device_bytes);
}

TEST_F(SwapTest, BudgetViewOfTheDevice) {
  start_swap("memory:1GiB", budget(256 * kMiB));
  size_t total = 0;
  CUdevice device = 0;
  ASSERT_CU(cuDeviceGet(&device, 0));
  ASSERT_CU(allocator->device_total_mem(device, &total));
  EXPECT_EQ(total, 256 * kMiB);
  size_t free_bytes = 0;
  ASSERT_CU(allocator->mem_get_info(&free_bytes, &total));
  EXPECT_EQ(total, 256 * kMiB);
  EXPECT_EQ(free_bytes, 256 * kMiB);
  CUdeviceptr p = swap_alloc(100 * kMiB);
  ASSERT_CU(allocator->mem_get_info(&free_bytes, &total));
  EXPECT_EQ(free_bytes, 256 * kMiB - 100 * kMiB);  // 100 MiB is 50 pages of 2 MiB
  ASSERT_CU(swap_free(p, nullptr, false));
  ASSERT_CU(allocator->mem_get_info(&free_bytes, &total));
  EXPECT_EQ(free_bytes, 256 * kMiB) << "a cached free range is free memory";
}

// Note [Buffers bigger than the budget]: with host memory mapping such a
// buffer lives on the host and its uses run in place; nothing else moves.
TEST_F(SwapTest, ABufferBiggerThanTheBudgetLivesOnTheHost) {
  start_swap("memory:64MiB", budget(64 * kMiB));
  CUdeviceptr a = swap_alloc(k32MiB);
  ASSERT_CU(fill(nullptr, a, k32MiB, 0x11));
  CUdeviceptr big = swap_alloc(96 * kMiB + 5);
  EXPECT_EQ(allocator->residency(big), Residency::evicted);
  ASSERT_CU(fill(nullptr, big, 96 * kMiB + 5, 0x22));
  ASSERT_CU(use(nullptr, {a, big},
                [&] { return simcuda::testkit::launch_copy(k, nullptr, big, a, k32MiB, 20000); }));
  EXPECT_EQ(mismatches(big, k32MiB, 0x11), 0u);
  EXPECT_EQ(mismatches(big + k32MiB, 64 * kMiB + 5, 0x22), 0u);
  EXPECT_EQ(mismatches(a, k32MiB, 0x11), 0u);
  const cuswap::SwapStats swap = allocator->stats();
  EXPECT_EQ(swap.allocations_on_host, 1u);
  EXPECT_EQ(swap.uses_on_host, 2u);
  EXPECT_EQ(swap.evictions, 0u) << "nothing was pushed out for it";
  EXPECT_EQ(swap.prefetches, 0u);
  EXPECT_LE(swap.peak_device_bytes, 64 * kMiB);
  ASSERT_CU(swap_free(big, nullptr, false));
  EXPECT_EQ(allocator->stats().host_bytes, 0u);
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
}

// Without it (the pinned stash) such a buffer is refused at once, before
// anything is evicted for it.
TEST_F(SwapTest, WhatCannotFitIsOutOfMemory) {
  start_swap("memory:64MiB,host_vmm:false", budget(64 * kMiB));
  CUdeviceptr first = swap_alloc(k32MiB);
  ASSERT_CU(fill(nullptr, first, k32MiB, 0x11));
  CUdeviceptr p = 0;
  EXPECT_EQ(allocator->allocate(96 * kMiB, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(allocator->stats().evictions, 0u);
  EXPECT_EQ(allocator->residency(first), Residency::resident);
  ASSERT_CU(swap_free(first, nullptr, false));
  CUdeviceptr a = swap_alloc(k32MiB), b = swap_alloc(k32MiB);
  // One use that needs both at once, plus a third: more than the budget.
  CUdeviceptr c = swap_alloc(k32MiB);
  EXPECT_EQ(use(nullptr, {a, b, c}, [] { return CUDA_SUCCESS; }), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_GT(allocator->stats().out_of_memory, 0u);
}

TEST_F(SwapTest, TwoDevices) {
  start_swap("devices:2,memory:[0:64MiB,1:64MiB],host_vmm:false", budget(64 * kMiB));
  CUcontext ctx1 = nullptr;
  CUdevice dev1 = 0;
  ASSERT_CU(cuDeviceGet(&dev1, 1));
  ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx1, dev1));
  simcuda::testkit::Kernels k1;
  ASSERT_CU(cuCtxSetCurrent(ctx1));
  ASSERT_CU(simcuda::testkit::load_kernels(k1));
  std::vector<CUdeviceptr> on0, on1;
  for (int i = 0; i < 4; ++i) {
    ASSERT_CU(cuCtxSetCurrent(ctx));
    on0.push_back(swap_alloc(k32MiB));
    ASSERT_CU(fill(nullptr, on0.back(), k32MiB, 0x40 + i));
    ASSERT_CU(cuCtxSetCurrent(ctx1));
    on1.push_back(swap_alloc(k32MiB));
    ASSERT_CU(use(nullptr, {on1.back()}, [&] {
      return simcuda::testkit::launch_fill(k1, nullptr, on1.back(), k32MiB, 0x80 + i);
    }));
  }
  for (int i = 0; i < 4; ++i) {
    ASSERT_CU(cuCtxSetCurrent(ctx1));
    std::vector<unsigned char> host(k32MiB);
    ASSERT_CU(use(nullptr, {on1[i]}, [&] { return cuMemcpyDtoH(host.data(), on1[i], k32MiB); }));
    EXPECT_EQ(std::count(host.begin(), host.end(), 0x80 + i), static_cast<long>(k32MiB));
    ASSERT_CU(cuCtxSetCurrent(ctx));
    ASSERT_CU(use(nullptr, {on0[i]}, [&] { return cuMemcpyDtoH(host.data(), on0[i], k32MiB); }));
    EXPECT_EQ(std::count(host.begin(), host.end(), 0x40 + i), static_cast<long>(k32MiB));
  }
  for (int device = 0; device < 2; ++device) {
    simcuda_stats s{};
    ASSERT_CU(simcuda_get_device_stats(device, &s));
    EXPECT_LE(s.peak_device_bytes, 64 * kMiB) << "device " << device;
    EXPECT_GT(s.d2h_bytes, 0u) << "device " << device << " evicted its own buffers";
    EXPECT_EQ(s.d2d_bytes, 0u) << "no copy crossed devices";
  }
  EXPECT_EQ(stats().hazards, 0u) << simcuda_last_hazard();
  ASSERT_CU(cuCtxSetCurrent(ctx));
}

}  // namespace
