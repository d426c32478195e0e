// summarize() on the fixture (Note [The fixture] in support.h), whose
// numbers are known, and on traces with anomalies.
#include <gtest/gtest.h>

#include "tests/tracer/support.h"
#include "tracer/trace_summary.h"

namespace cuswap::trace::test {
namespace {

using namespace fixture;

TEST(TraceSummary, TheFixturesNumbers) {
  TempDir dir;
  write_fixture(dir.path("f.cst"));
  const TraceSummary s = summarize(read_ok(dir.path("f.cst")), 3);

  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.events, kEvents);
  EXPECT_EQ(s.threads, 1u);
  EXPECT_EQ(s.header.devices.size(), 2u);
  EXPECT_EQ(s.buffers, kBuffers);
  EXPECT_EQ(s.peak_bytes, kPeakBytes);
  EXPECT_EQ(s.live_at_end, kLiveAtEnd);
  EXPECT_EQ(s.live_bytes_at_end, kLiveBytesAtEnd);
  EXPECT_EQ(s.unmatched_frees, 0u);
  EXPECT_EQ(s.launches, kLaunches);
  EXPECT_EQ(s.kernels, 3u);
  EXPECT_EQ(s.launches_unknown_access, 3u);
  EXPECT_EQ(s.iterations, kIterations);

  ASSERT_EQ(s.top_kernels.size(), 3u);  // ties broken by name
  EXPECT_EQ(s.top_kernels[0].name, "matmul");
  EXPECT_EQ(s.top_kernels[1].name, "relu");
  EXPECT_EQ(s.top_kernels[2].name, "softmax");
  for (const KernelLaunches& k : s.top_kernels)
    EXPECT_EQ(k.launches, 3u);

  ASSERT_EQ(s.top_buffers.size(), 3u);
  EXPECT_EQ(s.top_buffers[0].buffer_id, 1u);  // the weights: 64 MiB, never freed
  EXPECT_EQ(s.top_buffers[0].size_bytes, 64 * kMiB);
  EXPECT_FALSE(s.top_buffers[0].free_time_ns);
  EXPECT_EQ(s.top_buffers[0].launches, 3u);
  EXPECT_EQ(s.top_buffers[1].buffer_id, 3u);  // the first activation, 16 MiB
  ASSERT_TRUE(s.top_buffers[1].free_time_ns);
  EXPECT_GE(*s.top_buffers[1].free_time_ns, s.top_buffers[1].alloc_time_ns);
  EXPECT_EQ(s.top_buffers[1].launches, 2u);

  ASSERT_EQ(s.per_iteration.size(), kIterations);
  for (size_t i = 0; i < kIterations; ++i) {
    const IterationSummary& it = s.per_iteration[i];
    EXPECT_EQ(it.ordinal, i);
    EXPECT_EQ(it.launches, 3u);
    EXPECT_EQ(it.allocs, 2u);
    EXPECT_EQ(it.frees, 2u);  // the last runs to the end: the input's free
    EXPECT_EQ(it.peak_bytes, kPeakBytes);
    if (i > 0) {
      EXPECT_EQ(it.start_ns, s.per_iteration[i - 1].start_ns + s.per_iteration[i - 1].duration_ns);
    }
  }

  ASSERT_EQ(s.copies.size(), 2u);
  EXPECT_EQ(s.copies[0].direction, CopyDirection::host_to_device);
  EXPECT_EQ(s.copies[0].copies, 1u);
  EXPECT_EQ(s.copies[0].bytes, kHostToDeviceBytes);
  EXPECT_EQ(s.copies[1].direction, CopyDirection::device_to_host);
  EXPECT_EQ(s.copies[1].copies, 3u);
  EXPECT_EQ(s.copies[1].bytes, kDeviceToHostBytes);
  EXPECT_EQ(s.sets, 1u);
  EXPECT_EQ(s.set_bytes, kSetBytes);
  ASSERT_EQ(s.vmm.size(), 2u);
  EXPECT_EQ(s.vmm[0], std::make_pair(VmmOp::create, uint64_t{1}));

  ASSERT_TRUE(s.end);
  ASSERT_EQ(s.end->counters.size(), 2u);
  EXPECT_EQ(s.end->counters[1].name, "cuLaunchKernel");
  EXPECT_EQ(s.end->counters[1].value, 9u);
}

TEST(TraceSummary, AnomaliesAreCountedNotFatal) {
  TempDir dir;
  std::string error;
  auto r = Recorder::open(options_for(dir.path("a.cst")), error);
  ASSERT_TRUE(r) << error;
  r->record_free(99, 0, FreeKind::sync);  // never allocated
  r->record_alloc(1, 0x1000, 100, 0, 0, AllocKind::linear);
  r->record_alloc(1, 0x2000, 50, 0, 0, AllocKind::linear);       // id again while live
  r->record_launch(0, 0, 0, std::vector<uint64_t>{1, 1, 1}, 0);  // listed thrice, counts once
  r->close();
  const TraceSummary s = summarize(read_ok(dir.path("a.cst")));
  EXPECT_EQ(s.unmatched_frees, 1u);
  EXPECT_EQ(s.reused_ids, 1u);
  EXPECT_EQ(s.buffers, 2u);
  EXPECT_EQ(s.peak_bytes, 100u);
  EXPECT_EQ(s.live_bytes_at_end, 50u);
  EXPECT_EQ(s.iterations, 0u);
  ASSERT_EQ(s.top_buffers.size(), 2u);
  EXPECT_EQ(s.top_buffers[1].launches, 1u);
  ASSERT_EQ(s.top_kernels.size(), 1u);
  EXPECT_EQ(s.top_kernels[0].name, "");
}

}  // namespace
}  // namespace cuswap::trace::test
