// Plan identities: building them from a workload and matching them back.
#include "policy/plan.h"

#include "policy/planner.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

namespace cuswap::policy {

std::string_view mode_name(PlanMode mode) {
  switch (mode) {
    case PlanMode::scheduled:
      return "scheduled";
    case PlanMode::lru:
      return "lru";
    case PlanMode::ondemand:
      return "ondemand";
  }
  return "scheduled";
}

std::optional<PlanMode> parse_mode(std::string_view name) {
  if (name == "scheduled") return PlanMode::scheduled;
  if (name == "lru") return PlanMode::lru;
  if (name == "ondemand") return PlanMode::ondemand;
  return std::nullopt;
}

namespace {

OpRef op_ref(const Workload& workload, uint32_t op) {
  const WorkOp& w = workload.ops[op];
  return OpRef{w.name, w.ordinal, op};
}

}  // namespace

PlanEntry make_entry(const Workload& workload, uint32_t tensor, uint32_t evict_after,
                     uint32_t prefetch_at, uint32_t next_use, uint32_t group) {
  const WorkTensor& t = workload.tensors[tensor];
  PlanEntry e;
  e.tensor = TensorRef{t.resident_at_start(), t.ordinal, t.size_bytes, workload.device, t.name};
  e.evict_after = op_ref(workload, evict_after);
  e.prefetch_at = op_ref(workload, prefetch_at);
  e.next_use = op_ref(workload, next_use);
  e.group = group;
  return e;
}

PlanEntry make_leaving_entry(const Workload& workload, uint32_t tensor, uint32_t evict_after,
                             uint32_t group) {
  PlanEntry e = make_entry(workload, tensor, evict_after, evict_after, evict_after, group);
  e.returns = false;
  return e;
}

PlanEntry make_returning_entry(const Workload& workload, uint32_t tensor, uint32_t prefetch_at,
                               uint32_t next_use, uint32_t group) {
  PlanEntry e = make_entry(workload, tensor, prefetch_at, prefetch_at, next_use, group);
  e.leaves = false;
  return e;
}

bool resolve(const Plan& plan, const Workload& workload, std::vector<ResolvedEntry>& out,
             std::string& error) {
  out.clear();
  // The plan must be for this trace's planned window: device, iteration,
  // a planner cuswap knows, no tensor evicted again while it is out.
  if (!plan.planner.empty() && find_planner(plan.planner) == nullptr) {
    error = fmt::format("key planner: expected one of {}, got \"{}\"", planner_names(),
                        plan.planner);
    return false;
  }
  if (plan.device != workload.device) {
    error = fmt::format("key device: the plan is for device {}, the trace's planned device is {} "
                        "(--device picks another)",
                        plan.device, workload.device);
    return false;
  }
  if (plan.iteration != workload.iteration) {
    const auto name = [](uint32_t it) {
      return it == trace::kNoIteration ? std::string("none") : std::to_string(it);
    };
    error = fmt::format("key iteration: the plan is for iteration {}, the trace's planned "
                        "iteration is {} (--iteration picks another)",
                        name(plan.iteration), name(workload.iteration));
    return false;
  }
  std::unordered_map<std::string_view, std::vector<uint32_t>> ops_by_name;
  for (uint32_t k = 0; k < workload.ops.size(); ++k)
    ops_by_name[workload.ops[k].name].push_back(k);
  std::vector<uint32_t> resident, allocated;
  for (uint32_t t = 0; t < workload.tensors.size(); ++t)
    (workload.tensors[t].resident_at_start() ? resident : allocated).push_back(t);

  const auto find_op = [&](const OpRef& ref, size_t entry, std::string_view key,
                           uint32_t& op) -> bool {
    const auto it = ops_by_name.find(ref.name);
    if (it == ops_by_name.end() || ref.ordinal >= it->second.size()) {
      error = fmt::format("entries[{}].{}: no op \"{}\" #{} in the iteration", entry, key, ref.name,
                          ref.ordinal);
      return false;
    }
    op = it->second[ref.ordinal];
    return true;
  };
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const PlanEntry& e = plan.entries[i];
    const std::vector<uint32_t>& pool = e.tensor.resident_at_start ? resident : allocated;
    if (e.tensor.ordinal >= pool.size() ||
        workload.tensors[pool[e.tensor.ordinal]].size_bytes != e.tensor.size_bytes) {
      error = fmt::format("entries[{}].tensor: no {} tensor #{} of {} bytes in the iteration", i,
                          e.tensor.resident_at_start ? "resident" : "allocated", e.tensor.ordinal,
                          e.tensor.size_bytes);
      return false;
    }
    ResolvedEntry r;
    r.tensor = pool[e.tensor.ordinal];
    r.group = e.group;
    r.leaves = e.leaves;
    r.returns = e.returns;
    if ((e.leaves && !find_op(e.evict_after, i, "evict_after", r.evict_after)) ||
        (e.returns && (!find_op(e.prefetch_at, i, "prefetch_at", r.prefetch_at) ||
                       !find_op(e.next_use, i, "next_use", r.next_use))))
      return false;
    const WorkTensor& tensor = workload.tensors[r.tensor];
    const auto n = static_cast<uint32_t>(workload.ops.size());
    if (!e.leaves || !e.returns) {  // Note [Carried tensors]
      if (!e.leaves && !e.returns) {
        error = fmt::format("entries[{}]: an entry must leave or return", i);
        return false;
      }
      if (!e.leaves && !tensor.resident_at_start()) {
        error = fmt::format("entries[{}]: only a tensor resident at start can start on the host "
                            "(evict_after is null)",
                            i);
        return false;
      }
      if (!e.returns && tensor.free_op < n) {
        error = fmt::format("entries[{}]: only a tensor live at the end can stay out "
                            "(prefetch_at is null); this one is freed after op {}",
                            i, tensor.free_op);
        return false;
      }
      if (!e.returns) r.prefetch_at = r.next_use = n;  // out to the end
      if (!e.leaves) r.evict_after = 0;
      if (!e.leaves && r.prefetch_at > r.next_use) {
        error = fmt::format("entries[{}]: expected prefetch_at <= next_use, got ops {}, {}", i,
                            r.prefetch_at, r.next_use);
        return false;
      }
    } else if (r.wraps()) {  // Note [Wrap entries]
      if (!tensor.resident_at_start() || tensor.free_op < workload.ops.size() ||
          r.prefetch_at > r.next_use) {
        error = fmt::format(
            "entries[{}]: next_use (op {}) is not after evict_after (op {}), which only a tensor "
            "resident at start and live at the end may wrap, with prefetch_at <= next_use (op {})",
            i, r.next_use, r.evict_after, r.prefetch_at);
        return false;
      }
    } else if (!(r.evict_after < r.prefetch_at && r.prefetch_at <= r.next_use)) {
      error = fmt::format(
          "entries[{}]: expected evict_after < prefetch_at <= next_use, got ops {}, {}, {}", i,
          r.evict_after, r.prefetch_at, r.next_use);
      return false;
    }
    out.push_back(r);
  }
  // One tensor may leave several times, never while it is already out:
  // each entry keeps its tensor away over closed op intervals (from its
  // evict_after to its next_use, wrapping at the end; one-sided entries
  // from the start or to the end), which may touch but not overlap.
  struct Away {
    uint32_t tensor, from, to;
    size_t entry;
  };
  const auto n = static_cast<uint32_t>(workload.ops.size());
  std::vector<Away> aways;
  for (size_t i = 0; i < out.size(); ++i) {
    const ResolvedEntry& r = out[i];
    if (!r.leaves) {
      aways.push_back({r.tensor, 0, r.next_use, i});
    } else if (!r.returns) {
      aways.push_back({r.tensor, r.evict_after, n, i});
    } else if (r.wraps()) {
      aways.push_back({r.tensor, r.evict_after, n, i});
      aways.push_back({r.tensor, 0, r.next_use, i});
    } else {
      aways.push_back({r.tensor, r.evict_after, r.next_use, i});
    }
  }
  std::sort(aways.begin(), aways.end(), [](const Away& a, const Away& b) {
    return std::tie(a.tensor, a.from, a.to, a.entry) < std::tie(b.tensor, b.from, b.to, b.entry);
  });
  for (size_t k = 1; k < aways.size(); ++k) {
    const Away& before = aways[k - 1];
    const Away& after = aways[k];
    if (before.tensor != after.tensor || after.from >= before.to) continue;
    const size_t later = std::max(before.entry, after.entry);
    const size_t earlier = std::min(before.entry, after.entry);
    const ResolvedEntry& e = out[earlier];
    error = fmt::format("entries[{}]: its tensor is still out for entries[{}] (evicted after op "
                        "{}, back for op {})",
                        later, earlier, e.leaves ? fmt::format("{}", e.evict_after) : "none",
                        e.returns ? fmt::format("{}", e.next_use) : "none");
    return false;
  }
  return true;
}

}  // namespace cuswap::policy
