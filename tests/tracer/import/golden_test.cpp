// Golden tests: every captured fixture imports, keeps the Trace invariants,
// and gives the ops, tensors and peak bytes that the source itself reports
// (read independently by scripts/fixture_facts.py into expected.json).
#include <gtest/gtest.h>

#include <algorithm>

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
  EXPECT_EQ(trace.ops.size(), e.ops);

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
    uint64_t frees = count_tensors(trace, e.allocator, true);
    for (const Tensor& t : trace.tensors)
      frees += t.allocator == e.allocator && !t.persistent && t.free_ns;
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
