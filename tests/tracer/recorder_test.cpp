// The recorder, read back through the reader: every event and field from
// several threads, sequence order, kernel names, bounded memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "tests/tracer/support.h"
#include "tracer/trace_summary.h"

namespace cuswap::trace::test {
namespace {

constexpr int kThreads = 4;
constexpr int kStepsPerThread = 400;

// What thread `t` records at step `i`: every event type and field varies
// with (t, i), so a field that is lost, swapped or mis-decoded shows.
struct Step {
  EventData data;
};

std::vector<Step> steps_for(int t, const std::vector<uint32_t>& kernels) {
  std::vector<Step> steps;
  const uint64_t base = (uint64_t(t) + 1) << 32;
  for (int i = 0; i < kStepsPerThread; ++i) {
    const uint64_t id = base + uint64_t(i) + 1;
    const auto ui = static_cast<uint64_t>(i);
    steps.push_back(
        {AllocEvent{id, 0x7f0000000000 + id * 256, (ui + 1) * 4096 + uint64_t(t),
                    uint64_t(t) * 0x1000, t % 2 ? -1 : t, static_cast<AllocKind>(i % 5)}});
    std::vector<uint64_t> buffers;
    for (int k = 0; k < i % 7; ++k)
      buffers.push_back(k % 3 == 2 ? kNoBuffer : id + uint64_t(k) * 3 - 5);
    steps.push_back({LaunchEvent{kernels[size_t(i) % kernels.size()], uint64_t(t), t,
                                 static_cast<uint8_t>(i % 8), buffers}});
    steps.push_back({CopyEvent{id, i % 2 ? id - 1 : kNoBuffer, ui * 1000003,
                               static_cast<CopyDirection>(i % 6), uint64_t(t), i % 5 == 0}});
    if (i % 3 == 0)
      steps.push_back(
          {VmmEvent{static_cast<VmmOp>(i % 4), id << 12, ui << 21, ~ui}});  // big values
    steps.push_back({FreeEvent{id, uint64_t(t) + 7, static_cast<FreeKind>(i % 2)}});
    if (t == 0 && i % 50 == 0) steps.push_back({IterationEvent{}});
  }
  return steps;
}

void record(Recorder& r, const Step& step) {
  std::visit(
      [&](const auto& d) {
        using T = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<T, AllocEvent>)
          r.record_alloc(d.buffer_id, d.address, d.size_bytes, d.stream, d.device, d.kind);
        else if constexpr (std::is_same_v<T, FreeEvent>)
          r.record_free(d.buffer_id, d.stream, d.kind);
        else if constexpr (std::is_same_v<T, LaunchEvent>)
          r.record_launch(d.kernel_id, d.stream, d.device, d.buffers, d.flags);
        else if constexpr (std::is_same_v<T, CopyEvent>)
          r.record_copy(d.dst_buffer, d.src_buffer, d.bytes, d.direction, d.stream, d.is_set);
        else if constexpr (std::is_same_v<T, VmmEvent>)
          r.record_vmm(d.op, d.address, d.size_bytes, d.handle);
        else
          r.record_iteration();
      },
      step.data);
}

// Which test thread recorded an event stream: its first event is an alloc
// whose id carries the thread index in the high bits.
int test_thread_of(const Event& first) {
  return int(first.as<AllocEvent>().buffer_id >> 32) - 1;
}

void record_and_check_round_trip(RecorderOptions options) {
  TempDir dir;
  options.path = dir.path("round.cst");
  std::string error;
  auto r = Recorder::open(options, error);
  ASSERT_TRUE(r) << error;
  const std::vector<uint32_t> kernels = {r->kernel_id("gemm"), r->kernel_id("conv2d"),
                                         r->kernel_id("reduce")};
  std::vector<std::vector<Step>> expected;
  for (int t = 0; t < kThreads; ++t)
    expected.push_back(steps_for(t, kernels));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (const Step& s : expected[size_t(t)])
        record(*r, s);
    });
  for (std::thread& th : threads)
    th.join();
  const Counter counters[] = {{"calls", 12345}, {"another counter", 0}};
  r->close(counters);

  const CstTrace trace = read_ok(options.path);
  ASSERT_TRUE(trace.complete());
  EXPECT_EQ(trace.header.cuswap_version, options.cuswap_version);
  EXPECT_EQ(trace.header.configuration, options.configuration);
  ASSERT_EQ(trace.header.devices.size(), options.devices.size());
  for (size_t i = 0; i < options.devices.size(); ++i) {
    EXPECT_EQ(trace.header.devices[i].ordinal, options.devices[i].ordinal);
    EXPECT_EQ(trace.header.devices[i].name, options.devices[i].name);
    EXPECT_EQ(trace.header.devices[i].total_bytes, options.devices[i].total_bytes);
  }
  EXPECT_EQ(trace.header.pid, uint64_t(::getpid()));

  // Sequence numbers are dense and sorted; per thread, the events come in
  // the order they were recorded, and time never goes back.
  size_t total = 0;
  for (const auto& e : expected)
    total += e.size();
  ASSERT_EQ(trace.events.size(), total);
  for (size_t i = 0; i < trace.events.size(); ++i)
    ASSERT_EQ(trace.events[i].seq, i);
  std::map<uint32_t, std::vector<const Event*>> by_thread;
  for (const Event& e : trace.events)
    by_thread[e.thread].push_back(&e);
  ASSERT_EQ(by_thread.size(), size_t(kThreads));
  std::vector<bool> seen(kThreads, false);
  uint64_t ordinal = 0;
  for (const auto& [tid, events] : by_thread) {
    const int t = test_thread_of(*events.front());
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    EXPECT_FALSE(seen[size_t(t)]) << "two OS threads map to test thread " << t;
    seen[size_t(t)] = true;
    const std::vector<Step>& want = expected[size_t(t)];
    ASSERT_EQ(events.size(), want.size());
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& got = *events[i];
      EventData want_data = want[i].data;
      if (auto* it = std::get_if<IterationEvent>(&want_data)) it->ordinal = ordinal++;
      EXPECT_TRUE(got.data == want_data)
          << "thread " << t << " step " << i << ": " << describe(got);
      if (i > 0) {
        EXPECT_GE(got.time_ns, events[i - 1]->time_ns) << describe(got);
      }
    }
  }

  // The end record: totals by type and the counters, as given.
  ASSERT_TRUE(trace.end);
  EXPECT_EQ(trace.end->events, total);
  EXPECT_EQ(trace.end->chunks, trace.chunks);
  EXPECT_EQ(trace.end->dropped_events, 0u);
  ASSERT_EQ(trace.end->counters.size(), 2u);
  EXPECT_EQ(trace.end->counters[0].name, "calls");
  EXPECT_EQ(trace.end->counters[0].value, 12345u);
  EXPECT_EQ(trace.end->counters[1].name, "another counter");
  EXPECT_EQ(trace.end->counters[1].value, 0u);
  EXPECT_EQ(r->dropped_events(), 0u);
}

TEST(Recorder, RoundTripFromSeveralThreadsDefaultBuffers) {
  record_and_check_round_trip(options_for("unused"));
}

TEST(Recorder, RoundTripFromSeveralThreadsSmallBuffers) {
  RecorderOptions o = options_for("unused");
  o.buffer_bytes = 300;
  o.max_buffers = 3;
  record_and_check_round_trip(o);
}

TEST(Recorder, TimesAreMonotonicNanosecondsSinceOpen) {
  using namespace std::chrono;
  TempDir dir;
  const std::string path = dir.path("time.cst");
  const auto before = steady_clock::now();  // CLOCK_MONOTONIC
  std::string error;
  auto r = Recorder::open(options_for(path), error);
  ASSERT_TRUE(r) << error;
  std::this_thread::sleep_for(milliseconds(20));
  r->record_iteration();
  std::this_thread::sleep_for(milliseconds(30));
  r->record_iteration();
  r->close();
  const auto elapsed_ns =
      uint64_t(duration_cast<nanoseconds>(steady_clock::now() - before).count());
  const CstTrace trace = read_ok(path);
  ASSERT_EQ(trace.events.size(), 2u);
  const uint64_t a = trace.events[0].time_ns, b = trace.events[1].time_ns;
  EXPECT_GE(a, 20'000'000u);
  EXPECT_GE(b - a, 30'000'000u);
  EXPECT_LE(b, trace.end->end_time_ns);
  EXPECT_LE(trace.end->end_time_ns, elapsed_ns);
}

TEST(Recorder, EmptyTraceIsValid) {
  TempDir dir;
  std::string error;
  auto r = Recorder::open(options_for(dir.path("empty.cst")), error);
  ASSERT_TRUE(r) << error;
  r->close();
  const CstTrace trace = read_ok(dir.path("empty.cst"));
  EXPECT_TRUE(trace.complete());
  EXPECT_TRUE(trace.events.empty());
  EXPECT_EQ(trace.chunks, 0u);
  EXPECT_EQ(trace.end->counters.size(), 0u);
}

TEST(Recorder, TimingsAndCuswapsOwnCopiesRoundTrip) {
  TempDir dir;
  std::string error;
  auto r = Recorder::open(options_for(dir.path("swap.cst")), error);
  ASSERT_TRUE(r) << error;
  const uint32_t k = r->kernel_id("relu");
  const uint64_t ids[] = {3};
  const uint64_t launch = r->record_launch(k, 5, 0, ids, 0);
  ASSERT_NE(launch, kNoSeq);
  r->record_eviction(3, 1 << 21, EvictReason::budget, 1000, 4500);
  r->record_wait(3, 5);
  const uint64_t prefetch = r->record_prefetch(3, 1 << 21, PrefetchReason::on_demand, 9);
  ASSERT_EQ(prefetch, launch + 3);
  r->record_timing(launch, 123, 2'000'000);
  r->record_timing(prefetch, 7000, 40'000);
  r->close();
  const CstTrace t = read_ok(dir.path("swap.cst"));
  ASSERT_EQ(t.events.size(), 6u);
  EXPECT_EQ(t.events[1].as<EvictionEvent>(),
            (EvictionEvent{3, 1 << 21, EvictReason::budget, 1000, 3500}));
  EXPECT_EQ(t.events[2].as<WaitEvent>(), (WaitEvent{3, 5}));
  EXPECT_EQ(t.events[3].as<PrefetchEvent>(),
            (PrefetchEvent{3, 1 << 21, PrefetchReason::on_demand, 9}));
  EXPECT_EQ(t.events[4].as<TimingEvent>(), (TimingEvent{launch, 123, 2'000'000}));
  EXPECT_EQ(t.events[5].as<TimingEvent>(), (TimingEvent{prefetch, 7000, 40'000}));
  ASSERT_EQ(t.end->events_by_type.size(), kEventTypeCount);
  EXPECT_EQ(t.end->events_by_type[static_cast<size_t>(EventType::timing) - 1], 2u);

  const TraceSummary s = summarize(t);
  EXPECT_EQ(s.timed_launches, 1u);
  EXPECT_EQ(s.kernel_time_ns, 2'000'000u);
  EXPECT_EQ(s.prefetch_copy_time_ns, 40'000u);
  EXPECT_EQ(s.evictions, 1u);
  EXPECT_EQ(s.bytes_to_host, 1u << 21);
  EXPECT_EQ(s.prefetches_on_demand, 1u);
  EXPECT_EQ(s.prefetch_waits, 1u);
}

// 2.1: an extension event, counted in the total only, read back field by field.
TEST(Recorder, IterationStatsRoundTrip) {
  TempDir dir;
  std::string error;
  auto r = Recorder::open(options_for(dir.path("stats.cst")), error);
  ASSERT_TRUE(r) << error;
  const IterationStats first{1, 0, 7, 0, 0, 9, 3u << 21, 7u << 21, false};
  const IterationStats second{2, 12, 1, 2, 1'500'000, 14, uint64_t{1} << 40, 5u << 21, true};
  r->record_iteration_stats(first);
  r->record_wait(3, 5);
  r->record_iteration_stats(second);
  r->close();
  const CstTrace t = read_ok(dir.path("stats.cst"));
  EXPECT_EQ(t.header.format_minor, 1u);
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[0].type(), EventType::iteration_stats);
  EXPECT_EQ(t.events[0].as<IterationStatsEvent>(), first);
  EXPECT_EQ(t.events[1].as<WaitEvent>(), (WaitEvent{3, 5}));
  EXPECT_EQ(t.events[2].as<IterationStatsEvent>(), second);
  EXPECT_EQ(t.end->events, 3u);
  EXPECT_EQ(t.end->events_by_type[static_cast<size_t>(EventType::wait) - 1], 1u);
  const TraceSummary s = summarize(t);
  ASSERT_EQ(s.cuswap_iterations.size(), 2u);
  EXPECT_EQ(s.cuswap_iterations[1], second);
}

TEST(Recorder, KernelIdsAreStableAndDefinedBeforeUse) {
  TempDir dir;
  RecorderOptions o = options_for(dir.path("names.cst"));
  o.buffer_bytes = 256;  // many chunks,
  o.max_buffers = 1;     // each written before the next: names arrive in several records
  std::string error;
  auto r = Recorder::open(o, error);
  ASSERT_TRUE(r) << error;
  EXPECT_EQ(r->kernel_id("k0"), 1u);
  EXPECT_EQ(r->kernel_id("k0"), 1u);
  std::vector<std::string> names = {"k0"};
  for (int i = 1; i < 40; ++i) {
    names.push_back("kernel number " + std::to_string(i) + std::string(size_t(i), 'x'));
    const uint32_t id = r->kernel_id(names.back());
    EXPECT_EQ(id, uint32_t(i + 1));
    EXPECT_EQ(r->kernel_id(names.back()), id);
    for (int k = 0; k < 5; ++k)
      r->record_launch(id, 0, 0, {}, 0);
    r->record_launch(1, 0, 0, {}, 0);
  }
  r->record_launch(1000, 0, 0, {}, 0);  // never issued: recorded as unnamed
  r->close();

  const CstTrace trace = read_ok(o.path);
  ASSERT_EQ(trace.kernel_names.size(), names.size() + 1);
  EXPECT_EQ(trace.kernel_names[0], "");
  for (size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(trace.kernel_names[i + 1], names[i]);
  size_t launches = 0;
  for (const Event& e : trace.events) {
    const auto& l = e.as<LaunchEvent>();
    ++launches;
    if (l.kernel_id == 0) continue;
    EXPECT_LT(trace.kernel_name_offsets[l.kernel_id], e.offset)
        << "kernel " << l.kernel_id << " used before its name";
  }
  EXPECT_EQ(launches, 39u * 6 + 1);
  EXPECT_EQ(trace.events.back().as<LaunchEvent>().kernel_id, 0u);
  const std::set<uint64_t> names_records(trace.kernel_name_offsets.begin() + 1,
                                         trace.kernel_name_offsets.end());
  EXPECT_GT(names_records.size(), 3u) << "names should arrive in several records";
}

TEST(Recorder, BoundedMemoryWaitsButLosesNothing) {
  TempDir dir;
  RecorderOptions o = options_for(dir.path("bounded.cst"));
  o.buffer_bytes = 256;
  o.max_buffers = 2;  // fewer buffers than threads
  std::string error;
  auto r = Recorder::open(o, error);
  ASSERT_TRUE(r) << error;
  const uint32_t k = r->kernel_id("k");
  constexpr int kEach = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const uint64_t ids[] = {uint64_t(t) << 20 | uint64_t(i), 2, 3};
        r->record_launch(k, uint64_t(t), 0, ids, 0);
      }
    });
  for (std::thread& th : threads)
    th.join();
  r->close();
  EXPECT_GT(r->buffer_waits(), 0u);
  EXPECT_EQ(r->dropped_events(), 0u);

  const CstTrace trace = read_ok(o.path);
  ASSERT_EQ(trace.events.size(), 4u * kEach);
  std::vector<std::vector<bool>> seen(4, std::vector<bool>(kEach, false));
  for (const Event& e : trace.events) {
    const uint64_t tag = e.as<LaunchEvent>().buffers.at(0);
    seen.at(tag >> 20).at(tag & 0xfffff) = true;
  }
  for (const auto& s : seen)
    EXPECT_TRUE(std::all_of(s.begin(), s.end(), [](bool b) { return b; }));
  EXPECT_EQ(trace.end->buffer_waits, r->buffer_waits());
}

TEST(Recorder, OneBufferMeansAWaitAtEveryHandover) {
  TempDir dir;
  RecorderOptions o = options_for(dir.path("one.cst"));
  o.buffer_bytes = 1;  // clamped up to the minimum
  o.max_buffers = 0;   // clamped up to one
  std::string error;
  auto r = Recorder::open(o, error);
  ASSERT_TRUE(r) << error;
  for (int i = 0; i < 2000; ++i)
    r->record_free(uint64_t(i), 0, FreeKind::sync);
  r->close();
  const CstTrace trace = read_ok(o.path);
  EXPECT_EQ(trace.events.size(), 2000u);
  // With one buffer, every full buffer is handed over and waited for.
  EXPECT_GE(r->buffer_waits(), trace.chunks - 1);
}

TEST(Recorder, LongBufferListIsCutAndFlagged) {
  TempDir dir;
  RecorderOptions o = options_for(dir.path("long.cst"));
  o.buffer_bytes = 256;
  std::string error;
  auto r = Recorder::open(o, error);
  ASSERT_TRUE(r) << error;
  std::vector<uint64_t> ids(500);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = i + 1;
  const uint32_t k = r->kernel_id("wide");
  r->record_launch(k, 0, 0, ids, kLaunchCooperative);
  r->record_launch(k, 0, 0, std::span(ids).first(3), kLaunchBuffersTruncated);  // not the shim's
  r->close();
  const CstTrace trace = read_ok(o.path);
  ASSERT_EQ(trace.events.size(), 2u);
  const auto& wide = trace.events[0].as<LaunchEvent>();
  EXPECT_EQ(wide.flags, kLaunchCooperative | kLaunchBuffersTruncated);
  ASSERT_FALSE(wide.buffers.empty());
  EXPECT_LT(wide.buffers.size(), ids.size());
  for (size_t i = 0; i < wide.buffers.size(); ++i)
    EXPECT_EQ(wide.buffers[i], ids[i]);
  const auto& narrow = trace.events[1].as<LaunchEvent>();
  EXPECT_EQ(narrow.flags, 0);
  EXPECT_EQ(narrow.buffers, std::vector<uint64_t>({1, 2, 3}));
}

}  // namespace
}  // namespace cuswap::trace::test
