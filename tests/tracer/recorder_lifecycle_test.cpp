// The recorder's life: threads that exit before close, close twice, events
// after close, a forked child, a path that cannot be written, destruction.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <set>
#include <thread>

#include "tests/tracer/support.h"

namespace cuswap::trace::test {
namespace {

// Waits for a child, killing it after `seconds`; its exit status or -1.
int wait_child(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

TEST(RecorderLifecycle, ThreadsThatExitHandOverTheirEvents) {
  TempDir dir;
  RecorderOptions o = options_for(dir.path("exit.cst"));
  std::string error;
  auto r = Recorder::open(o, error);
  ASSERT_TRUE(r) << error;
  constexpr int kThreads = 8, kEach = 100;
  for (int t = 0; t < kThreads; ++t)
    std::thread([&, t] {
      for (int i = 0; i < kEach; ++i)
        r->record_free(uint64_t(t * kEach + i), 0, FreeKind::sync);
    }).join();

  // Before close: every exited thread's events reach the file (read as an
  // unfinished recording), well within a few sweeps.
  ReadOptions partial;
  partial.allow_incomplete = true;
  size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    CstTrace trace;
    ASSERT_TRUE(read_cst_file(o.path, partial, trace, error)) << error;
    EXPECT_FALSE(trace.complete());
    seen = trace.events.size();
    if (seen == size_t(kThreads * kEach)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(seen, size_t(kThreads * kEach));

  // New threads after those exited (their slots are reused), then close.
  for (int t = 0; t < kThreads; ++t)
    std::thread([&] { r->record_iteration(); }).join();
  r->record_iteration();
  r->close();
  const CstTrace trace = read_ok(o.path);
  EXPECT_EQ(trace.events.size(), size_t(kThreads * kEach + kThreads + 1));
  std::set<uint64_t> ids;
  for (const Event& e : trace.events)
    if (e.type() == EventType::free) ids.insert(e.as<FreeEvent>().buffer_id);
  EXPECT_EQ(ids.size(), size_t(kThreads * kEach));
  EXPECT_EQ(r->dropped_events(), 0u);
}

TEST(RecorderLifecycle, CloseIsIdempotentAndLaterEventsAreDropped) {
  TempDir dir;
  const std::string path = dir.path("close.cst");
  std::string error;
  auto r = Recorder::open(options_for(path), error);
  ASSERT_TRUE(r) << error;
  const uint32_t k = r->kernel_id("k");
  for (int i = 0; i < 10; ++i)
    r->record_launch(k, 0, 0, {}, 0);
  const Counter first[] = {{"first", 1}};
  r->close(first);
  const std::vector<uint8_t> closed = read_bytes(path);

  const Counter second[] = {{"second", 2}};
  r->close(second);
  r->record_launch(k, 0, 0, {}, 0);
  r->record_alloc(1, 2, 3, 4, 0, AllocKind::linear);
  r->record_iteration();
  std::thread([&] { r->record_iteration(); }).join();  // a thread new to the recorder
  r->close();
  EXPECT_EQ(r->dropped_events(), 4u);
  r.reset();  // the destructor closes again: still nothing written
  EXPECT_EQ(read_bytes(path), closed);

  const CstTrace trace = read_ok(path);
  EXPECT_EQ(trace.events.size(), 10u);
  ASSERT_EQ(trace.end->counters.size(), 1u);
  EXPECT_EQ(trace.end->counters[0].name, "first");
}

TEST(RecorderLifecycle, DestructorClosesTheFile) {
  TempDir dir;
  const std::string path = dir.path("dtor.cst");
  {
    std::string error;
    auto r = Recorder::open(options_for(path), error);
    ASSERT_TRUE(r) << error;
    r->record_iteration();
  }
  const CstTrace trace = read_ok(path);
  EXPECT_TRUE(trace.complete());
  EXPECT_EQ(trace.events.size(), 1u);
}

TEST(RecorderLifecycle, ForkedChildRecordsNothing) {
  TempDir dir;
  const std::string path = dir.path("fork.cst");
  std::string error;
  auto r = Recorder::open(options_for(path), error);
  ASSERT_TRUE(r) << error;
  const uint32_t k = r->kernel_id("parent kernel");
  // A second thread keeps recording while the parent forks.
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> background{0};
  std::thread busy([&] {
    while (!stop) {
      r->record_launch(k, 1, 0, {}, 0);
      ++background;
    }
  });
  for (int i = 0; i < 10; ++i)
    r->record_free(uint64_t(i), 0, FreeKind::sync);

  const pid_t told = ::fork();
  ASSERT_GE(told, 0);
  if (told == 0) {
    // The child the shim's atfork handler tells.
    r->disable_in_child();
    for (int i = 0; i < 100; ++i)
      r->record_free(1000 + uint64_t(i), 0, FreeKind::sync);
    const bool ok = r->dropped_events() >= 100 && r->kernel_id("child kernel") == 0;
    r->close();
    r.reset();
    ::_exit(ok ? 0 : 1);
  }
  EXPECT_EQ(wait_child(told, 30), 0);

  const pid_t untold = ::fork();
  ASSERT_GE(untold, 0);
  if (untold == 0) {
    // A child nobody told: close() and the destructor must still neither
    // hang nor touch the parent's file.
    r->close();
    r.reset();
    ::_exit(0);
  }
  EXPECT_EQ(wait_child(untold, 30), 0);

  for (int i = 10; i < 20; ++i)
    r->record_free(uint64_t(i), 0, FreeKind::sync);
  stop = true;
  busy.join();
  r->close();

  const CstTrace trace = read_ok(path);
  ASSERT_TRUE(trace.complete());
  uint64_t frees = 0, launches = 0;
  for (const Event& e : trace.events) {
    if (e.type() == EventType::free) {
      EXPECT_LT(e.as<FreeEvent>().buffer_id, 20u) << "an event from the child";
      ++frees;
    } else {
      ++launches;
    }
  }
  EXPECT_EQ(frees, 20u);
  EXPECT_EQ(launches, background.load());
  EXPECT_EQ(trace.kernel_names.size(), 2u);
}

TEST(RecorderLifecycle, UnwritablePathGivesOneLineNamingIt) {
  for (const std::string path : {"/nonexistent-cuswap-dir/trace.cst", "/"}) {
    RecorderOptions o = options_for(path);
    std::string error;
    auto r = Recorder::open(o, error);
    EXPECT_FALSE(r);
    EXPECT_NE(error.find(path + ": "), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  std::string error;
  EXPECT_FALSE(Recorder::open(options_for("/nonexistent-cuswap-dir/t.cst"), error));
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  EXPECT_FALSE(Recorder::open(options_for(""), error));
  EXPECT_FALSE(error.empty());
}

TEST(RecorderLifecycle, SeveralRecordersAtOnceFromOneThread) {
  TempDir dir;
  std::vector<std::unique_ptr<Recorder>> recorders;
  std::string error;
  for (int i = 0; i < 12; ++i) {  // more than a thread's slot cache holds
    recorders.push_back(Recorder::open(options_for(dir.path(std::to_string(i) + ".cst")), error));
    ASSERT_TRUE(recorders.back()) << error;
  }
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < recorders.size(); ++i)
      recorders[i]->record_free(i * 100 + size_t(round), 0, FreeKind::sync);
  for (auto& r : recorders)
    r->close();
  for (size_t i = 0; i < recorders.size(); ++i) {
    const CstTrace trace = read_ok(dir.path(std::to_string(i) + ".cst"));
    ASSERT_EQ(trace.events.size(), 3u) << i;
    for (size_t k = 0; k < 3; ++k)
      EXPECT_EQ(trace.events[k].as<FreeEvent>().buffer_id, i * 100 + k);
  }
  recorders.clear();
  // A new recorder after the old ones are gone reuses this thread's cache.
  auto r = Recorder::open(options_for(dir.path("after.cst")), error);
  ASSERT_TRUE(r) << error;
  r->record_iteration();
  r->close();
  EXPECT_EQ(read_ok(dir.path("after.cst")).events.size(), 1u);
}

}  // namespace
}  // namespace cuswap::trace::test
