// Plans in the replay's runtime identities (bench/replay/translate.h).
#include "bench/replay/translate.h"

namespace cuswap::bench {

policy::TensorRef runtime_tensor(const policy::Workload& w, const Schedule& s, uint32_t tensor) {
  policy::TensorRef ref;
  ref.resident_at_start = s.runtime_resident[tensor] != 0;
  ref.ordinal = s.runtime_ordinal[tensor];
  ref.size_bytes = w.tensors[tensor].size_bytes;
  ref.device = w.device;
  ref.name = w.tensors[tensor].name;
  return ref;
}

policy::OpRef runtime_op(const Schedule& s, uint32_t op, bool last) {
  const Launch& l = s.launches[last ? s.last_launch[op] : s.first_launch[op]];
  return {variant_name(l.slots), l.ordinal, op};
}

policy::Plan translate_plan(const policy::Workload& w, const Schedule& s, const policy::Plan& plan,
                            const std::vector<policy::ResolvedEntry>& entries, int device,
                            uint64_t budget_bytes) {
  policy::Plan out = plan;
  out.device = device;
  out.budget_bytes = budget_bytes;
  out.entries.clear();
  for (const policy::ResolvedEntry& e : entries) {
    if (s.runtime_ordinal[e.tensor] == kNone) continue;
    policy::PlanEntry entry;
    entry.tensor = runtime_tensor(w, s, e.tensor);
    entry.tensor.device = device;
    entry.group = e.group;
    entry.leaves = e.leaves;
    entry.returns = e.returns;
    if (e.leaves) entry.evict_after = runtime_op(s, e.evict_after, true);
    if (e.returns) {
      entry.prefetch_at = runtime_op(s, e.prefetch_at, false);
      entry.next_use = runtime_op(s, e.next_use, false);
    }
    out.entries.push_back(std::move(entry));
  }
  return out;
}

}  // namespace cuswap::bench
