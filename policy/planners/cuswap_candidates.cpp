// The cuswap planner's candidates (policy/planners/cuswap_candidates.h):
// step 1 of Note [cuswap planner].
#include "policy/planners/cuswap_candidates.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace cuswap::policy::planners {

namespace {

constexpr int64_t kSmallCopyLatencies = 4;  // below this many latencies of transfer: small
constexpr int64_t kGroupLatencies = 16;     // a group grows to this many latencies of transfer
constexpr uint32_t kNextSpanOps = 8;  // members are needed back within this many ops of the first

// The time away from the end of `after` to the start of `next`.
int64_t away_ns(const std::vector<int64_t>& starts, uint32_t after, uint32_t next, bool wraps,
                bool stays_out = false) {
  if (stays_out) return starts.back() - starts[after + 1];
  const int64_t back = starts[next];
  const int64_t out = starts[after + 1];
  return wraps ? starts.back() - out + back : back - out;
}

// Each tensor's gaps between two of its uses, and for weights and
// optimizer state (resident at start, live at the end) the wrap from the
// last use to the first (Note [Wrap entries]).
void add_gaps(const Workload& workload, const PlanRequest& request,
              std::vector<Candidate>& singles) {
  const auto n = static_cast<uint32_t>(workload.ops.size());
  for (uint32_t t = 0; t < workload.tensors.size(); ++t) {
    const WorkTensor& tensor = workload.tensors[t];
    if (never_moves(tensor, request.swap_min_bytes)) continue;
    const std::vector<uint32_t>& uses = tensor.uses;
    const auto add = [&](uint32_t after, uint32_t next, bool wraps) {
      singles.push_back({{t}, {next}, tensor.size_bytes, after, next, wraps, 0, {}, {}});
    };
    for (size_t i = 1; i < uses.size(); ++i)
      if (uses[i] > uses[i - 1] + 1) add(uses[i - 1], uses[i], false);
    if (tensor.resident_at_start() && tensor.free_op >= n && !uses.empty() &&
        (uses.back() + 1 < n || uses.front() > 0))
      add(uses.back(), uses.front(), true);
  }
}

// Note [Carried tensors]: what the iteration frees of an earlier one's
// (resident at start, freed in it) and what it leaves for the next
// (allocated in it, live at the end), paired by size in program order;
// what is left for the next with no pair stays out after its last use.
void add_carried(const Workload& workload, const PlanRequest& request,
                 std::vector<Candidate>& singles) {
  const auto n = static_cast<uint32_t>(workload.ops.size());
  std::map<uint64_t, std::vector<uint32_t>> heads, tails;
  for (uint32_t t = 0; t < workload.tensors.size(); ++t) {
    const WorkTensor& tensor = workload.tensors[t];
    if (tensor.uses.empty() || never_moves(tensor, request.swap_min_bytes)) continue;
    if (tensor.resident_at_start() && tensor.free_op < n) heads[tensor.size_bytes].push_back(t);
    if (!tensor.resident_at_start() && tensor.free_op >= n) tails[tensor.size_bytes].push_back(t);
  }
  for (auto& [size, from_before] : heads) {
    const auto it = tails.find(size);
    if (it == tails.end()) continue;
    std::vector<uint32_t>& for_next = it->second;
    const auto first_use = [&](uint32_t t) { return workload.tensors[t].uses.front(); };
    std::stable_sort(from_before.begin(), from_before.end(),
                     [&](uint32_t a, uint32_t b) { return first_use(a) < first_use(b); });
    const size_t pairs = std::min(from_before.size(), for_next.size());
    for (size_t i = 0; i < pairs; ++i) {
      const uint32_t after = workload.tensors[for_next[i]].uses.back();
      const uint32_t next = first_use(from_before[i]);
      if (after + 1 >= n && next == 0) continue;
      Candidate c{{for_next[i]}, {next}, size, after, next, true, 0, {from_before[i]}, {next}};
      singles.push_back(std::move(c));
    }
    for_next.erase(for_next.begin(), for_next.begin() + static_cast<ptrdiff_t>(pairs));
  }
  for (const auto& [size, for_next] : tails)
    for (uint32_t t : for_next) {
      const uint32_t after = workload.tensors[t].uses.back();
      if (after + 1 >= n) continue;
      Candidate c{{t}, {after}, size, after, after, false, 0, {}, {}};
      c.stays_out = true;
      singles.push_back(std::move(c));
    }
}

// Small candidates of one kind that leave within `group_span` ops of the
// first and come back close together, merged while the group's time away
// still covers its copies; appended to `out`.
void add_groups(std::vector<Candidate>& smalls, const std::vector<int64_t>& starts,
                const Link& link, uint32_t group_span, std::vector<Candidate>& out) {
  const auto transfer = [&](uint64_t bytes) { return link.copy_ns(bytes) - link.latency_ns; };
  std::sort(smalls.begin(), smalls.end(), [](const Candidate& a, const Candidate& b) {
    const bool ca = a.carries(), cb = b.carries();
    return std::tie(a.wraps, ca, a.stays_out, a.after, a.next, a.tensors[0]) <
           std::tie(b.wraps, cb, b.stays_out, b.after, b.next, b.tensors[0]);
  });
  for (size_t i = 0; i < smalls.size();) {
    Candidate group = smalls[i];
    size_t j = i + 1;
    for (; j < smalls.size(); ++j) {
      const Candidate& s = smalls[j];
      if (s.wraps != group.wraps || s.carries() != group.carries() ||
          s.stays_out != group.stays_out || s.after > smalls[i].after + group_span)
        break;
      // Members come back within a few ops of each other too: the group is
      // fetched for the first of them.
      if (!group.stays_out && s.next > group.next + kNextSpanOps) break;
      const uint32_t after = std::max(group.after, s.after);
      const uint32_t next = std::min(group.next, s.next);
      const uint64_t bytes = group.bytes + s.bytes;
      // One tensor is never twice in a group: its second gap starts where
      // the first ends, so the merged window would be empty.
      if (!group.wraps && !group.stays_out && after >= next) break;
      if (group.wraps && !group.carries() && next > after) break;
      if (transfer(bytes) > kGroupLatencies * link.latency_ns) break;
      if (away_ns(starts, after, next, group.wraps, group.stays_out) <
          (group.stays_out ? 1 : 2) * link.copy_ns(bytes))
        break;
      group.tensors.push_back(s.tensors[0]);
      group.nexts.push_back(s.nexts[0]);
      group.arriving.insert(group.arriving.end(), s.arriving.begin(), s.arriving.end());
      group.arriving_nexts.insert(group.arriving_nexts.end(), s.arriving_nexts.begin(),
                                  s.arriving_nexts.end());
      group.bytes = bytes;
      group.after = after;
      group.next = next;
    }
    out.push_back(std::move(group));
    i = j;
  }
}

}  // namespace

std::vector<Candidate> candidates(const Workload& workload, const PlanRequest& request,
                                  const std::vector<int64_t>& starts, uint32_t group_span) {
  std::vector<Candidate> singles;
  add_gaps(workload, request, singles);
  add_carried(workload, request, singles);
  // Small ones (a copy shorter than a few link latencies) are grouped.
  const Link& link = request.link;
  std::vector<Candidate> out, smalls;
  const auto small = [&](const Candidate& c) {
    return link.copy_ns(c.bytes) - link.latency_ns < kSmallCopyLatencies * link.latency_ns;
  };
  for (Candidate& c : singles)
    (small(c) ? smalls : out).push_back(std::move(c));
  add_groups(smalls, starts, link, group_span, out);
  for (Candidate& c : out)
    c.idle_ns = away_ns(starts, c.after, c.next, c.wraps, c.stays_out);
  return out;
}

}  // namespace cuswap::policy::planners
