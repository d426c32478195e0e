// Golden tests: every captured fixture imports, keeps the Trace invariants,
// and gives the ops, tensors and peak bytes that the source itself reports
// (read independently by scripts/fixture_facts.py into expected.json).
#include <gtest/gtest.h>

#include <algorithm>

#include "policy/simulator.h"
#include "policy/workload.h"
#include "tests/tracer/import/fixtures.h"
#include "tracer/import/import.h"

namespace cuswap::trace::import_test {
namespace {

class Golden : public ::testing::TestWithParam<Expected> {};

uint64_t count_tensors(const Trace& t, const std::string& allocator, bool persistent) {
  return static_cast<uint64_t>(std::count_if(t.tensors.begin(), t.tensors.end(), [&](const Tensor& x) {
    return x.allocator == allocator && x.persistent == persistent;
  }));
}

const AllocatorReport* find_allocator(const Trace& t, const std::string& name) {
  for (const AllocatorReport& a : t.allocators)
    if (a.allocator == name) return &a;
  return nullptr;
}

TEST_P(Golden, MatchesTheSource) {
  const Expected& e = GetParam();
  Trace trace;
  std::string error;
  ASSERT_TRUE(import_trace(e.path, ImportOptions{}, trace, error)) << error;
  EXPECT_EQ(validate(trace), "");
  EXPECT_EQ(format_name(trace.format), e.format);
  // GPU captures: device work is read too; TF1's aggregate lanes are
  // dropped and kernels join their executor ops.
  EXPECT_EQ(trace.ops.size(), e.ops + e.device_ops - e.aggregate_events - e.joinable_kernels);
  if (e.allocator.empty()) {  // captured without memory events
    EXPECT_TRUE(trace.tensors.empty());
    return;
  }
  if (e.running_peak_bytes && e.reported_peak_bytes == 0) {
    // No count of its own: the events' running sum is the figure.
    EXPECT_FALSE(trace.reported_peak_device_bytes.has_value());
    EXPECT_EQ(count_tensors(trace, e.allocator, false), e.tensors);
    return;
  }

  // The allocator the figures are about is the device's, and its peak is
  // the one reported.
  const AllocatorReport* allocator = find_allocator(trace, e.allocator);
  ASSERT_NE(allocator, nullptr) << e.allocator;
  EXPECT_EQ(allocator->space, MemorySpace::device);
  ASSERT_TRUE(trace.reported_peak_device_bytes.has_value());
  EXPECT_EQ(*trace.reported_peak_device_bytes, e.reported_peak_bytes);

  if (e.format == "tf1-timeline" || e.format == "tf1-step-stats") {
    EXPECT_EQ(trace.tensors.size(), e.tensors);
    EXPECT_EQ(allocator->peak_bytes, e.reported_peak_bytes);
    for (const auto& [name, peak] : e.counter_peak_bytes) {
      const AllocatorReport* a = find_allocator(trace, name);
      ASSERT_NE(a, nullptr) << name;
      EXPECT_EQ(a->peak_bytes, peak) << name;
    }
  } else if (e.format == "tf2-memory-profile") {
    EXPECT_TRUE(trace.sampled);
    EXPECT_EQ(allocator->peak_bytes, e.reported_peak_bytes);
    // Every snapshot read is an allocation (a tensor), a paired free, or a
    // free without its allocation (a persistent tensor).
    uint64_t events = 0;
    for (const Tensor& t : trace.tensors)
      events += t.persistent ? 1 : (t.free_ns ? 2 : 1);
    const uint64_t expected_events =
        e.sampled_snapshots.value_or(0) ? *e.sampled_snapshots : e.snapshots.value_or(0);
    EXPECT_EQ(events, expected_events);
  } else if (e.format == "tf2-xplane") {
    EXPECT_EQ(count_tensors(trace, e.allocator, false), e.tensors);
    // Every free ends a tensor, allocated in the profile or before it.
    uint64_t frees = 0;
    for (const Tensor& t : trace.tensors)
      frees += t.allocator == e.allocator && t.free_ns;
    EXPECT_EQ(frees, e.deallocations.value_or(0));
    EXPECT_EQ(allocator->peak_bytes, e.reported_peak_bytes);
  } else if (e.format == "torch-profiler" || e.format == "torch-snapshot") {
    EXPECT_EQ(count_tensors(trace, e.allocator, false), e.tensors);
    EXPECT_EQ(allocator->peak_bytes, e.reported_peak_bytes);
    uint64_t frees = 0;
    for (const Tensor& t : trace.tensors)
      frees += t.allocator == e.allocator && t.free_ns.has_value();
    EXPECT_EQ(frees, e.frees.value_or(0));
  } else {
    FAIL() << "no golden rule for the format " << e.format;
  }
  EXPECT_FALSE(trace.sampled && e.format != "tf2-memory-profile");
}

// Each sample op of the source has an op of that name covering it, at the
// same time from the origin (TF1: the trace's; PyTorch and TF2: the first
// kernel of the device in the planned step). `device` -1: any device.
void expect_sample_ops(const Trace& trace, const policy::Workload& w, const Expected& e,
                       int device) {
  int64_t origin_ns = 0;
  if (e.format != "tf1-timeline") {
    const int64_t from = w.iteration == kNoIteration ? 0 : trace.iterations[w.iteration].start_ns;
    origin_ns = INT64_MAX;
    for (const Op& op : trace.ops)
      if (op.device == device && !op.is_copy && op.start_ns >= from)
        origin_ns = std::min(origin_ns, op.start_ns);
  }
  ASSERT_FALSE(e.sample_ops.empty());
  constexpr int64_t kSlackNs = 1000;  // sources in whole or fractional microseconds
  for (const Expected::SampleOp& s : e.sample_ops) {
    const int64_t start = origin_ns + s.start_ns;
    const bool found = std::any_of(trace.ops.begin(), trace.ops.end(), [&](const Op& op) {
      return (device < 0 || op.device == device) && op.name == s.name &&
             op.start_ns <= start + kSlackNs &&
             op.start_ns + op.duration_ns + kSlackNs >= start + s.duration_ns;
    });
    EXPECT_TRUE(found) << s.name << " at " << s.start_ns << " ns for " << s.duration_ns << " ns";
  }
}

// GPU captures: the step on the device's clock, its ops and its memory.
class GoldenGpu : public ::testing::TestWithParam<Expected> {};

TEST_P(GoldenGpu, DeviceTimeAndPeak) {
  const Expected& e = GetParam();
  Trace trace;
  std::string error;
  ASSERT_TRUE(import_trace(e.path, ImportOptions{}, trace, error)) << error;
  ASSERT_TRUE(e.device.has_value());
  const int device = static_cast<int>(*e.device);

  // The infinite-memory step takes the step's span on the device, and at
  // least the busy time of its busiest stream.
  policy::Workload w;
  policy::WorkloadOptions options;
  options.device = device;
  ASSERT_TRUE(policy::build_workload(trace, options, w, error)) << error;
  const int64_t step_ns = policy::infinite_memory_starts(w, 1.0).back();
  const auto span = static_cast<double>(*e.step_span_ns);
  EXPECT_NEAR(static_cast<double>(step_ns), span, 0.10 * span);
  EXPECT_GE(step_ns, static_cast<int64_t>(*e.busiest_stream_busy_ns));

  expect_sample_ops(trace, w, e, device);

  // The device's peak: the allocator's own count where it keeps one, else
  // the running sum of the events; the planned workload sees the same.
  if (e.allocator.empty()) return;
  const uint64_t source_peak = e.reported_peak_bytes ? e.reported_peak_bytes : *e.running_peak_bytes;
  EXPECT_EQ(device_live_peak(trace, device).bytes, source_peak);
  const std::vector<uint64_t> live = policy::live_bytes_per_op(w);
  const uint64_t window_peak = *std::max_element(live.begin(), live.end());
  EXPECT_LE(window_peak, source_peak);
}

// Captures on a CPU with op times of their own (TF1 timelines): the ops
// keep them, and one window spans them.
class GoldenTimes : public ::testing::TestWithParam<Expected> {};

TEST_P(GoldenTimes, OpsKeepTheirTimes) {
  const Expected& e = GetParam();
  Trace trace;
  std::string error;
  ASSERT_TRUE(import_trace(e.path, ImportOptions{}, trace, error)) << error;
  policy::Workload w;
  ASSERT_TRUE(policy::build_workload(trace, {}, w, error)) << error;
  EXPECT_EQ(policy::infinite_memory_starts(w, 1.0).back(), static_cast<int64_t>(*e.step_span_ns));
  expect_sample_ops(trace, w, e, -1);
}

std::vector<Expected> timed_cpu_fixtures() {
  std::vector<Expected> out;
  for (const Expected& e : load_expected())
    if (e.step_span_ns && !e.busiest_stream_busy_ns) out.push_back(e);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTimes, ::testing::ValuesIn(timed_cpu_fixtures()),
                         [](const ::testing::TestParamInfo<Expected>& param_info) {
                           return test_name(param_info.param.file);
                         });

std::vector<Expected> gpu_fixtures() {
  std::vector<Expected> out;
  for (const Expected& e : load_expected())
    if (e.step_span_ns && e.busiest_stream_busy_ns) out.push_back(e);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenGpu, ::testing::ValuesIn(gpu_fixtures()),
                         [](const ::testing::TestParamInfo<Expected>& param_info) {
                           return test_name(param_info.param.file);
                         });

TEST(GoldenFixtures, AreAllPresent) {
  std::vector<std::string> missing;
  const std::vector<Expected> all = load_expected(&missing);
  EXPECT_TRUE(missing.empty()) << missing.front();
  // Every format the captures cover, and the snapshot.
  for (std::string_view format : {"tf1-timeline", "tf1-step-stats", "tf2-xplane",
                                  "tf2-memory-profile", "torch-profiler", "torch-snapshot"})
    EXPECT_TRUE(std::any_of(all.begin(), all.end(),
                            [&](const Expected& e) { return e.format == format; }))
        << format;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Golden, ::testing::ValuesIn(load_expected()),
                         [](const ::testing::TestParamInfo<Expected>& param_info) {
                           return test_name(param_info.param.file);
                         });

}  // namespace
}  // namespace cuswap::trace::import_test
