// Plan-independent lower bounds (policy/bounds.h).
//
// Note [Lower bounds]
// Let E(k) be the bytes by which the tensors live during op k (those the
// budget does not park, Note [Untouched at start]) exceed the budget. Any
// plan that fits has at least E(k) bytes off the device while k runs, and
// every op runs no earlier than on the infinite-memory schedule.
// - Out: an absent tensor left after its last use before k, so its copy out
//   started after that op ended and completed before k started (memory is
//   freed when the copy completes). A tensor resident at start and not used
//   before k may have left in the previous iteration, for free. On one copy
//   engine, moving E(k) bytes released at those times takes at least the
//   time of the greedy that copies the earliest released bytes first,
//   fractionally (no choice of tensors or order finishes sooner): C_out(k).
// - In: an absent tensor used again at j > k comes back after k ends and
//   before j starts; after j, the rest of the iteration still takes its
//   infinite-memory time. Seen from the iteration's end this is the same
//   problem backwards: C_in(k) from the end. A tensor not used again needs
//   no copy in.
// So T >= max(C_out(k), start_k) + d_k + max(C_in(k), rest after k), for
// every k; problem_ns is the largest, and at least the time-only bound
// max(compute, max_k E(k) / bandwidth) (both directions on one engine:
// twice the bytes). Every copy pays the link's latency once, so each side
// adds one latency when it moves anything. With many ops over the budget
// the bound is taken at an evenly spread sample of them, the peak
// included: a maximum over fewer ops is still a bound.
#include "policy/bounds.h"

#include "policy/baseline.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace cuswap::policy {

namespace {

constexpr size_t kMaxWork = 20'000'000;  // ops sampled x tensors scanned

struct Piece {
  int64_t release_ns;
  uint64_t bytes;
};

// When a single engine at `bandwidth`, free from 0, has moved `need` bytes
// of `pieces` (each available from its release), earliest release first.
int64_t greedy_ns(std::vector<Piece>& pieces, uint64_t need, const Link& link) {
  if (need == 0) return 0;
  std::sort(pieces.begin(), pieces.end(),
            [](const Piece& a, const Piece& b) { return a.release_ns < b.release_ns; });
  double t = 0;
  const double ns_per_byte = 1e9 / link.bandwidth_bytes_per_s;
  for (const Piece& p : pieces) {
    t = std::max(t, static_cast<double>(p.release_ns));
    const uint64_t take = std::min(p.bytes, need);
    t += static_cast<double>(take) * ns_per_byte;
    need -= take;
    if (need == 0) break;
  }
  return static_cast<int64_t>(std::floor(t)) + link.latency_ns;
}

}  // namespace

Bounds lower_bounds(const Workload& w, const SimOptions& options) {
  Bounds b;
  const size_t n = w.ops.size();
  const std::vector<int64_t> starts = infinite_memory_starts(w, options.time_scale);
  b.compute_ns = starts.back();
  b.time_only_ns = b.compute_ns;
  b.problem_ns = b.compute_ns;
  if (n == 0 || options.link.bandwidth_bytes_per_s <= 0) return b;
  const std::vector<uint8_t> parked = parked_at_start(w, options.budget_bytes);
  const std::vector<uint64_t> live = live_bytes_per_op(w, parked);
  std::vector<int64_t> run(n), end(n);  // op k runs [run[k], end[k]) at the earliest
  for (size_t k = 0; k < n; ++k) {
    run[k] = starts[k] + scaled_ns(w.ops[k].idle_ns, options.time_scale);
    end[k] = starts[k + 1];
  }
  std::vector<uint32_t> over;
  uint32_t peak_op = 0;
  for (uint32_t k = 0; k < n; ++k) {
    if (live[k] > live[peak_op]) peak_op = k;
    if (live[k] > options.budget_bytes) over.push_back(k);
  }
  if (over.empty()) return b;
  const uint64_t max_excess = live[peak_op] - options.budget_bytes;
  const double directions = options.link.duplex_contention ? 2.0 : 1.0;
  b.time_only_ns = std::max(
      b.compute_ns, static_cast<int64_t>(std::floor(directions * static_cast<double>(max_excess) *
                                                    1e9 / options.link.bandwidth_bytes_per_s)));
  b.problem_ns = b.time_only_ns;
  b.op = peak_op;

  // The sample: every op over the budget, or an even spread and the peak.
  const size_t per_op = std::max<size_t>(1, w.tensors.size());
  const size_t room = std::max<size_t>(1, kMaxWork / per_op);
  std::vector<uint32_t> sample;
  if (over.size() <= room) {
    sample = over;
  } else {
    for (size_t i = 0; i < room; ++i)
      sample.push_back(over[i * over.size() / room]);
    sample.push_back(peak_op);
  }
  std::vector<Piece> out, in;
  for (uint32_t k : sample) {
    const uint64_t excess = live[k] - options.budget_bytes;
    uint64_t free_out = 0, free_in = 0;
    out.clear();
    in.clear();
    for (uint32_t x = 0; x < w.tensors.size(); ++x) {
      const WorkTensor& t = w.tensors[x];
      if (parked[x]) continue;
      const uint32_t from = t.resident_at_start() ? 0 : t.alloc_op;
      if (from > k || t.free_op < k) continue;
      const auto at = std::lower_bound(t.uses.begin(), t.uses.end(), k);
      if (at != t.uses.end() && *at == k) continue;  // k needs it
      if (at == t.uses.begin()) {
        free_out += t.size_bytes;  // resident at start, not used yet
      } else {
        out.push_back({end[*(at - 1)], t.size_bytes});
      }
      if (at == t.uses.end()) {
        free_in += t.size_bytes;  // not needed again
      } else {
        in.push_back({b.compute_ns - run[*at], t.size_bytes});
      }
    }
    const int64_t c_out = greedy_ns(out, excess > free_out ? excess - free_out : 0, options.link);
    const int64_t c_in = greedy_ns(in, excess > free_in ? excess - free_in : 0, options.link);
    const int64_t bound = std::max(c_out, run[k]) + (end[k] - run[k]) +
                          std::max(c_in, b.compute_ns - end[k]);
    if (bound > b.problem_ns) {
      b.problem_ns = bound;
      b.op = k;
    }
  }
  return b;
}

}  // namespace cuswap::policy
