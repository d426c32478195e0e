// Finding iterations in a launch sequence when the program marks none
// (Note [Iteration detection]). Pure logic, fed one key per launch.
//
// Note [Iteration detection]
// A training loop launches the same kernels in the same order every step.
// An anchor launch is chosen; each later launch with the anchor's key
// proposes a period, the distance back to the anchor, and the proposal
// lives while every launch after it repeats the one a period earlier. A
// proposal that survives a whole period is the iteration: boundaries fall
// every period from the anchor, and from then on each boundary must start
// the same launch again, or detection starts over. An anchor whose key does
// not come back (start-up work) is replaced by the latest launch once it
// has waited its patience without a live proposal; each replacement
// doubles the patience (up to kAnchorPatience launches), so a step of any
// length is eventually waited out.
// Proposals shorter than kMinPeriod launches are ignored, and so are those
// whose launches repeat with a shorter period than that (a loop of one
// kernel: every multiple of its period repeats); after a found period
// breaks only longer ones are taken: one layer's kernels repeat within a
// step too, and the step is the longest period that holds.
#pragma once

#include <cstdint>
#include <vector>

namespace cuswap {

class IterationDetector {
 public:
  static constexpr uint64_t kMinPeriod = 8;
  static constexpr uint64_t kMaxProposals = 256;  // live at once
  static constexpr uint64_t kAnchorPatience = uint64_t{1} << 17;  // the longest step found

  // One launch; true when it begins an iteration (the first found is the
  // third since the anchor: two whole periods are compared first).
  bool on_launch(uint64_t key);
  uint64_t period() const { return period_; }  // 0 until found
  uint64_t launches() const { return history_.size(); }

 private:
  struct Proposal {
    uint64_t period = 0;
    uint64_t matched = 0;  // launches since it was proposed that repeated
  };
  void restart(uint64_t anchor);
  uint64_t loop_of_few(uint64_t first, uint64_t end) const;

  std::vector<uint64_t> history_;  // keys since the anchor
  uint64_t anchor_ = 0;            // index in history_ of the anchor
  std::vector<Proposal> proposals_;
  uint64_t period_ = 0;
  uint64_t min_period_ = 0;             // longer than any period found and broken since
  uint64_t patience_ = 2 * kMinPeriod;  // launches an anchor waits for its key again
  uint64_t next_boundary_ = 0;
  uint64_t few_ = 0;  // in a loop of this many launches (< kMinPeriod): no step
};

}  // namespace cuswap
