// The runtime's side of plans: iterations (marked, or found from the
// launch sequence), the plan it follows (from `plan:FILE`, or made online
// from the first iteration), and the copies it starts around launches.
// The hooks call it; it calls the allocator. See Note [Following a plan].
//
// Note [Following a plan]
// - Offline (`plan:FILE`): the plan is read and checked when the runtime
//   starts (version, device, budget); an unusable one is one error line and
//   the allocator stays reactive.
// - Online (a budget, no plan, `online:true`): the first whole iteration is
//   recorded (the reactive path keeps it alive; launches are timed with
//   events), planned on a background thread with the planner the CLI uses,
//   and followed from the iteration after the plan is ready; one line says
//   so, with the predicted iteration time. A plan gone stale (Note
//   [Tolerant matching]) is made again the same way.
// - Around each launch the cursor (policy/follower.h) names the prefetches
//   to start before it (on the prefetch stream, after the launch's stream
//   reaches that point) and the evictions to start after it; the consumers'
//   streams wait for the copies' events, the host thread never does.
// - A prefetch is late when its copy ends after its use's stream was ready:
//   two timing events, compared once both are done (never waited for),
//   move the trigger (Note [Moving triggers]).
// Lock order: PlanFollow::mu_ before the allocator's lock; the allocator
// never calls back.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "allocator/driver.h"
#include "allocator/kernel_params.h"
#include "allocator/swap_allocator.h"
#include "common/config.h"
#include "policy/follower.h"
#include "common/iteration_detector.h"
#include "tracer/recorder.h"

namespace cuswap::hooks {

class OnlinePlanning;  // runtime/online_plan.cpp

// Per-iteration figures (cuswap_stats_json, `stats:true`).

class PlanFollow {
 public:
  PlanFollow(const Driver& driver, Allocator& allocator, const conf::Options& options);
  ~PlanFollow();
  PlanFollow(const PlanFollow&) = delete;
  PlanFollow& operator=(const PlanFollow&) = delete;

  // Reads and checks `plan:FILE`; false with one line in `error`, and the
  // runtime then stays reactive.
  [[nodiscard]] bool load_plan(const char* path, std::string& error) noexcept;

  void iteration_mark() noexcept;  // cuswap_iteration_begin()
  // Each iteration's figures are recorded from then on (an iteration_stats event).
  void set_recorder(trace::Recorder* recorder) noexcept;
  void on_alloc(uint64_t id, uintptr_t base, uint64_t size_bytes) noexcept;
  void on_free(uint64_t id) noexcept;
  // Around one launch on this thread: before_launch() before the
  // allocator's prepare(), after_launch() after the driver call.
  void before_launch(const KernelInfo* kernel, CUstream stream,
                     const TouchedBuffers& touched) noexcept;
  // After prepare() succeeded: the launch is next on its stream.
  void launch_prepared(CUstream stream) noexcept;
  void after_launch(CUstream stream, CUresult result) noexcept;

  // {"iterations": …, "last_iteration": {…}, "follow": {…}} plus the
  // allocator's counters.
  std::string stats_json();

  // Called by online planning with a plan in runtime identities.
  // A null follower: planning failed (`summary` says why); `gave_up`: do
  // not try again.
  void adopt(std::unique_ptr<policy::PlanFollower> follower, std::string summary,
             bool gave_up) noexcept;

 private:
  struct Timed {
    uint32_t entry = 0;
    CUevent ready = nullptr;  // the use's stream was ready
    CUevent done = nullptr;   // the prefetch copy ended
  };
  void begin_iteration_locked() noexcept;
  void give_up_locked() noexcept;
  void resolve_timings_locked(bool all) noexcept;
  CUevent take_event() noexcept;
  void give_event(CUevent event) noexcept;

  const Driver& driver_;
  Allocator& allocator_;
  conf::Options options_;
  std::mutex mu_;
  std::unique_ptr<policy::PlanFollower> follower_;
  std::unique_ptr<policy::PlanFollower> pending_;  // adopted at the next iteration
  std::string pending_summary_;
  std::unique_ptr<OnlinePlanning> online_;
  // online_ records an iteration: set under mu_, read without it by the
  // launch path, which takes mu_ around a launch only then.
  std::atomic<bool> recording_{false};
  IterationDetector detector_;
  bool marked_ = false;  // the program marks iterations itself
  uint64_t iteration_ = 0;
  bool in_iteration_ = false;
  struct Live {
    uintptr_t base = 0;
    uint64_t size_bytes = 0;
  };
  std::map<uint64_t, Live> live_;     // by id: allocation order
  std::map<uint32_t, CUevent> done_;  // entry -> its prefetch's done event, this iteration
  std::vector<Timed> timed_;
  std::vector<CUevent> event_pool_;
  policy::PlanFollower::Actions actions_;
  SwapStats at_iteration_start_;
  trace::IterationStats current_, last_;
  trace::Recorder* recorder_ = nullptr;  // each iteration's figures go into the trace
  std::string last_mismatch_logged_;
};

}  // namespace cuswap::hooks
