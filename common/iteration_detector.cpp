// Note [Iteration detection] (common/iteration_detector.h).
#include "common/iteration_detector.h"

#include <algorithm>

namespace cuswap {

void IterationDetector::restart(uint64_t anchor) {
  anchor_ = anchor;
  proposals_.clear();
  period_ = 0;
}

// The period under kMinPeriod with which history_[first, end) repeats (one
// kernel launched again and again), or 0: every multiple of it repeats
// too, so no period found in it is a step.
uint64_t IterationDetector::loop_of_few(uint64_t first, uint64_t end) const {
  for (uint64_t q = 1; q < kMinPeriod && first + q < end; ++q) {
    bool repeats = true;
    for (uint64_t i = first + q; i < end && repeats; ++i)
      repeats = history_[i] == history_[i - q];
    if (repeats) return q;
  }
  return 0;
}

bool IterationDetector::on_launch(uint64_t key) {
  if (few_ > 0) {
    // In a loop of a few launches: one comparison a launch until it changes,
    // keeping the last kMinPeriod launches (few_ < kMinPeriod).
    const bool same = key == history_[history_.size() - few_];
    history_.push_back(key);
    if (history_.size() > 2 * kMinPeriod)
      history_.erase(history_.begin(), history_.end() - static_cast<std::ptrdiff_t>(kMinPeriod));
    if (same) return false;
    few_ = 0;
    restart(history_.size() - 1);
    return false;
  }
  const uint64_t at = history_.size();
  history_.push_back(key);
  if (period_ > 0) {
    if (history_[at] != history_[at - period_]) {
      // The loop changed, or what repeated was a part of a step (one
      // layer's kernels): look again from here for something longer.
      min_period_ = period_ + 1;
      restart(at);
      return false;
    }
    if (at == next_boundary_) {
      next_boundary_ += period_;
      // Only two periods are needed to compare against.
      if (history_.size() > 4 * period_) {
        const uint64_t drop = history_.size() - 2 * period_;
        history_.erase(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(drop));
        next_boundary_ -= drop;
        anchor_ = anchor_ >= drop ? anchor_ - drop : 0;
      }
      return true;
    }
    return false;
  }
  if (at == anchor_) return false;
  // Live proposals must repeat what came one period before.
  for (Proposal& p : proposals_)
    p.matched += history_[at] == history_[at - p.period] ? 1 : 0;
  std::erase_if(proposals_, [&](const Proposal& p) {
    return at - anchor_ > p.period && p.matched + p.period != at - anchor_;
  });
  for (const Proposal& p : proposals_) {
    if (p.matched == p.period) {
      // Two whole periods from the anchor agree and `at` starts the third;
      // unless they are a loop of a few launches, which shows no step:
      // then nothing is looked for until it changes.
      if (const uint64_t few = loop_of_few(at - p.period, at)) {
        restart(at);
        few_ = few;
        return false;
      }
      period_ = p.period;
      proposals_.clear();
      next_boundary_ = at + period_;
      return true;
    }
  }
  if (key == history_[anchor_] && at - anchor_ >= std::max(kMinPeriod, min_period_) &&
      proposals_.size() < kMaxProposals)
    proposals_.push_back({at - anchor_, 0});
  if ((proposals_.empty() && at - anchor_ >= patience_) || at - anchor_ >= kAnchorPatience) {
    // Start-up work that does not repeat: anchor again here, and wait
    // longer next time, so that a step of any length is waited out.
    history_.erase(history_.begin(), history_.begin() + static_cast<std::ptrdiff_t>(at));
    anchor_ = 0;
    proposals_.clear();
    patience_ = std::min(2 * patience_, kAnchorPatience);
  }
  return false;
}

}  // namespace cuswap
