// Steps 3-5 of the cuswap planner (policy/planners/cuswap_selection.h).
#include "policy/planners/cuswap_selection.h"

#include <algorithm>
#include <optional>

#include "policy/planners/common.h"

namespace cuswap::policy::planners {

namespace {

std::vector<int64_t> excess_over(const std::vector<uint64_t>& live, uint64_t target) {
  std::vector<int64_t> excess(live.size());
  for (size_t k = 0; k < live.size(); ++k)
    excess[k] = static_cast<int64_t>(live[k]) - static_cast<int64_t>(target);
  return excess;
}

}  // namespace

uint32_t trigger_by(const std::vector<int64_t>& starts, uint32_t after, uint32_t next, bool wraps,
                    int64_t time_ns) {
  return op_starting_in(starts, wraps ? 0 : after + 1, next, time_ns);
}

Selection::Selection(const PlanRequest& request, const std::vector<int64_t>& starts,
                     const std::vector<uint64_t>& live, const std::vector<Candidate>& all,
                     uint64_t target)
    : request_(request),
      starts_(starts),
      all_(all),
      n_(static_cast<uint32_t>(live.size())),
      tree_(excess_over(live, target)) {}

void Selection::place_hideable() {
  std::vector<uint32_t> order(all_.size());
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return benefit(all_[a]) > benefit(all_[b]); });
  for (uint32_t i : order) {
    if (tree_.max_all() <= 0) break;
    if (all_[i].stays_out) {
      place_leaving(i);
    } else {
      place_both_ways(i);
    }
  }
}

void Selection::place_unhidden() {
  std::stable_sort(unhidden_.begin(), unhidden_.end(), [&](uint32_t a, uint32_t b) {
    return static_cast<double>(all_[a].bytes) * static_cast<double>(all_[a].idle_ns) >
           static_cast<double>(all_[b].bytes) * static_cast<double>(all_[b].idle_ns);
  });
  for (uint32_t i : unhidden_) {
    if (tree_.max_all() <= 0) break;
    const Candidate& c = all_[i];
    // The op after the last use waits for the copy out, and the copy back
    // starts as late as it can while the tensor is still away for that op.
    const uint32_t trigger = std::max(latest_trigger(starts_, c.after, c.next, copy_ns(c)),
                                      std::min(c.next, c.after + 2));
    const std::vector<Span> s = spans(c, c.after + 1, trigger);
    if (!needed(s)) continue;
    take(i, s, trigger);
  }
}

void Selection::drop_unneeded() {
  std::vector<uint32_t> by_benefit(chosen_.size());
  for (uint32_t k = 0; k < by_benefit.size(); ++k)
    by_benefit[k] = k;
  std::stable_sort(by_benefit.begin(), by_benefit.end(), [&](uint32_t a, uint32_t b) {
    return benefit(all_[chosen_[a].candidate]) < benefit(all_[chosen_[b].candidate]);
  });
  std::vector<uint8_t> unneeded(chosen_.size());
  for (uint32_t k : by_benefit) {
    const auto bytes = static_cast<int64_t>(all_[chosen_[k].candidate].bytes);
    const std::vector<Span>& s = chosen_[k].spans;
    if (std::any_of(s.begin(), s.end(),
                    [&](const Span& span) { return tree_.max(span.lo, span.hi) + bytes > 0; }))
      continue;
    for (const Span& span : s)
      tree_.add(span.lo, span.hi, bytes);
    unneeded[k] = 1;
  }
  std::vector<Chosen> kept;
  for (uint32_t k = 0; k < chosen_.size(); ++k)
    if (!unneeded[k]) kept.push_back(std::move(chosen_[k]));
  chosen_ = std::move(kept);
}

double Selection::benefit(const Candidate& c) const {
  const int64_t copies = (c.stays_out ? 1 : 2) * copy_ns(c);
  return static_cast<double>(c.bytes) * static_cast<double>(c.idle_ns - copies);
}

// Ops wholly after from_ns: the first op starting at or after it.
uint32_t Selection::first_op_from(int64_t from_ns) const {
  return static_cast<uint32_t>(std::lower_bound(starts_.begin(), starts_.end() - 1, from_ns) -
                               starts_.begin());
}

// The ops a candidate leaves free: out of [lo1, hi1] and [lo2, hi2].
std::vector<Span> Selection::spans(const Candidate& c, uint32_t first, uint32_t trigger) const {
  std::vector<Span> out;
  if (c.wraps) {
    if (first < n_) out.push_back({first, n_ - 1});
    if (trigger > 0) out.push_back({0, trigger - 1});
  } else if (first < trigger) {
    out.push_back({first, trigger - 1});
  }
  return out;
}

bool Selection::needed(const std::vector<Span>& s) const {
  return std::any_of(s.begin(), s.end(),
                     [&](const Span& span) { return tree_.max(span.lo, span.hi) > 0; });
}

void Selection::take(uint32_t i, const std::vector<Span>& s, uint32_t trigger) {
  for (const Span& span : s)
    tree_.add(span.lo, span.hi, -static_cast<int64_t>(all_[i].bytes));
  chosen_.push_back({i, trigger, s});
}

// One copy, out, done before the iteration ends.
void Selection::place_leaving(uint32_t i) {
  const Candidate& c = all_[i];
  const int64_t copy = copy_ns(c);
  if (c.idle_ns < copy) return;
  const std::optional<int64_t> out_start = out_lane_.earliest(starts_[c.after + 1], copy);
  if (!out_start || *out_start + copy > starts_.back()) return;
  const uint32_t first = first_op_from(*out_start + copy);
  if (first >= n_ || tree_.max(first, n_ - 1) <= 0) return;
  out_lane_.reserve(*out_start, *out_start + copy);
  take(i, {Span{first, n_ - 1}}, 0);
}

// The copy out as early as its lane allows after the last use, the copy
// back as late as its lane allows before the next use.
void Selection::place_both_ways(uint32_t i) {
  const Candidate& c = all_[i];
  const int64_t copy = copy_ns(c);
  if (c.idle_ns < 2 * copy) {
    if (!c.wraps) unhidden_.push_back(i);
    return;
  }
  const std::optional<int64_t> out_start = out_lane_.earliest(starts_[c.after + 1], copy);
  if (!out_start) return;
  const int64_t out_end = *out_start + copy;
  if (c.wraps && out_end > starts_.back()) return;  // would lengthen the iteration
  const std::optional<int64_t> in_start =
      in_lane().latest(starts_[c.next], copy, c.wraps ? 0 : out_end);
  if (!in_start) {
    if (!c.wraps) unhidden_.push_back(i);
    return;
  }
  const uint32_t trigger = trigger_by(starts_, c.after, c.next, c.wraps, *in_start);
  const std::vector<Span> s = spans(c, first_op_from(out_end), trigger);
  if (!needed(s)) {
    // Hidden, it frees no op over the budget; the op right after its
    // last use may still need it gone, at the price of a wait.
    if (!c.wraps) unhidden_.push_back(i);
    return;
  }
  out_lane_.reserve(*out_start, out_end);
  in_lane().reserve(*in_start, *in_start + copy);
  take(i, s, trigger);
}

}  // namespace cuswap::policy::planners
