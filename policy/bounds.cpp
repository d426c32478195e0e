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
// So op k waits W_out(k) = max(0, C_out(k) - start_k) at least, and the
// copies in after it lengthen the rest by W_in(k) = max(0, C_in(k) - rest
// after k) at least: T >= compute + W_out(k) + W_in(k). Two things tighten
// that, and both are still true of every plan:
// - One set is away both ways. C_out and C_in each take the best bytes
//   for their side, but the bytes away at k are the same on both: a tensor
//   that is free out (resident at start, not used yet) and needed again
//   costs a copy in, one that is free in and was used costs a copy out. If
//   F bytes are free both ways, I bytes free in only, and a bytes of the
//   set free out only, the copies out move at least E(k) - F - a bytes and
//   the copies in at least max(a, E(k) - F - I). The first falls and the
//   second rises with a, so over [a_i, a_i+1] the wait is at least the
//   copies out for a_i+1 plus the copies in for a_i; the least over an even
//   grid of a is a bound. (A memory snapshot of one window, at 50% on
//   pcie3: at op 4311, 364 MiB must be away; the two 147 MiB buffers
//   resident at start are free out, but their first use is 20 us after it,
//   so away there they cost 25.7 ms of copies in: 50.6 -> 67.2 ms.)
// - Waits add across ops. Ops run in order, each for its own time, so a
//   wait before k1 delays every later op: T >= compute + W_out(k1) +
//   W_in(k2) for every k1 <= k2 (ResNet-50 at 50% on pcie3: the forward
//   pass waits for copies out, the backward for copies in: 235.5 ->
//   244.5 ms).
// problem_ns is the largest, and at least the time-only bound
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
constexpr uint64_t kJointSteps = 64;     // Note [Lower bounds]: the split of one set's bytes

struct Piece {
  int64_t release_ns;
  uint64_t bytes;
};

// When a single engine at `bandwidth`, free from 0, has moved `need` bytes
// of `pieces` (each available from its release), earliest release first:
// the pieces are sorted once, and each `need` is a binary search.
class Greedy {
 public:
  Greedy(std::vector<Piece>& pieces, const Link& link)
      : ns_per_byte_(1e9 / link.bandwidth_bytes_per_s), latency_ns_(link.latency_ns) {
    std::sort(pieces.begin(), pieces.end(),
              [](const Piece& a, const Piece& b) { return a.release_ns < b.release_ns; });
    double t = 0;
    uint64_t bytes = 0;
    for (const Piece& p : pieces) {
      t = std::max(t, static_cast<double>(p.release_ns)) +
          static_cast<double>(p.bytes) * ns_per_byte_;
      bytes += p.bytes;
      release_ns_.push_back(p.release_ns);
      moved_bytes_.push_back(bytes);
      done_ns_.push_back(t);
    }
  }

  int64_t ns(uint64_t need) const {
    if (need == 0) return 0;
    const auto j = static_cast<size_t>(
        std::lower_bound(moved_bytes_.begin(), moved_bytes_.end(), need) - moved_bytes_.begin());
    double t = 0;
    if (j == moved_bytes_.size()) {  // more than there is: all of it
      t = done_ns_.empty() ? 0 : done_ns_.back();
    } else {
      const double before = j == 0 ? 0 : done_ns_[j - 1];
      const uint64_t moved = j == 0 ? 0 : moved_bytes_[j - 1];
      t = std::max(before, static_cast<double>(release_ns_[j])) +
          static_cast<double>(need - moved) * ns_per_byte_;
    }
    return static_cast<int64_t>(std::floor(t)) + latency_ns_;
  }

 private:
  double ns_per_byte_;
  int64_t latency_ns_;
  std::vector<int64_t> release_ns_;
  std::vector<uint64_t> moved_bytes_;  // after each piece
  std::vector<double> done_ns_;        // when each piece is done
};

// What `need` lacks after `have`.
uint64_t short_of(uint64_t need, uint64_t have) {
  return need > have ? need - have : 0;
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
  std::sort(sample.begin(), sample.end());
  std::vector<Piece> out, in;
  int64_t out_wait = 0;  // the longest wait for copies out at or before k
  for (uint32_t k : sample) {
    const uint64_t excess = live[k] - options.budget_bytes;
    // Absent at k: free both ways, free out only, free in only, or neither.
    uint64_t free_both = 0, free_out_only = 0, free_in_only = 0;
    out.clear();
    in.clear();
    for (uint32_t x = 0; x < w.tensors.size(); ++x) {
      const WorkTensor& t = w.tensors[x];
      if (parked[x]) continue;
      const uint32_t from = t.resident_at_start() ? 0 : t.alloc_op;
      if (from > k || t.free_op < k) continue;
      const auto at = std::lower_bound(t.uses.begin(), t.uses.end(), k);
      if (at != t.uses.end() && *at == k) continue;  // k needs it
      const bool out_free = at == t.uses.begin();    // resident at start, not used yet
      const bool in_free = at == t.uses.end();       // not needed again
      if (!out_free) out.push_back({end[*(at - 1)], t.size_bytes});
      if (!in_free) in.push_back({b.compute_ns - run[*at], t.size_bytes});
      if (out_free && in_free) free_both += t.size_bytes;
      if (out_free && !in_free) free_out_only += t.size_bytes;
      if (!out_free && in_free) free_in_only += t.size_bytes;
    }
    const Greedy c_out(out, options.link), c_in(in, options.link);
    const auto out_wait_for = [&](uint64_t bytes) {
      return std::max<int64_t>(0, c_out.ns(bytes) - run[k]);
    };
    const auto in_wait_for = [&](uint64_t bytes) {
      return std::max<int64_t>(0, c_in.ns(bytes) - (b.compute_ns - end[k]));
    };
    const uint64_t in_least = short_of(excess, free_both + free_in_only);
    out_wait = std::max(out_wait, out_wait_for(short_of(excess, free_both + free_out_only)));
    int64_t wait = out_wait + in_wait_for(in_least);
    // One set is away both ways: `a` bytes of it free out only need
    // copies in. Over [a_i, a_i+1], the wait is at least the copies out
    // for a_i+1 and the copies in for a_i (one falls, one rises with a).
    const uint64_t most = std::min(free_out_only, short_of(excess, free_both));
    int64_t joint = INT64_MAX;
    for (uint64_t i = 0; i < kJointSteps; ++i) {
      const uint64_t a = most * i / kJointSteps, a_next = most * (i + 1) / kJointSteps;
      joint = std::min(joint, out_wait_for(short_of(excess, free_both + a_next)) +
                                  in_wait_for(std::max(a, in_least)));
    }
    wait = std::max(wait, joint);
    if (b.compute_ns + wait > b.problem_ns) {
      b.problem_ns = b.compute_ns + wait;
      b.op = k;
    }
  }
  return b;
}

}  // namespace cuswap::policy
