// Streams, events and the virtual clock.
#include <cmath>
#include <thread>
#include <vector>

#include "tests/simcuda/test/fixture.h"

// Per-thread-stream flavours, which cuda.h declares only for
// CUDA_API_PER_THREAD_DEFAULT_STREAM builds.
extern "C" CUresult CUDAAPI cuStreamQuery_ptsz(CUstream);
extern "C" CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned,
                                                unsigned, unsigned, unsigned, CUstream, void**,
                                                void**);

namespace {

using Streams = SimTest;
using simcuda::testkit::launch_fill;
using simcuda::testkit::launch_spin;

float elapsed_ms(CUevent a, CUevent b) {
  float ms = -1;
  EXPECT_CU(cuEventElapsedTime(&ms, a, b));
  return ms;
}

TEST_F(Streams, OneGiBHostToDeviceAt52GBpsTakes20_65ms) {
  start("memory:2GiB,launch_latency_us:0");
  const size_t bytes = size_t{1} << 30;
  CUdeviceptr dev = alloc(bytes);
  void* host = nullptr;
  ASSERT_CU(cuMemAllocHost(&host, bytes));
  CUstream s = make_stream();
  CUevent before = make_event(), after = make_event();
  ASSERT_CU(cuEventRecord(before, s));
  ASSERT_CU(cuMemcpyHtoDAsync(dev, host, bytes, s));
  ASSERT_CU(cuEventRecord(after, s));
  ASSERT_CU(cuEventSynchronize(after));
  float ms = elapsed_ms(before, after);
  EXPECT_NEAR(ms, 20.65, 20.65 * 0.001);
  EXPECT_EQ(stats().h2d_bytes, bytes);
}

TEST_F(Streams, CopiesBothWaysAndAKernelOverlap) {
  start("memory:256MiB");
  const size_t bytes = 52 * kMiB;  // ~1 ms each way at 52 GB/s
  CUdeviceptr a = alloc(bytes), b = alloc(bytes), c = alloc(4096);
  void *up = nullptr, *down = nullptr;
  ASSERT_CU(cuMemAllocHost(&up, bytes));
  ASSERT_CU(cuMemAllocHost(&down, bytes));
  CUstream s1 = make_stream(), s2 = make_stream(), s3 = make_stream();
  const uint64_t kernel_ns = 1'000'000;
  uint64_t t0 = stats().virtual_ns;
  ASSERT_CU(cuMemcpyHtoDAsync(a, up, bytes, s1));
  ASSERT_CU(cuMemcpyDtoHAsync(down, b, bytes, s2));
  ASSERT_CU(launch_fill(k, s3, c, 4096, 1, kernel_ns));
  ASSERT_CU(cuCtxSynchronize());
  uint64_t total = stats().virtual_ns - t0;
  uint64_t copy_ns = static_cast<uint64_t>(bytes / 52e9 * 1e9) + 10'000;
  EXPECT_LT(total, copy_ns + 50'000) << "the three ran side by side";
  EXPECT_GE(total, copy_ns);
}

TEST_F(Streams, WorkOnOneEngineIsSerialised) {
  start("memory:256MiB");
  const size_t bytes = 52 * kMiB;
  CUdeviceptr a = alloc(bytes), b = alloc(bytes);
  void* up = nullptr;
  ASSERT_CU(cuMemAllocHost(&up, bytes));
  CUstream s1 = make_stream(), s2 = make_stream();
  uint64_t t0 = stats().virtual_ns;
  ASSERT_CU(cuMemcpyHtoDAsync(a, up, bytes, s1));
  ASSERT_CU(cuMemcpyHtoDAsync(b, up, bytes, s2));
  ASSERT_CU(cuCtxSynchronize());
  uint64_t copy_ns = static_cast<uint64_t>(bytes / 52e9 * 1e9) + 10'000;
  EXPECT_GE(stats().virtual_ns - t0, 2 * copy_ns);
}

TEST_F(Streams, VirtualTimeIsDeterministic) {
  auto run = [this] {
    start("memory:256MiB");
    CUstream s1 = make_stream(), s2 = make_stream();
    CUevent e = make_event();
    CUdeviceptr a = alloc(8 * kMiB), b = alloc(8 * kMiB);
    std::vector<char> host(8 * kMiB);
    for (int i = 0; i < 20; ++i) {
      EXPECT_CU(launch_fill(k, s1, a, 8 * kMiB, i, 30'000 + i * 1000));
      EXPECT_CU(cuEventRecord(e, s1));
      EXPECT_CU(cuStreamWaitEvent(s2, e, 0));
      EXPECT_CU(cuMemcpyDtoHAsync(host.data(), a, 8 * kMiB, s2));
      EXPECT_CU(simcuda::testkit::launch_copy(k, s1, b, a, kMiB, 20'000));
    }
    EXPECT_CU(cuCtxSynchronize());
    return stats().virtual_ns;
  };
  uint64_t first = run();
  EXPECT_GT(first, 0u);
  EXPECT_EQ(run(), first);
}

TEST_F(Streams, WaitEventOrdersWorkAndCountsTheStall) {
  start();
  CUstream producer = make_stream(), consumer = make_stream();
  CUevent produced = make_event(), t0 = make_event(), t1 = make_event();
  CUdeviceptr p = alloc(4096);
  ASSERT_CU(cuEventRecord(t0, producer));
  ASSERT_CU(launch_fill(k, producer, p, 4096, 3, 5'000'000));
  ASSERT_CU(cuEventRecord(produced, producer));
  ASSERT_CU(cuStreamWaitEvent(consumer, produced, 0));
  ASSERT_CU(launch_fill(k, consumer, p, 4096, 4, 1'000'000));
  ASSERT_CU(cuEventRecord(t1, consumer));
  ASSERT_CU(cuEventSynchronize(t1));
  EXPECT_GE(elapsed_ms(t0, t1), 6.0f) << "the consumer started after the producer ended";
  EXPECT_EQ(mismatches(p, 4096, 4), 0u);
  EXPECT_GE(stats().stall_ns, 4'900'000u);
  EXPECT_EQ(stats().hazards, 0u);
}

TEST_F(Streams, WorkIsAsynchronous) {
  start();
  CUstream s = make_stream();
  CUevent done = make_event();
  // 300 ms of real time on the worker, 10 ms of virtual time.
  ASSERT_CU(launch_spin(k, s, 300'000, 10'000'000));
  ASSERT_CU(cuEventRecord(done, s));
  EXPECT_EQ(stats().kernels, 0u) << "the calls returned while the kernel still runs";
  EXPECT_EQ(cuEventQuery(done), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms, done, done), CUDA_ERROR_NOT_READY);
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_CU(cuEventQuery(done));
  EXPECT_CU(cuStreamQuery(s));
}

// Note [Queries answer in virtual time]: a kernel the worker has run is not
// done for the host before the host's clock reaches its virtual end, and a
// query does not move the host there; polling gets there by the query cost.
TEST_F(Streams, QueriesAnswerByTheHostClock) {
  start();
  CUstream s = make_stream();
  CUevent done = make_event();
  CUdeviceptr p = alloc(4096);
  ASSERT_CU(launch_fill(k, s, p, 4096, 7, 5'000'000));
  ASSERT_CU(cuEventRecord(done, s));
  while (stats().kernels < 1)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // run by its worker
  const uint64_t before = stats().virtual_ns;
  EXPECT_EQ(cuEventQuery(done), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  EXPECT_EQ(stats().host_wait_ns, 0u) << "a query is not a wait";
  uint64_t polls = 0;
  while (cuEventQuery(done) == CUDA_ERROR_NOT_READY)
    ++polls;
  // 5 ms of kernel at 1 us a query, less the host time already spent.
  EXPECT_GT(polls, 4'900u);
  EXPECT_LT(polls, 5'100u);
  EXPECT_CU(cuStreamQuery(s));
  EXPECT_GE(stats().virtual_ns, before);
  EXPECT_LT(stats().virtual_ns, before + 3'000)
      << "the host got to the kernel's end and paid for its two last queries, no more";
  EXPECT_EQ(stats().host_wait_ns, 0u);
  EXPECT_EQ(mismatches(p, 4096, 7), 0u);
}

// Note [A stream's queue is finite]: the launch after `queue_depth`
// unfinished operations on one stream waits for the oldest to end; another
// stream has a queue of its own, and 0 lifts the limit.
TEST_F(Streams, AFullQueueHoldsTheHostBack) {
  start("queue_depth:8,host_costs:false");
  CUstream s = make_stream(), other = make_stream();
  for (int i = 0; i < 8; ++i)
    ASSERT_CU(launch_spin(k, s, 0, 1'000'000));
  const uint64_t queued = simcuda_host_clock_ns();
  EXPECT_LT(queued, 1'000'000u) << "eight fit without a wait";
  EXPECT_EQ(stats().host_wait_ns, 0u);
  ASSERT_CU(launch_spin(k, other, 0, 1'000'000));
  EXPECT_LT(simcuda_host_clock_ns(), 1'000'000u) << "another stream's queue is not full";
  ASSERT_CU(launch_spin(k, s, 0, 1'000'000));
  EXPECT_GE(simcuda_host_clock_ns(), 1'000'000u) << "the ninth waited for the first to end";
  EXPECT_LT(simcuda_host_clock_ns(), 2'000'000u) << "and no longer";
  EXPECT_GT(stats().host_wait_ns, 0u);
  ASSERT_CU(launch_spin(k, s, 0, 1'000'000));
  EXPECT_GE(simcuda_host_clock_ns(), 2'000'000u) << "the tenth, for the second";
  ASSERT_CU(cuCtxSynchronize());
}

// Launches `n` kernels of 100 ms on a new stream, longer than the launches
// of all of them: none has ended when the last is launched unless the host
// waited. Returns the stream.
CUstream launch_long_kernels(const simcuda::testkit::Kernels& k, int n) {
  CUstream s = nullptr;
  EXPECT_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < n; ++i)
    EXPECT_CU(launch_spin(k, s, 0, 100'000'000));
  return s;
}

TEST_F(Streams, QueueDepthZeroHasNoLimit) {
  start("queue_depth:0,host_costs:false");
  launch_long_kernels(k, 2000);
  EXPECT_LT(simcuda_host_clock_ns(), 100'000'000u) << "only the launches' own cost";
  EXPECT_EQ(stats().host_wait_ns, 0u);
  ASSERT_CU(cuCtxSynchronize());
}

TEST_F(Streams, TheDefaultQueueHoldsAThousandAndTwentyFour) {
  start("host_costs:false");
  CUstream s = launch_long_kernels(k, 1024);
  EXPECT_LT(simcuda_host_clock_ns(), 100'000'000u);
  EXPECT_EQ(stats().host_wait_ns, 0u);
  ASSERT_CU(launch_spin(k, s, 0, 100'000'000));
  EXPECT_GE(simcuda_host_clock_ns(), 100'000'000u) << "the 1025th waited for the first";
  ASSERT_CU(cuCtxSynchronize());
}

TEST_F(Streams, EventErrors) {
  start();
  CUevent never = make_event(), untimed = make_event(CU_EVENT_DISABLE_TIMING), timed = make_event();
  EXPECT_CU(cuEventQuery(never)) << "a never-recorded event is complete";
  EXPECT_CU(cuEventSynchronize(never));
  float ms = 0;
  EXPECT_EQ(cuEventElapsedTime(&ms, never, timed), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuEventRecord(untimed, nullptr));
  ASSERT_CU(cuEventRecord(timed, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(cuEventElapsedTime(&ms, untimed, timed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventCreate(&never, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuEventDestroy(untimed));
  EXPECT_EQ(cuEventQuery(untimed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuEventRecord(reinterpret_cast<CUevent>(0x10), nullptr), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Streams, StreamHandles) {
  start();
  CUstream s = make_stream(0);
  unsigned flags = 7;
  ASSERT_CU(cuStreamGetFlags(s, &flags));
  EXPECT_EQ(flags, 0u);
  CUcontext owner = nullptr;
  ASSERT_CU(cuStreamGetCtx(s, &owner));
  EXPECT_EQ(owner, ctx);
  CUdevice dev = -1;
  ASSERT_CU(cuStreamGetDevice(nullptr, &dev));
  EXPECT_EQ(dev, 0);
  EXPECT_EQ(cuStreamCreate(&s, 0x10), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuStreamDestroy(s));
  EXPECT_EQ(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamDestroy(nullptr), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
  EXPECT_CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
}

// `_ptsz` entry points resolve stream 0 to the calling thread's own stream.
TEST_F(Streams, PerThreadDefaultStreamsAreDistinct) {
  start();
  uint64_t real_us = 300'000, ns = 1000;
  void* params[] = {&real_us, &ns};
  ASSERT_CU(cuLaunchKernel_ptsz(k.spin, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  EXPECT_EQ(cuStreamQuery_ptsz(nullptr), CUDA_ERROR_NOT_READY);
  CUresult other_thread = CUDA_ERROR_UNKNOWN;
  std::thread([&] {
    cuCtxSetCurrent(ctx);
    other_thread = cuStreamQuery_ptsz(nullptr);
  }).join();
  EXPECT_CU(other_thread) << "another thread's per-thread stream is empty";
  ASSERT_CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
}

TEST_F(Streams, LegacyStreamWaitsForBlockingStreams) {
  start();
  CUstream blocking = make_stream(0), non_blocking = make_stream(CU_STREAM_NON_BLOCKING);
  ASSERT_CU(launch_spin(k, blocking, 200'000));
  ASSERT_CU(launch_spin(k, non_blocking, 200'000));
  CUevent e = make_event();
  ASSERT_CU(cuEventRecord(e, nullptr));
  ASSERT_CU(cuEventSynchronize(e));
  EXPECT_CU(cuStreamQuery(blocking)) << "the NULL stream's event waited for it";
}

TEST_F(Streams, ContextsHaveTheirOwnThreads) {
  start();
  CUresult from_new_thread = CUDA_SUCCESS;
  std::thread([&] {
    CUdeviceptr p = 0;
    from_new_thread = cuMemAlloc(&p, 16);
  }).join();
  EXPECT_EQ(from_new_thread, CUDA_ERROR_INVALID_CONTEXT) << "no context is current there";
}

}  // namespace
