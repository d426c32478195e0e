// Following a plan at run time: the iteration cursor that turns a plan's
// identities into buffers and launches as they happen, and says which
// copies to start where. Pure logic: the hooks feed it events and carry out
// what it answers (runtime/plan_follow.cpp); it never calls the driver.
//
// Runtime identities (docs/plan-format.md): an op is (kernel name, ordinal
// among this iteration's launches of that name); a tensor allocated in the
// iteration is (ordinal among the iteration's allocations, size); one live
// when the iteration begins is (rank by allocation order among the live
// buffers, size). Buffer ids grow with allocation order.
//
// Note [Tolerant matching]
// A multi-threaded framework does not allocate in exactly the same order
// each step: two threads' allocations swap places, a small workspace comes
// and goes. A tensor is bound at the ordinal the plan names when the size
// agrees. Once its ordinal has gone by without it, to the nearest earlier
// allocation of that size within kMatchWindow ordinals that matched nothing
// (it came early), else to the next one of that size (it comes late). An
// allocation never takes a tensor whose ordinal is still to come: the plan
// names only the tensors it moves, and a framework makes many buffers of
// one size in a row (one per layer), so a buffer the plan does not name
// would take its neighbour's tensor, and each after it the next one's,
// evicting buffers the plan keeps. Ops are counted per kernel name, so
// launches of different kernels may interleave freely. What cannot be
// bound is a mismatch: the iteration stops following the plan (nothing more
// is started, the allocator's reactive path does the rest), since an
// eviction of the wrong buffer costs two copies and a stall. After
// kReplanAfter mismatched iterations in a row the plan is stale and the
// owner re-plans (online) or gives up on it (offline).
//
// Note [Moving triggers]
// A planned prefetch whose use had to wait for it was late: next iteration
// its trigger moves earlier, by one launch the first time and twice as many
// each time it is late again, along the launches of the last iteration; it
// never moves before the launch after its eviction (nothing to bring back
// before it left). A prefetch on time keeps its trigger. Where the link is
// what makes them late, moving triggers earlier cannot make the copies
// faster; it only brings buffers back sooner, and at some point they no
// longer fit beside the rest: uses then fetch on demand what the plan had
// evicted for room (ResNet-50 at 4x its batch under its 1x peak, online:
// 346 ms a step after six iterations of moves, then 472, 421, 420 with 17-20
// fetches on demand an iteration). So an iteration after moves that fetched
// more on demand than the one before them puts the moved triggers back
// where they were, and those entries move no more.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policy/plan.h"

namespace cuswap::policy {

inline constexpr uint32_t kMatchWindow = 8;
inline constexpr uint32_t kReplanAfter = 3;

struct FollowStats {
  uint64_t iterations = 0;
  uint64_t followed_iterations = 0;    // every entry bound, nothing mismatched
  uint64_t mismatched_iterations = 0;  // fell back to reactive part way
  uint64_t late_prefetches = 0;
  uint64_t late_ns = 0;              // time uses waited for planned copies
  uint64_t triggers_moved = 0;       // Note [Moving triggers]
  uint64_t triggers_moved_back = 0;  // moves undone, for room ran short
};

class PlanFollower {
 public:
  // The plan's entries must use runtime identities; entries that fail the
  // checks of plan.h's invariants are dropped (dropped() counts them).
  explicit PlanFollower(const Plan& plan);

  struct LiveBuffer {
    uint64_t id = 0;
    uint64_t size_bytes = 0;
  };
  // A new iteration: `live` holds the buffers live now, oldest first.
  void begin_iteration(std::span<const LiveBuffer> live);
  void on_alloc(uint64_t id, uint64_t size_bytes);
  void on_free(uint64_t id);

  // What to do around one launch: prefetches to start before it, the
  // entries whose next use it is (to time them), evictions to start after it.
  struct Copy {
    uint64_t buffer_id = 0;
    uint32_t entry = 0;
  };
  struct Actions {
    std::vector<Copy> prefetch;
    std::vector<Copy> uses;
    std::vector<Copy> evict;
    void clear() {
      prefetch.clear();
      uses.clear();
      evict.clear();
    }
  };
  void on_launch(std::string_view kernel, Actions& out);

  // The use of `entry` waited `late_ns` for its copy (Note [Moving triggers]).
  void report_late(uint32_t entry, uint64_t late_ns);
  // Uses that fetched on demand in the iteration about to end (Note [Moving
  // triggers]); before begin_iteration.
  void report_on_demand(uint64_t count) { on_demand_ = count; }

  bool following() const { return following_; }
  // kReplanAfter iterations in a row did not match.
  bool stale() const { return mismatched_in_a_row_ >= kReplanAfter; }
  const FollowStats& stats() const { return stats_; }
  size_t entries() const { return entries_.size(); }
  size_t dropped() const { return dropped_; }
  // The first mismatch of this iteration, and of the one before (for the
  // log at an iteration's start); "" if none.
  const std::string& mismatch() const { return mismatch_; }
  const std::string& last_mismatch() const { return last_mismatch_; }

 private:
  struct OpKey {
    uint32_t name = 0;
    uint32_t ordinal = 0;
    bool operator==(const OpKey&) const = default;
  };
  struct OpKeyHash {
    size_t operator()(const OpKey& k) const {
      return std::hash<uint64_t>{}((uint64_t{k.name} << 32) | k.ordinal);
    }
  };
  // One tensor the plan names (several entries may share it).
  struct Slot {
    bool resident_at_start = false;
    uint32_t ordinal = 0;
    uint64_t size_bytes = 0;
    uint64_t bound = 0;  // buffer id this iteration, 0: not yet
    bool freed = false;
  };
  // An allocation that matched no slot, kept for the window: it may be a
  // slot's allocation come early (Note [Tolerant matching]).
  struct Stray {
    uint32_t ordinal = 0;
    uint64_t id = 0;
    uint64_t size_bytes = 0;
  };
  struct Entry {
    uint32_t slot = 0;
    OpKey evict_after, prefetch_at, next_use;
    bool leaves = true, returns = true;
    bool wraps = false;        // Note [Wrap entries]
    uint32_t late_streak = 0;  // iterations in a row it was late
    OpKey moved_from;          // prefetch_at before its last move
    bool settled = false;      // a move made things worse: it moves no more
  };
  enum class Kind : uint8_t { prefetch, use, evict };
  struct Trigger {
    Kind kind;
    uint32_t entry;
  };

  uint32_t intern(std::string_view name);
  void build_triggers();
  void bind(uint32_t slot, uint64_t buffer_id);
  void mismatch(std::string why);
  void end_iteration();
  bool move_trigger(uint32_t entry);
  bool launch_expected(const OpKey& key) const;

  std::unordered_map<std::string, uint32_t> names_;
  std::vector<Slot> slots_;
  std::vector<Entry> entries_;
  size_t dropped_ = 0;
  std::vector<uint32_t> moved_last_;  // entries moved at the last iteration's end
  uint64_t on_demand_ = 0, on_demand_before_moves_ = 0;
  std::unordered_multimap<OpKey, Trigger, OpKeyHash> triggers_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> alloc_slots_;  // ordinal -> slots
  std::vector<uint32_t> allocated_by_ordinal_;  // slots allocated in the iteration, by ordinal
  size_t overdue_cursor_ = 0;
  std::vector<Stray> strays_;  // oldest first
  std::unordered_map<uint64_t, uint32_t> slot_of_buffer_;
  std::vector<uint32_t> counts_;      // launches so far this iteration, by name
  std::vector<OpKey> sequence_;       // this iteration's launches
  std::vector<OpKey> last_sequence_;  // the previous iteration's
  std::vector<uint32_t> to_move_;     // entries late this iteration
  uint32_t alloc_ordinal_ = 0;
  bool in_iteration_ = false;
  bool following_ = false;
  bool matched_this_iteration_ = true;
  uint32_t mismatched_in_a_row_ = 0;
  std::string mismatch_, last_mismatch_;
  FollowStats stats_;
};

}  // namespace cuswap::policy
