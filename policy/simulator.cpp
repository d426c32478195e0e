// The simulator: ops in order on the compute engine; copies FIFO on their
// engine; device memory accounted at every change (docs/simulator.md).
//
// Note [Memory accounting]
// A tensor takes device memory from its allocation (the start of its
// allocating op) to its free (the end of its freeing op). An eviction frees
// it when it lands: when an allocation or a fetch wants its room, once the
// copy out completes (Note [Lazy landing]); a fetch reserves it when the
// fetch is issued. Reservations that would exceed the budget take the
// room of the evictions still on the device, oldest first, waiting for
// their copies; then a planned prefetch is retried at every later op, and
// an allocation or an on-demand fetch evicts (least recently used first,
// never what the op itself needs) and waits for that copy.
#include "policy/simulator.h"

#include "policy/bounds.h"

#include <algorithm>
#include <deque>
#include <map>
#include <queue>
#include <set>
#include <tuple>

namespace cuswap::policy {

std::optional<Shortfall> check_budget(const Workload& workload, uint64_t budget_bytes) {
  std::optional<Shortfall> worst;
  std::vector<uint32_t> set;
  for (uint32_t k = 0; k < workload.ops.size(); ++k) {
    set = workload.uses_at[k];
    set.insert(set.end(), workload.allocs_at[k].begin(), workload.allocs_at[k].end());
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    uint64_t bytes = 0;
    for (uint32_t t : set)
      bytes += workload.tensors[t].size_bytes;
    if (bytes <= budget_bytes || (worst && bytes <= worst->required_bytes)) continue;
    std::sort(set.begin(), set.end(), [&](uint32_t a, uint32_t b) {
      const uint64_t sa = workload.tensors[a].size_bytes, sb = workload.tensors[b].size_bytes;
      return sa != sb ? sa > sb : a < b;
    });
    if (set.size() > 5) set.resize(5);
    worst = Shortfall{k, bytes, bytes - budget_bytes, set};
  }
  return worst;
}

namespace {

// Note [Cancelled copies]
// When a tensor on its way out is needed again (its prefetch or its next
// use comes first) or is freed, the eviction is called off: the tensor
// stays on the device. Its copy is not: the runtime queues a planned
// eviction's copy on the eviction stream as soon as the tensor's last use
// is launched (Note [Planned moves] in allocator/planned_moves.cpp), the
// host running ahead of the device, and a copy handed to the driver cannot
// be taken back. So the copy runs and is charged, the copies behind it
// wait for it, and the tensor's next use waits for it too (the copy reads
// the bytes the use may write).

// Note [Lazy landing]
// A tensor whose copy out has ended is not gone: the runtime lands an
// eviction (its pages back to the pool) when room is wanted, oldest first,
// and a use or prefetch of a tensor not landed yet calls the eviction off.
// The host runs ahead of the device, so what decides is the order of the
// ops, not the clock: an allocation or a prefetch that finds no room takes
// the room of the oldest eviction still on the device, waiting for its
// copy to end; one that finds room takes nothing. A tensor whose room no
// op wanted before its prefetch stays: its copy out was for nothing, and
// no copy back is needed.

// Note [An op's fetches at once]
// The runtime sees a launch's buffers together: it makes room for, and
// queues, the fetch of every evicted one before the launch, so the copy out
// that makes room for the second overlaps the copy in of the first. The
// simulator does the same: each of an op's fetches is issued when the op's
// turn comes (after its allocations), or once the room the one before it
// waited for was made, not when the one before it lands; the op starts
// when the last lands.

// Note [Pinned small tensors]
// The swapping allocator gives a buffer below swap_min a slot in a slab
// page shared with others, and a slab never moves (Note [Charged sizes] in
// policy/workload.h). The simulator keeps such tensors where the runtime
// does (those a charged workload marks `slab`, and with
// SimOptions::swap_min_bytes those below it): a planned eviction of one is
// skipped, as the runtime refuses it, memory pressure never picks one, and
// a plan that starts one on the host (a wrap or carried entry) finds it
// resident. The bytes still count against the budget.

// Unified memory without hints migrates on faults, a 2 MiB chunk at a time,
// each fault paying its own service latency on top of the transfer.
constexpr uint64_t kFaultChunkBytes = 2u << 20;
constexpr int64_t kFaultLatencyNs = 20'000;
constexpr uint32_t kNoOpClaim = UINT32_MAX - 1;  // protect_ never holds it

enum class State : uint8_t { absent, resident, evicting, host, fetching };

struct TensorState {
  State state = State::absent;
  uint32_t generation = 0;  // bumps cancel the pending copy event
  int64_t ready_ns = 0;     // when the copy in flight completes
  int64_t hold_ns = 0;      // its next use waits until then (Note [Cancelled copies])
  uint64_t stamp = 0;       // eviction order key (Note [Memory accounting])
  int32_t entry = -1;       // the entry whose prefetch is in flight or done
};

struct Event {
  int64_t time_ns;
  uint32_t tensor;
  uint32_t generation;
  bool operator>(const Event& o) const {
    return std::tie(time_ns, tensor) > std::tie(o.time_ns, o.tensor);
  }
};
using EventQueue = std::priority_queue<Event, std::vector<Event>, std::greater<>>;

// A copy engine: copies run one after another in issue order.
struct Engine {
  int64_t free_ns = 0;  // when the last copy issued ends
};

class Simulation {
 public:
  Simulation(const Workload& w, PlanMode mode, const std::vector<ResolvedEntry>& entries,
             const SimOptions& options)
      : w_(w),
        mode_(mode),
        entries_(entries),
        o_(options),
        state_(w.tensors.size()),
        protect_(w.tensors.size(), UINT32_MAX) {
    r_.link = options.link.name;
    r_.time_scale = options.time_scale;
    r_.budget_bytes = options.budget_bytes;
    r_.entry_late_ns.assign(entries.size(), 0);
    r_.entry_cancelled.assign(entries.size(), 0);
    r_.entry_early_ns.assign(entries.size(), 0);
    for (uint32_t i = 0; i < entries.size(); ++i) {
      const ResolvedEntry& e = entries[i];
      if (e.leaves) evict_groups_[{e.evict_after, e.group, e.prefetch_at}].push_back(i);
      if (e.returns) prefetch_groups_[{e.prefetch_at, e.group, e.evict_after}].push_back(i);
    }
  }

  SimResult run() {
    int64_t t = 0;
    // Note [Untouched at start] in policy/baseline.cpp; a tensor a plan
    // evicts after its last use and fetches back for its first use (a wrap
    // entry, Note [Wrap entries] in policy/plan.h), or one that only
    // returns (Note [Carried tensors]), was left on the host by the
    // previous iteration.
    const std::vector<uint8_t> parked = parked_at_start(w_, o_.budget_bytes);
    std::vector<int32_t> wraps(w_.tensors.size(), -1);
    for (uint32_t i = 0; i < entries_.size(); ++i)
      if ((entries_[i].wraps() || !entries_[i].leaves) && !pinned(entries_[i].tensor))
        wraps[entries_[i].tensor] = static_cast<int32_t>(i);
    for (uint32_t x = 0; x < w_.tensors.size(); ++x) {
      if (!w_.tensors[x].resident_at_start()) continue;
      if (parked[x] || wraps[x] >= 0) {
        set_state(x, State::host, 0);
        state_[x].entry = wraps[x];
        continue;
      }
      t = reserve(w_.tensors[x].size_bytes, t, kNoOpClaim);
      set_state(x, State::resident, ++clock_);
      arrive(x, t);
    }
    const int64_t setup_ns = t;  // forced evictions before the first op
    for (uint32_t k = 0; k < w_.ops.size(); ++k) {
      t += scaled_ns(w_.ops[k].idle_ns, o_.time_scale);  // Note [Idle time]
      for (uint32_t x : w_.allocs_at[k])
        protect_[x] = k;
      for (uint32_t x : w_.uses_at[k])
        protect_[x] = k;
      process_until(t);
      issue_prefetches(k, t);
      const int64_t ready = t;
      int64_t start = t;
      for (uint32_t x : w_.allocs_at[k]) {
        start = reserve(w_.tensors[x].size_bytes, start, k);
        set_state(x, State::resident, ++clock_);
        arrive(x, start);
      }
      // Note [An op's fetches at once]
      const int64_t issue = start;
      for (uint32_t x : w_.uses_at[k])
        start = std::max(start, make_resident(x, std::max(issue, processed_ns_), k));
      r_.stall_ns += start - ready;
      const int64_t end = start + scaled_ns(w_.ops[k].duration_ns, o_.time_scale);
      if (o_.record_timeline) r_.ops.push_back({k, start, end});
      for (uint32_t x : w_.uses_at[k])
        if (state_[x].state == State::resident && mode_ != PlanMode::ondemand) touch(x);
      t = end;
      process_until(t);
      for (uint32_t x : w_.frees_after[k])
        free_tensor(x, t);
      evict_planned(k, t);
    }
    r_.stall_ns += setup_ns;
    r_.iteration_ns = std::max({t, h2d_.free_ns, d2h_.free_ns, shared_.free_ns});
    finish();
    return std::move(r_);
  }

 private:
  using GroupKey = std::tuple<uint32_t, uint32_t, uint32_t>;

  void add_memory(int64_t time_ns, int64_t delta) {
    used_ = static_cast<uint64_t>(static_cast<int64_t>(used_) + delta);
    r_.peak_bytes = std::max(r_.peak_bytes, used_);
    if (!o_.record_timeline) return;
    // Changes at one instant: the sample at that time keeps the highest
    // value, and a fall after it shows 1 ns later, so a counter drawn from
    // the samples reaches the peak.
    std::vector<MemorySample>& m = r_.memory;
    if (m.empty() || m.back().time_ns < time_ns) {
      m.push_back({time_ns, used_});
    } else if (m.back().time_ns == time_ns) {
      if (used_ >= m.back().bytes) {
        m.back().bytes = used_;
      } else {
        m.push_back({time_ns + 1, used_});
      }
    } else if (m.back().time_ns == time_ns + 1 && m.size() >= 2 &&
               m[m.size() - 2].time_ns == time_ns) {  // after a fall at time_ns
      m.back().bytes = used_;
      m[m.size() - 2].bytes = std::max(m[m.size() - 2].bytes, used_);
    } else {
      m.back().bytes = used_;
    }
  }

  // Tensor x takes its device memory at time_ns, or gives it back.
  void arrive(uint32_t x, int64_t time_ns) {
    add_memory(time_ns, static_cast<int64_t>(w_.tensors[x].size_bytes));
    if (o_.record_timeline) {
      if (arrived_.empty()) arrived_.assign(w_.tensors.size(), -1);
      arrived_[x] = time_ns;
    }
  }
  void leave(uint32_t x, int64_t time_ns) {
    add_memory(time_ns, -static_cast<int64_t>(w_.tensors[x].size_bytes));
    if (o_.record_timeline && !arrived_.empty() && arrived_[x] >= 0) {
      r_.residency.push_back({x, arrived_[x], time_ns});
      arrived_[x] = -1;
    }
  }

  // Note [Pinned small tensors]
  bool pinned(uint32_t x) const { return never_moves(w_.tensors[x], o_.swap_min_bytes); }

  void set_state(uint32_t x, State s, uint64_t stamp) {
    TensorState& ts = state_[x];
    if (ts.state == State::resident) lru_.erase({ts.stamp, x});
    ts.state = s;
    if (s == State::resident) {
      ts.stamp = stamp;
      if (!pinned(x)) lru_.insert({ts.stamp, x});  // what pressure may evict
    }
  }
  void touch(uint32_t x) { set_state(x, State::resident, ++clock_); }

  // Applies the fetch completions up to `time_ns`, in time order, and with
  // land_when_copied the ends of the copies out.
  void process_until(int64_t time_ns) {
    processed_ns_ = std::max(processed_ns_, time_ns);
    for (;;) {
      drop_stale(fetches_);
      const uint32_t out = o_.land_when_copied ? oldest_evicting() : kNoVictim;
      const int64_t out_ns = out == kNoVictim ? INT64_MAX : state_[out].ready_ns;
      const int64_t in_ns = fetches_.empty() ? INT64_MAX : fetches_.top().time_ns;
      if (std::min(out_ns, in_ns) > time_ns) return;
      if (out_ns <= in_ns) {  // a copy out ends first at a tie
        land(out, out_ns);
        continue;
      }
      const uint32_t x = fetches_.top().tensor;
      fetches_.pop();
      if (state_[x].state == State::fetching)
        set_state(x, State::resident, mode_ == PlanMode::ondemand ? ++clock_ : clock_);
    }
  }

  // Pops the completions of fetches whose tensor was freed since.
  void drop_stale(EventQueue& q) const {
    while (!q.empty() && state_[q.top().tensor].generation != q.top().generation)
      q.pop();
  }

  // Note [Lazy landing]: the oldest eviction still on the device, or
  // kNoVictim when none is.
  uint32_t oldest_evicting() {
    while (!evicting_.empty()) {
      const auto [x, generation] = evicting_.front();
      if (state_[x].generation == generation && state_[x].state == State::evicting) return x;
      evicting_.pop_front();
    }
    return kNoVictim;
  }
  // x's eviction lands: its room is another's from `time_ns`.
  void land(uint32_t x, int64_t time_ns) {
    state_[x].state = State::host;
    leave(x, time_ns);
  }

  Engine& engine(bool to_device) {
    return o_.link.duplex_contention ? shared_ : (to_device ? h2d_ : d2h_);
  }

  // Issues one copy of `tensors` (`bytes` in all) at ready_ns; returns when
  // it completes.
  int64_t copy(bool to_device, uint64_t bytes, int64_t ready_ns,
               const std::vector<uint32_t>& tensors, bool on_demand) {
    Engine& e = engine(to_device);
    const int64_t start = std::max(ready_ns, e.free_ns);
    int64_t extra = 0;  // on-demand fault handling on top of the transfer
    if (to_device && on_demand && mode_ == PlanMode::ondemand)
      extra = static_cast<int64_t>((bytes + kFaultChunkBytes - 1) / kFaultChunkBytes) *
                  kFaultLatencyNs -
              o_.link.latency_ns;
    e.free_ns = start + o_.link.copy_ns(bytes) + extra;
    (to_device ? r_.h2d_bytes : r_.d2h_bytes) += bytes;
    if (o_.record_timeline)
      r_.copies.push_back({tensors.front(), static_cast<uint32_t>(tensors.size()), bytes, start,
                           e.free_ns, to_device, on_demand});
    return e.free_ns;
  }

  void start_eviction(uint32_t x, int64_t end_ns) {
    TensorState& ts = state_[x];
    set_state(x, State::evicting, 0);
    ts.ready_ns = end_ns;
    ++ts.generation;
    evicting_.emplace_back(x, ts.generation);
    ++r_.evictions;
  }

  // Reserves `bytes` at or after `time_ns` for op k; returns when it got them.
  int64_t reserve(uint64_t bytes, int64_t time_ns, uint32_t k) {
    int64_t t = time_ns;
    for (;;) {
      process_until(t);
      if (used_ + bytes <= o_.budget_bytes) return t;
      drop_stale(fetches_);
      if (const uint32_t x = oldest_evicting(); x != kNoVictim) {
        t = std::max(t, state_[x].ready_ns);  // space on its way out: wait for it
        land(x, t);
        continue;
      }
      // Nothing on its way out: evict what the op does not need.
      const uint32_t victim = choose_victim(k);
      if (victim != kNoVictim) {
        const uint32_t x = victim;
        state_[x].entry = -1;
        const int64_t end = copy(false, w_.tensors[x].size_bytes, t, {x}, false);
        start_eviction(x, end);
        ++r_.forced_evictions;
        continue;
      }
      if (!fetches_.empty()) {  // fetches in flight land, then become evictable
        t = std::max(t, fetches_.top().time_ns);
        continue;
      }
      r_.fits = false;  // Note [Infeasible budgets]
      return t;
    }
  }

  // What to evict under pressure at op k, never what k needs. Reactive
  // modes take the least recently used (lru) or the oldest fetched
  // (ondemand); a scheduled plan's overflow takes the tensor used again
  // last, or never, which costs the fewest fetches back (Belady).
  static constexpr uint32_t kNoVictim = UINT32_MAX;
  uint32_t choose_victim(uint32_t k) const {
    if (mode_ != PlanMode::scheduled) {
      for (const auto& [stamp, x] : lru_)
        if (protect_[x] != k) return x;
      return kNoVictim;
    }
    uint32_t best = kNoVictim;
    uint32_t best_next = 0;
    for (const auto& [stamp, x] : lru_) {
      if (protect_[x] == k) continue;
      const std::vector<uint32_t>& uses = w_.tensors[x].uses;
      const auto next = std::upper_bound(uses.begin(), uses.end(), k);
      const uint32_t next_use = next == uses.end() ? UINT32_MAX : *next;
      if (best == kNoVictim || next_use > best_next) best = x, best_next = next_use;
      if (best_next == UINT32_MAX) break;
    }
    return best;
  }

  // Makes tensor x resident for op k; returns when it is.
  int64_t make_resident(uint32_t x, int64_t time_ns, uint32_t k) {
    TensorState& ts = state_[x];
    switch (ts.state) {
      case State::resident:
        return std::max(time_ns, ts.hold_ns);
      case State::absent:
        return time_ns;
      case State::evicting:  // still on the device: keep it
        keep(x, time_ns);
        return std::max(time_ns, ts.hold_ns);
      case State::fetching: {
        const int64_t wait = std::max<int64_t>(0, ts.ready_ns - time_ns);
        if (wait > 0 && ts.entry >= 0) {
          r_.entry_late_ns[static_cast<size_t>(ts.entry)] += wait;
          ++r_.late_prefetches;
        }
        return ts.ready_ns;
      }
      case State::host: {
        const uint64_t size = w_.tensors[x].size_bytes;
        const int64_t t = reserve(size, time_ns, k);
        arrive(x, t);
        const int64_t end = copy(true, size, std::max(t, ts.ready_ns), {x}, true);
        ++r_.demand_fetches;
        if (ts.entry >= 0) {
          r_.entry_late_ns[static_cast<size_t>(ts.entry)] += end - time_ns;
          ++r_.late_prefetches;
        }
        ts.state = State::fetching;
        ts.ready_ns = end;
        ++ts.generation;
        fetches_.push({end, x, ts.generation});
        return end;
      }
    }
    return time_ns;
  }

  void issue_prefetches(uint32_t k, int64_t t) {
    for (auto it = prefetch_groups_.lower_bound({k, 0, 0});
         it != prefetch_groups_.end() && std::get<0>(it->first) == k; ++it)
      deferred_.push_back(it->first);
    std::vector<GroupKey> still;
    for (const GroupKey& key : deferred_) {
      uint64_t bytes = 0;
      int64_t ready = t;
      std::vector<uint32_t> moving;
      for (uint32_t i : prefetch_groups_[key]) {
        const uint32_t x = entries_[i].tensor;
        TensorState& ts = state_[x];
        if (ts.state == State::evicting) {  // not out yet: keep it
          keep(x, t);
        } else if (ts.state == State::host) {
          bytes += w_.tensors[x].size_bytes;
          ready = std::max(ready, ts.ready_ns);  // landed before its copy out ended
          moving.push_back(i);
        }
      }
      if (moving.empty()) continue;
      // The copy in waits for the copies out of the room it takes.
      for (uint32_t x; used_ + bytes > o_.budget_bytes && (x = oldest_evicting()) != kNoVictim;) {
        ready = std::max(ready, state_[x].ready_ns);
        land(x, t);
      }
      if (used_ + bytes > o_.budget_bytes) {
        still.push_back(key);
        continue;
      }
      std::vector<uint32_t> tensors;
      for (uint32_t i : moving)
        tensors.push_back(entries_[i].tensor);
      for (uint32_t x : tensors)
        arrive(x, t);
      const int64_t end = copy(true, bytes, ready, tensors, false);
      for (uint32_t i : moving) {
        TensorState& ts = state_[entries_[i].tensor];
        ts.state = State::fetching;
        ts.ready_ns = end;
        ts.entry = static_cast<int32_t>(i);
        ++ts.generation;
        fetches_.push({end, entries_[i].tensor, ts.generation});
        ++r_.prefetches;
      }
    }
    deferred_ = std::move(still);
  }

  // An eviction in flight is called off: x stays on the device, and its
  // next use waits for the copy (Note [Cancelled copies]).
  void keep(uint32_t x, int64_t now_ns) {
    TensorState& ts = state_[x];
    ++r_.cancelled_evictions;
    if (ts.entry >= 0) {
      ++r_.wasted_evictions;
      int64_t& early = r_.entry_early_ns[static_cast<size_t>(ts.entry)];
      early = std::max(early, ts.ready_ns - now_ns);
      r_.entry_cancelled[static_cast<size_t>(ts.entry)] = 1;
    }
    ts.hold_ns = ts.ready_ns;
    ++ts.generation;
    set_state(x, State::resident, ++clock_);
  }

  void free_tensor(uint32_t x, int64_t t) {
    TensorState& ts = state_[x];
    const State s = ts.state;
    if (s == State::evicting) ++r_.cancelled_evictions;
    ++ts.generation;
    set_state(x, State::absent, 0);
    if (s == State::resident || s == State::evicting || s == State::fetching) leave(x, t);
  }

  void evict_planned(uint32_t k, int64_t t) {
    for (auto it = evict_groups_.lower_bound({k, 0, 0});
         it != evict_groups_.end() && std::get<0>(it->first) == k; ++it) {
      uint64_t bytes = 0;
      std::vector<uint32_t> moving;
      for (uint32_t i : it->second) {
        const uint32_t x = entries_[i].tensor;
        if (state_[x].state != State::resident || w_.tensors[x].free_op == k || pinned(x)) continue;
        bytes += w_.tensors[x].size_bytes;
        moving.push_back(x);
        state_[x].entry = static_cast<int32_t>(i);
      }
      if (moving.empty()) continue;
      const int64_t end = copy(false, bytes, t, moving, false);
      for (uint32_t x : moving)
        start_eviction(x, end);
    }
  }

  void finish() {
    const std::vector<int64_t> starts = infinite_memory_starts(w_, o_.time_scale);
    r_.infinite_memory_ns = starts.back();
    const std::vector<uint64_t> live = live_bytes_per_op(w_);
    r_.infinite_memory_peak_bytes = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
    if (o_.bounds) {
      const Bounds b = lower_bounds(w_, o_);
      r_.lower_bound_ns = b.problem_ns;
      r_.time_bound_ns = b.time_only_ns;
    }
    if (o_.record_timeline) {
      for (uint32_t x = 0; x < arrived_.size(); ++x)
        if (arrived_[x] >= 0) r_.residency.push_back({x, arrived_[x], r_.iteration_ns});
      std::sort(r_.residency.begin(), r_.residency.end(),
                [](const TensorSpan& a, const TensorSpan& b) {
                  return std::tie(a.start_ns, a.tensor, a.end_ns) <
                         std::tie(b.start_ns, b.tensor, b.end_ns);
                });
    }
    r_.shortfall = check_budget(w_, o_.budget_bytes);
    if (r_.shortfall) r_.fits = false;
    if (r_.peak_bytes > o_.budget_bytes) r_.fits = false;
  }

  const Workload& w_;
  PlanMode mode_;
  const std::vector<ResolvedEntry>& entries_;
  SimOptions o_;
  SimResult r_;
  std::vector<TensorState> state_;
  std::vector<uint32_t> protect_;                // op that last claimed the tensor
  std::set<std::pair<uint64_t, uint32_t>> lru_;  // resident tensors that may move, by stamp
  EventQueue fetches_;
  std::deque<std::pair<uint32_t, uint32_t>> evicting_;  // tensor, generation: oldest first
  std::map<GroupKey, std::vector<uint32_t>> evict_groups_, prefetch_groups_;
  std::vector<GroupKey> deferred_;
  uint64_t used_ = 0;
  uint64_t clock_ = 0;
  int64_t processed_ns_ = 0;      // copies are applied up to here: nothing happens earlier
  std::vector<int64_t> arrived_;  // with record_timeline: since when x holds memory, or -1
  Engine h2d_, d2h_, shared_;
};

}  // namespace

SimResult simulate(const Workload& workload, PlanMode mode,
                   const std::vector<ResolvedEntry>& entries, const SimOptions& options) {
  // Tensors resident at start are on the device when the iteration begins.
  Simulation sim(workload, mode, entries, options);
  return sim.run();
}

}  // namespace cuswap::policy
