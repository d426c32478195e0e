// Steps 3-5 of the cuswap planner (Note [cuswap planner] in
// policy/planners/cuswap.cpp): which candidates move for one target budget,
// on the infinite-memory schedule, and where their copies back start.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "policy/planner.h"
#include "policy/planners/cuswap_candidates.h"
#include "policy/planners/schedule_state.h"

namespace cuswap::policy::planners {

// The latest op in the candidate's window that starts by `time_ns`.
uint32_t trigger_by(const std::vector<int64_t>& starts, uint32_t after, uint32_t next, bool wraps,
                    int64_t time_ns);

// The ops a chosen candidate leaves free: [lo, hi], inclusive.
struct Span {
  uint32_t lo, hi;
};
struct Chosen {
  uint32_t candidate;
  uint32_t trigger;  // where its copy back starts
  std::vector<Span> spans;
};

// The excess of every op over the target, the copy lanes, and what is
// chosen; place_hideable, then one of the two step 4s, then drop_unneeded.
class Selection {
 public:
  Selection(const PlanRequest& request, const std::vector<int64_t>& starts,
            const std::vector<uint64_t>& live, const std::vector<Candidate>& all, uint64_t target);

  // Step 3: hideable candidates, largest benefit first, while some op is
  // over the target; those that cannot be hidden are left for step 4.
  void place_hideable();
  // Step 4: copies that cannot be hidden, only for what is left over the
  // target, largest bytes x time away first.
  void place_unhidden();
  // Step 4 the other way (Note [Least unhidden time]); with `lanes`, the
  // copies wait for the lanes and reserve them.
  void place_least_unhidden(bool lanes);
  // Step 5: what later choices made unneeded goes, least benefit first.
  void drop_unneeded();

  const std::vector<Chosen>& chosen() const { return chosen_; }

 private:
  // One way to take a candidate in place_least_unhidden: what it leaves
  // free, where its copy back starts, and how long ops wait for its copies.
  struct Option {
    std::vector<Span> spans;
    uint32_t trigger = 0;
    int64_t wait_ns = 0;
    int64_t out_start_ns = 0, in_start_ns = 0;  // -1: no copy that way
    uint64_t relief_bytes = 0;                  // of the excess it removes at its worst op
  };

  int64_t copy_ns(const Candidate& c) const { return request_.link.copy_ns(c.bytes); }
  double benefit(const Candidate& c) const;
  // Copies back share the lane of copies out when the directions contend.
  Lane& in_lane() { return request_.link.duplex_contention ? out_lane_ : in_lane_own_; }
  const Lane& in_lane() const { return request_.link.duplex_contention ? out_lane_ : in_lane_own_; }
  uint32_t first_op_from(int64_t from_ns) const;
  std::vector<Span> spans(const Candidate& c, uint32_t first, uint32_t trigger) const;
  bool needed(const std::vector<Span>& s) const;
  void take(uint32_t i, const std::vector<Span>& s, uint32_t trigger);
  void place_leaving(uint32_t i);
  void place_both_ways(uint32_t i);
  std::optional<int64_t> lane_start(const Lane& lane, int64_t from_ns, int64_t copy_ns) const;
  bool cheapest(uint32_t i, Option& best) const;
  bool away_until(const Candidate& c, uint32_t from, uint32_t last_over, Option& o) const;

  const PlanRequest& request_;
  const std::vector<int64_t>& starts_;
  const std::vector<Candidate>& all_;
  uint32_t n_;  // ops
  ExcessTree tree_;
  Lane out_lane_, in_lane_own_;
  std::vector<Chosen> chosen_;
  std::vector<uint32_t> unhidden_;  // for step 4, in step 3's order
  bool lanes_ = true;               // place_least_unhidden's copies wait for the lanes
};

}  // namespace cuswap::policy::planners
