// Online planning (Note [Following a plan], runtime/plan_follow.h): one
// iteration recorded in runtime identities, planned on a background thread
// with the planner the CLI uses, handed to its owner (PlanFollow) as a
// follower. Every call is made with the owner's lock held.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "allocator/driver.h"
#include "allocator/kernel_params.h"
#include "common/config.h"
#include "policy/follower.h"

namespace cuswap::hooks {

class OnlinePlanning {
 public:
  // Takes the planner's answer, from the planner's thread: a follower in
  // runtime identities, or none (`summary` says why); `gave_up`: do not
  // try again. It is not called once this object is gone.
  using Adopt = std::function<void(std::unique_ptr<policy::PlanFollower> follower,
                                   std::string summary, bool gave_up)>;

  OnlinePlanning(const Driver& driver, const conf::Options& options, Adopt adopt);
  ~OnlinePlanning();
  OnlinePlanning(const OnlinePlanning&) = delete;
  OnlinePlanning& operator=(const OnlinePlanning&) = delete;

  // Called at each iteration's start while no plan is followed: starts
  // recording (from the second iteration: the first has start-up work),
  // or hands a recorded one to the planner.
  void begin_iteration(uint64_t iteration, std::span<const policy::PlanFollower::LiveBuffer> live);
  void on_alloc(uint64_t id, uint64_t size_bytes);
  void on_free(uint64_t id);
  void on_launch(std::string_view kernel, const TouchedBuffers& touched);
  void launch_started(CUstream stream);
  void launch_ended(CUstream stream, CUresult result);

  // The planner's answer came (through Adopt); `gave_up`: do not try again.
  void planning_done(bool gave_up);
  // Whether an iteration is being recorded: launches are timed only then.
  bool recording() const { return recording_ != nullptr; }

  // What a recorded iteration holds (online_plan.cpp).
  struct Recording;

 private:
  void hand_to_planner();

  const Driver& driver_;
  conf::Options options_;
  Adopt adopt_;
  std::unique_ptr<Recording> recording_;      // while recording
  bool planning_ = false;                     // a recording is with the planner
  bool gave_up_ = false;                      // planning failed: stay reactive
  std::shared_ptr<std::atomic<bool>> alive_;  // the planner thread's way to tell we are gone
};

}  // namespace cuswap::hooks
