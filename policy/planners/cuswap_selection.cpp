// Steps 3-5 of the cuswap planner (policy/planners/cuswap_selection.h).
//
// Note [Least unhidden time]
// When hideable candidates cannot remove the excess, what is left costs
// waits, and the wait per byte of excess removed is what to minimise, not
// bytes x time away. The two differ most on the few ops that need many
// bytes gone for a moment: on the AdamW transformer at 50% on pcie3, ops
// 1219-1244 and 4294-4320 (the loss) hold 147 MiB buffers each away for
// 3-33 us, 227-381 MB over the budget; bytes x time away took those (a
// full copy out and back for one op each), step 6 dropped them as copies
// for nothing, and the simulator then evicted two buffers left for the
// next iteration where the ops needed the room: two 12.9 ms waits.
// So each candidate is priced by the time ops wait for its copies: the
// copy out starts when its last use ends (or when the out lane is free),
// and the first op over the target in its window that it must be gone for
// waits for the rest of it; the copy back starts right after the last op
// over the target it must be away for (or later, as late as the copy can
// still hide), and its next use waits for the rest of that. Which ops it
// stays away for is chosen by the wait allowed each way (the whole copy,
// half, a quarter, ... none): less wait, fewer ops. A weight or carried
// tensor, away at the start of the iteration as well, may cover only that
// part, its copy out then waited for only where it runs past the end.
// Candidates are taken least wait per byte removed (at their worst op,
// at most their size) first, each priced again against what is taken by
// then. On a crowded link the lanes' other copies make a copy wait as
// well; with them counted, copies queue behind what step 3 placed (and
// reserve the lanes), without, only the op order counts. Either can be the
// better guess, so both are tried beside bytes x time away, and the plan
// that simulates fastest is kept (Note [cuswap planner], step 7): the
// transformer's plan waits 23.2 ms instead of 25.8 ms and evicts nothing
// the plan did not ask for, and Inception-V3 at batch 305 in 1.3 GiB on
// pcie3 takes 3.9% over infinite memory instead of 10.3%.
#include "policy/planners/cuswap_selection.h"

#include <algorithm>
#include <optional>

#include "policy/planners/common.h"

namespace cuswap::policy::planners {

namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr int64_t kWaitSteps = 16;  // the least wait tried short of none: a copy / this

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

void Selection::place_least_unhidden(bool lanes) {
  lanes_ = lanes;
  std::vector<uint8_t> taken(all_.size(), 0);
  for (const Chosen& ch : chosen_)
    taken[ch.candidate] = 1;
  std::vector<std::pair<double, uint32_t>> order;  // (wait per byte removed, candidate)
  for (uint32_t i = 0; i < all_.size(); ++i) {
    Option o;
    if (taken[i] || !cheapest(i, o)) continue;
    order.emplace_back(static_cast<double>(o.wait_ns) / static_cast<double>(o.relief_bytes), i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [score, i] : order) {
    if (tree_.max_all() <= 0) break;
    Option o;
    if (!cheapest(i, o)) continue;  // what is taken by now made it unneeded
    const int64_t copy = copy_ns(all_[i]);
    if (lanes_ && o.out_start_ns >= 0) out_lane_.reserve(o.out_start_ns, o.out_start_ns + copy);
    if (lanes_ && o.in_start_ns >= 0) in_lane().reserve(o.in_start_ns, o.in_start_ns + copy);
    take(i, o.spans, o.trigger);
  }
}

// The least wait per byte removed over a candidate's ways to be away for
// ops over the target in its window (Note [Least unhidden time]): the
// first op that must find it gone is the first over the target from when
// its copy out would end, less each wait allowed in turn (the whole copy,
// half, a quarter, ..., none), and the last, the last one over the target
// before its copy back must start, plus that wait.
bool Selection::cheapest(uint32_t i, Option& best) const {
  const Candidate& c = all_[i];
  if (c.stays_out || (!c.wraps && c.after + 1 >= c.next)) return false;
  const int64_t copy = copy_ns(c);
  const std::optional<int64_t> out = lane_start(out_lane_, starts_[c.after + 1], copy);
  const int64_t out_end = (out ? *out : starts_[c.after + 1]) + copy;
  // The window: after+1 to the end (or to next-1), and with a wrap from the
  // start to next-1.
  const uint32_t end = c.wraps ? n_ - 1 : c.next - 1;
  const uint32_t back_from = c.wraps ? 0 : c.after + 1;
  std::vector<uint32_t> firsts, lasts;
  if (c.wraps) firsts.push_back(kNone), lasts.push_back(kNone);
  for (int64_t wait = copy;; wait = wait > copy / kWaitSteps ? wait / 2 : 0) {
    const uint32_t from = std::max(c.after + 1, first_op_from(out_end - wait));
    const size_t f = from <= end ? tree_.first_above_zero(from, end) : ExcessTree::kNotFound;
    if (f != ExcessTree::kNotFound) firsts.push_back(static_cast<uint32_t>(f));
    const uint32_t by = op_starting_in(starts_, back_from, c.next, starts_[c.next] - copy + wait);
    const size_t l =
        by > back_from ? tree_.last_above_zero(back_from, by - 1) : ExcessTree::kNotFound;
    if (l != ExcessTree::kNotFound) lasts.push_back(static_cast<uint32_t>(l));
    if (wait == 0) break;
  }
  for (std::vector<uint32_t>* v : {&firsts, &lasts}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  bool found = false;
  for (uint32_t first_over : firsts)
    for (uint32_t last_over : lasts) {
      if (!c.wraps && (first_over == kNone || last_over == kNone || first_over > last_over))
        continue;
      Option o;
      if (!away_until(c, first_over, last_over, o)) continue;
      if (!found || static_cast<double>(o.wait_ns) * static_cast<double>(best.relief_bytes) <
                        static_cast<double>(best.wait_ns) * static_cast<double>(o.relief_bytes)) {
        best = std::move(o);
        found = true;
      }
    }
  return found;
}

// With the lanes counted, the earliest start from `from_ns` that `lane`
// allows; without, none (the copy starts at from_ns and reserves nothing).
std::optional<int64_t> Selection::lane_start(const Lane& lane, int64_t from_ns,
                                             int64_t copy_ns) const {
  if (!lanes_) return std::nullopt;
  return lane.earliest(from_ns, copy_ns);
}

// Gone from `first_over` (kNone: no op waits for its copy out) and away
// until after `last_over` (kNone: back as late as the lane allows).
bool Selection::away_until(const Candidate& c, uint32_t first_over, uint32_t last_over,
                           Option& o) const {
  const int64_t copy = copy_ns(c);
  const int64_t ready_ns = starts_[c.after + 1];
  const std::optional<int64_t> out = lane_start(out_lane_, ready_ns, copy);
  o.out_start_ns = out ? *out : -1;
  const int64_t out_end = (out ? *out : ready_ns) + copy;
  uint32_t first = first_op_from(out_end);
  int64_t wait = 0;
  if (first_over != kNone) {
    wait += std::max<int64_t>(0, out_end - starts_[first_over]);
    first = std::min(first, first_over);
  } else if (c.wraps) {
    wait += std::max<int64_t>(0, out_end - starts_.back());  // the iteration waits for it
  }
  uint32_t trigger = c.wraps ? op_starting_in(starts_, 0, c.next, starts_[c.next] - copy)
                             : latest_trigger(starts_, c.after, c.next, copy);
  if (last_over != kNone) trigger = std::max(trigger, last_over + 1);
  const std::optional<int64_t> in = lane_start(in_lane(), starts_[trigger], copy);
  o.in_start_ns = in ? *in : -1;
  wait += std::max<int64_t>(0, (in ? *in : starts_[trigger]) + copy - starts_[c.next]);
  o.spans = spans(c, first, trigger);
  int64_t worst = 0;
  for (const Span& span : o.spans)
    worst = std::max(worst, tree_.max(span.lo, span.hi));
  if (worst <= 0) return false;
  o.trigger = trigger;
  o.wait_ns = wait;
  o.relief_bytes = std::min(c.bytes, static_cast<uint64_t>(worst));
  return true;
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
