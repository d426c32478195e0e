// Note [Steps without marks] (step_finder.h).
#include "policy/step_finder.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace cuswap::policy {
namespace {

// Where the repeat with period `p` begins: the first index from which
// keys[i] == keys[i + p] holds to the end (keys.size() - p when the last
// pair already differs).
size_t repeat_start(const std::vector<uint64_t>& keys, size_t p) {
  size_t i = keys.size() - p;
  while (i > 0 && keys[i - 1] == keys[i - 1 + p])
    --i;
  return i;
}

// Whether a repeat of period `p` from `begins` passes for steps: two whole
// periods at least, over at least half the ops.
bool holds(size_t n, size_t p, size_t begins) {
  const size_t repeated = n - begins;
  return repeated >= 2 * p && 2 * repeated >= n;
}

}  // namespace

Period repeating_period(const std::vector<uint64_t>& keys) {
  const size_t n = keys.size();
  for (size_t p = 1; 2 * p <= n; ++p) {
    const size_t begins = repeat_start(keys, p);
    if (!holds(n, p, begins)) continue;
    // A loop of a few ops (one kernel run again and again) shows no step:
    // every multiple of its period repeats too.
    if (p < kMinStepOps) return {};
    return {static_cast<uint32_t>(p), static_cast<uint32_t>(begins)};
  }
  return {};
}

std::vector<trace::Iteration> find_steps(const trace::Trace& trace, int device) {
  // The ops the workload keeps (policy/workload.cpp, add_ops): the device's
  // compute ops, or every op where the device has none.
  const bool on_device = device >= 0 && std::any_of(trace.ops.begin(), trace.ops.end(),
                                                    [&](const trace::Op& op) {
                                                      return op.device == device;
                                                    });
  std::vector<uint32_t> kept;
  std::vector<uint64_t> keys;
  std::unordered_map<std::string_view, uint64_t> key_of;
  for (uint32_t i = 0; i < trace.ops.size(); ++i) {
    const trace::Op& op = trace.ops[i];
    if ((on_device && op.device != device) || op.is_copy) continue;
    kept.push_back(i);
    keys.push_back(key_of.emplace(op.name, key_of.size()).first->second);
  }
  const Period period = repeating_period(keys);
  std::vector<trace::Iteration> steps;
  if (period.ops == 0) return steps;
  for (size_t first = period.begins; first + period.ops <= kept.size(); first += period.ops) {
    const size_t next = first + period.ops;  // the next step's first op, if any
    trace::Iteration step;
    step.first_op = kept[first];
    step.start_ns = trace.ops[step.first_op].start_ns;
    if (next < kept.size()) {
      step.end_op = kept[next];
      step.end_ns = trace.ops[step.end_op].start_ns;
    } else {
      step.end_op = kept[next - 1] + 1;
      for (size_t k = first; k < next; ++k) {
        const trace::Op& op = trace.ops[kept[k]];
        step.end_ns = std::max(step.end_ns, op.start_ns + op.duration_ns);
      }
    }
    steps.push_back(step);
  }
  return steps;
}

}  // namespace cuswap::policy
