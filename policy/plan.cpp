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

OpRef op_ref(const Workload& workload, uint32_t op) {
  const WorkOp& w = workload.ops[op];
  return OpRef{w.name, w.ordinal, op};
}

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

namespace {

// The plan's keys against the trace's planned window: a planner cuswap
// knows, the device and the iteration.
bool check_window(const Plan& plan, const Workload& workload, std::string& error) {
  if (!plan.planner.empty() && find_planner(plan.planner) == nullptr) {
    error =
        fmt::format("key planner: expected one of {}, got \"{}\"", planner_names(), plan.planner);
    return false;
  }
  if (plan.device != workload.device) {
    error = fmt::format(
        "key device: the plan is for device {}, the trace's planned device is {} "
        "(--device picks another)",
        plan.device, workload.device);
    return false;
  }
  if (plan.iteration != workload.iteration) {
    const auto name = [](uint32_t it) {
      return it == trace::kNoIteration ? std::string("none") : std::to_string(it);
    };
    error = fmt::format(
        "key iteration: the plan is for iteration {}, the trace's planned "
        "iteration is {} (--iteration picks another)",
        name(plan.iteration), name(workload.iteration));
    return false;
  }
  return true;
}

// The workload's ops and tensors by the identities a plan names them by:
// ops by (name, ordinal), tensors by (resident_at_start, ordinal).
class Identities {
 public:
  explicit Identities(const Workload& workload) : workload_(workload) {
    for (uint32_t k = 0; k < workload.ops.size(); ++k)
      ops_by_name_[workload.ops[k].name].push_back(k);
    for (uint32_t t = 0; t < workload.tensors.size(); ++t)
      (workload.tensors[t].resident_at_start() ? resident_ : allocated_).push_back(t);
  }

  // Entry `entry`'s tensor, with the size the plan recorded.
  bool find_tensor(const TensorRef& ref, size_t entry, uint32_t& tensor, std::string& error) const {
    const std::vector<uint32_t>& pool = ref.resident_at_start ? resident_ : allocated_;
    if (ref.ordinal >= pool.size() ||
        workload_.tensors[pool[ref.ordinal]].size_bytes != ref.size_bytes) {
      error = fmt::format("entries[{}].tensor: no {} tensor #{} of {} bytes in the iteration",
                          entry, ref.resident_at_start ? "resident" : "allocated", ref.ordinal,
                          ref.size_bytes);
      return false;
    }
    tensor = pool[ref.ordinal];
    return true;
  }

  // Entry `entry`'s op under `key`.
  bool find_op(const OpRef& ref, size_t entry, std::string_view key, uint32_t& op,
               std::string& error) const {
    const auto it = ops_by_name_.find(ref.name);
    if (it == ops_by_name_.end() || ref.ordinal >= it->second.size()) {
      error = fmt::format("entries[{}].{}: no op \"{}\" #{} in the iteration", entry, key, ref.name,
                          ref.ordinal);
      return false;
    }
    op = it->second[ref.ordinal];
    return true;
  }

 private:
  const Workload& workload_;
  std::unordered_map<std::string_view, std::vector<uint32_t>> ops_by_name_;
  std::vector<uint32_t> resident_, allocated_;
};

// The order of a one-sided entry's ops (Note [Carried tensors]), which
// fills in the side it lacks: from the start, or out to the end.
bool check_one_sided(const PlanEntry& e, size_t i, const Workload& workload, ResolvedEntry& r,
                     std::string& error) {
  const WorkTensor& tensor = workload.tensors[r.tensor];
  const auto n = static_cast<uint32_t>(workload.ops.size());
  if (!e.leaves && !e.returns) {
    error = fmt::format("entries[{}]: an entry must leave or return", i);
    return false;
  }
  if (!e.leaves && !tensor.resident_at_start()) {
    error = fmt::format(
        "entries[{}]: only a tensor resident at start can start on the host "
        "(evict_after is null)",
        i);
    return false;
  }
  if (!e.returns && tensor.free_op < n) {
    error = fmt::format(
        "entries[{}]: only a tensor live at the end can stay out "
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
  return true;
}

// Entry `i` in workload indices, its ops in an order the plan allows.
bool resolve_entry(const PlanEntry& e, size_t i, const Workload& workload, const Identities& ids,
                   ResolvedEntry& r, std::string& error) {
  if (!ids.find_tensor(e.tensor, i, r.tensor, error)) return false;
  r.group = e.group;
  r.leaves = e.leaves;
  r.returns = e.returns;
  if ((e.leaves && !ids.find_op(e.evict_after, i, "evict_after", r.evict_after, error)) ||
      (e.returns && (!ids.find_op(e.prefetch_at, i, "prefetch_at", r.prefetch_at, error) ||
                     !ids.find_op(e.next_use, i, "next_use", r.next_use, error))))
    return false;
  const WorkTensor& tensor = workload.tensors[r.tensor];
  if (!e.leaves || !e.returns) return check_one_sided(e, i, workload, r, error);
  if (r.wraps()) {  // Note [Wrap entries]
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
  return true;
}

// One tensor may leave several times, never while it is already out:
// each entry keeps its tensor away over closed op intervals (from its
// evict_after to its next_use, wrapping at the end; one-sided entries
// from the start or to the end), which may touch but not overlap.
bool check_no_overlap(const std::vector<ResolvedEntry>& entries, const Workload& workload,
                      std::string& error) {
  struct Away {
    uint32_t tensor, from, to;
    size_t entry;
  };
  const auto n = static_cast<uint32_t>(workload.ops.size());
  std::vector<Away> aways;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ResolvedEntry& r = entries[i];
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
    const ResolvedEntry& e = entries[earlier];
    error = fmt::format(
        "entries[{}]: its tensor is still out for entries[{}] (evicted after op "
        "{}, back for op {})",
        later, earlier, e.leaves ? fmt::format("{}", e.evict_after) : "none",
        e.returns ? fmt::format("{}", e.next_use) : "none");
    return false;
  }
  return true;
}

}  // namespace

bool resolve(const Plan& plan, const Workload& workload, std::vector<ResolvedEntry>& out,
             std::string& error) {
  out.clear();
  if (!check_window(plan, workload, error)) return false;
  const Identities ids(workload);
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    ResolvedEntry r;
    if (!resolve_entry(plan.entries[i], i, workload, ids, r, error)) return false;
    out.push_back(r);
  }
  return check_no_overlap(out, workload, error);
}

}  // namespace cuswap::policy
