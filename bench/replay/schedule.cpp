// The replay's schedule (bench/replay/schedule.h).
#include "bench/replay/schedule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "policy/simulator.h"

namespace cuswap::bench {

std::string variant_name(uint32_t slots) {
  return fmt::format("cuswap_replay_op{}", slots);
}

uint32_t variant_slots(uint32_t buffers) {
  for (uint32_t slots : kVariantSlots)
    if (buffers <= slots) return slots;
  return kMaxSlots;
}

namespace {

// Note [Replay steady state]: heads paired to tails by size, as the cuswap
// planner pairs them (policy/planners/cuswap.cpp, candidates()).
void pair_carried(const policy::Workload& w, Schedule& s) {
  const auto n = static_cast<uint32_t>(w.ops.size());
  std::map<uint64_t, std::vector<uint32_t>> heads, tails;
  for (uint32_t t = 0; t < w.tensors.size(); ++t) {
    const policy::WorkTensor& tensor = w.tensors[t];
    if (tensor.uses.empty() || tensor.size_bytes == 0) continue;
    if (tensor.resident_at_start() && tensor.free_op < n) heads[tensor.size_bytes].push_back(t);
    if (!tensor.resident_at_start() && tensor.free_op >= n) tails[tensor.size_bytes].push_back(t);
  }
  for (auto& [size, from_before] : heads) {
    const auto it = tails.find(size);
    if (it == tails.end()) continue;
    std::stable_sort(from_before.begin(), from_before.end(), [&](uint32_t a, uint32_t b) {
      return w.tensors[a].uses.front() < w.tensors[b].uses.front();
    });
    const size_t pairs = std::min(from_before.size(), it->second.size());
    for (size_t i = 0; i < pairs; ++i) {
      s.becomes[it->second[i]] = from_before[i];
      s.carried_from[from_before[i]] = it->second[i];
    }
  }
}

void add_launches(const policy::Workload& w, uint32_t op, int64_t duration_ns, Schedule& s,
                  std::map<uint32_t, uint32_t>& launches_of) {
  std::vector<uint32_t> touched;
  for (uint32_t t : w.uses_at[op])
    if (w.tensors[t].size_bytes > 0) touched.push_back(t);
  s.first_launch[op] = static_cast<uint32_t>(s.launches.size());
  size_t i = 0;
  do {
    const size_t count = std::min<size_t>(kMaxSlots, touched.size() - i);
    Launch l;
    l.op = op;
    l.slots = variant_slots(static_cast<uint32_t>(count));
    l.ordinal = launches_of[l.slots]++;
    l.tensors.assign(touched.begin() + static_cast<ptrdiff_t>(i),
                     touched.begin() + static_cast<ptrdiff_t>(i + count));
    for (uint32_t t : l.tensors)
      l.writes.push_back(w.tensors[t].alloc_op == op ? 1 : 0);
    l.duration_ns = i == 0 ? duration_ns : 0;
    s.launches.push_back(std::move(l));
    i += count;
  } while (i < touched.size());
  s.last_launch[op] = static_cast<uint32_t>(s.launches.size() - 1);
}

}  // namespace

uint32_t add_workspaces(policy::Workload& w) {
  constexpr uint64_t kMinBytes = uint64_t{1} << 20;
  uint32_t added = 0;
  const auto n = static_cast<uint32_t>(w.ops.size());
  for (uint32_t op = 0; op < n; ++op) {
    const policy::WorkOp& o = w.ops[op];
    std::string both = o.name + " " + o.type;
    std::transform(both.begin(), both.end(), both.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (both.find("conv") == std::string::npos) continue;
    uint64_t largest = 0;
    for (uint32_t t : w.uses_at[op])
      largest = std::max(largest, w.tensors[t].size_bytes);
    // FNV-1a of the name and ordinal: the same layer, the same size.
    uint64_t hash = 1469598103934665603ull;
    for (unsigned char ch : fmt::format("{}#{}", o.name, o.ordinal))
      hash = (hash ^ ch) * 1099511628211ull;
    const double fraction = 0.25 + 0.75 * static_cast<double>(hash % 1024) / 1023.0;
    const uint64_t bytes =
        std::max(kMinBytes, (static_cast<uint64_t>(static_cast<double>(largest) * fraction) + 511) /
                                512 * 512);
    policy::WorkTensor ws;
    ws.trace_index = trace::kNoOp;
    ws.name = o.name + "/workspace";
    ws.size_bytes = bytes;
    ws.alloc_op = op;
    ws.free_op = op;
    ws.uses = {op};
    ws.producer = op;
    w.tensors.push_back(std::move(ws));
    ++added;
  }
  // Allocation ordinals follow the order of allocation: by op, the trace's
  // order within one.
  std::vector<uint32_t> allocated;
  for (uint32_t t = 0; t < w.tensors.size(); ++t)
    if (!w.tensors[t].resident_at_start()) allocated.push_back(t);
  std::stable_sort(allocated.begin(), allocated.end(), [&](uint32_t a, uint32_t b) {
    return w.tensors[a].alloc_op < w.tensors[b].alloc_op;
  });
  for (uint32_t i = 0; i < allocated.size(); ++i)
    w.tensors[allocated[i]].ordinal = i;
  w.index();
  return added;
}

uint32_t scratch_tensors(const policy::Workload& w) {
  uint32_t count = 0;
  for (const policy::WorkTensor& t : w.tensors)
    count += !t.resident_at_start() && t.alloc_op == t.free_op && t.size_bytes > 0 ? 1 : 0;
  return count;
}

Schedule build_schedule(const policy::Workload& w, double time_scale) {
  const auto n = static_cast<uint32_t>(w.ops.size());
  const size_t tensors = w.tensors.size();
  Schedule s;
  s.allocs.resize(n);
  s.frees.resize(n);
  s.first_launch.assign(n, kNone);
  s.last_launch.assign(n, kNone);
  s.becomes.assign(tensors, kNone);
  s.carried_from.assign(tensors, kNone);
  s.runtime_ordinal.assign(tensors, kNone);
  s.runtime_resident.assign(tensors, 0);
  pair_carried(w, s);

  std::map<uint32_t, uint32_t> launches_of;
  uint32_t allocations = 0;
  std::vector<uint32_t> paired_heads;  // in the order their tails are allocated
  for (uint32_t op = 0; op < n; ++op) {
    for (uint32_t t : w.allocs_at[op]) {
      if (w.tensors[t].size_bytes == 0) continue;
      s.allocs[op].push_back(t);
      s.runtime_ordinal[t] = allocations++;
      if (s.becomes[t] != kNone) paired_heads.push_back(s.becomes[t]);
    }
    const int64_t ns = policy::scaled_ns(w.ops[op].idle_ns, time_scale) +
                       policy::scaled_ns(w.ops[op].duration_ns, time_scale);
    add_launches(w, op, ns, s, launches_of);
    for (uint32_t t : w.frees_after[op])
      if (w.tensors[t].size_bytes > 0 && !w.tensors[t].resident_at_start())
        s.frees[op].push_back(t);
    // A head is freed too, whether paired or not: its buffer goes.
    for (uint32_t t : w.frees_after[op])
      if (w.tensors[t].size_bytes > 0 && w.tensors[t].resident_at_start()) s.frees[op].push_back(t);
  }

  // Resident tensors in workload order (their allocation ordinal).
  std::vector<uint32_t> residents;
  for (uint32_t t = 0; t < tensors; ++t)
    if (w.tensors[t].resident_at_start() && w.tensors[t].size_bytes > 0) residents.push_back(t);
  std::stable_sort(residents.begin(), residents.end(), [&](uint32_t a, uint32_t b) {
    return w.tensors[a].ordinal < w.tensors[b].ordinal;
  });
  for (uint32_t t : residents)
    if (w.tensors[t].free_op >= n) s.setup.push_back(t);
  s.setup.insert(s.setup.end(), paired_heads.begin(), paired_heads.end());
  for (uint32_t t : residents)
    if (w.tensors[t].free_op < n && s.carried_from[t] == kNone) {
      s.setup.push_back(t);
      s.end_reallocs.push_back(t);
    }
  for (size_t rank = 0; rank < s.setup.size(); ++rank) {
    s.runtime_ordinal[s.setup[rank]] = static_cast<uint32_t>(rank + 1);  // the counter is 0
    s.runtime_resident[s.setup[rank]] = 1;
  }
  for (uint32_t t = 0; t < tensors; ++t)
    if (!w.tensors[t].resident_at_start() && w.tensors[t].size_bytes > 0 &&
        w.tensors[t].free_op >= n && s.becomes[t] == kNone)
      s.end_frees.push_back(t);
  return s;
}

void scale_batch(policy::Workload& w, double factor) {
  const auto n = static_cast<uint32_t>(w.ops.size());
  for (policy::WorkTensor& t : w.tensors)
    if (!t.resident_at_start() && t.free_op < n)
      t.size_bytes =
          static_cast<uint64_t>(std::llround(static_cast<double>(t.size_bytes) * factor));
  for (policy::WorkOp& op : w.ops) {
    op.duration_ns = std::llround(static_cast<double>(op.duration_ns) * factor);
    op.idle_ns = std::llround(static_cast<double>(op.idle_ns) * factor);
  }
}

}  // namespace cuswap::bench
