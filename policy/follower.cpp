// The iteration cursor (policy/follower.h): binding a plan's tensors to
// buffers (Note [Tolerant matching]) and its ops to launches, and moving
// late triggers (Note [Moving triggers]).
#include "policy/follower.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace cuswap::policy {

PlanFollower::PlanFollower(const Plan& plan) {
  std::map<std::tuple<bool, uint32_t, uint64_t>, uint32_t> slot_index;
  for (const PlanEntry& p : plan.entries) {
    if (!p.leaves && !p.returns) {
      ++dropped_;
      continue;
    }
    const auto key =
        std::make_tuple(p.tensor.resident_at_start, p.tensor.ordinal, p.tensor.size_bytes);
    auto [it, added] = slot_index.emplace(key, static_cast<uint32_t>(slots_.size()));
    if (added) {
      Slot s;
      s.resident_at_start = p.tensor.resident_at_start;
      s.ordinal = p.tensor.ordinal;
      s.size_bytes = p.tensor.size_bytes;
      slots_.push_back(s);
    }
    Entry e;
    e.slot = it->second;
    e.evict_after = {intern(p.evict_after.name), p.evict_after.ordinal};
    e.prefetch_at = {intern(p.prefetch_at.name), p.prefetch_at.ordinal};
    e.next_use = {intern(p.next_use.name), p.next_use.ordinal};
    e.leaves = p.leaves;
    e.returns = p.returns;
    // Note [Wrap entries]: time away spans the iteration's end.
    e.wraps = p.leaves && p.returns && p.next_use.index <= p.evict_after.index;
    entries_.push_back(e);
  }
  for (uint32_t s = 0; s < slots_.size(); ++s) {
    if (slots_[s].resident_at_start) continue;
    alloc_slots_[slots_[s].ordinal].push_back(s);
    allocated_by_ordinal_.push_back(s);
  }
  std::sort(allocated_by_ordinal_.begin(), allocated_by_ordinal_.end(),
            [&](uint32_t a, uint32_t b) { return slots_[a].ordinal < slots_[b].ordinal; });
  build_triggers();
}

uint32_t PlanFollower::intern(std::string_view name) {
  auto it = names_.find(std::string(name));
  if (it != names_.end()) return it->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace(std::string(name), id);
  counts_.push_back(0);
  return id;
}

void PlanFollower::build_triggers() {
  triggers_.clear();
  for (uint32_t e = 0; e < entries_.size(); ++e) {
    const Entry& entry = entries_[e];
    if (entry.returns) {
      triggers_.emplace(entry.prefetch_at, Trigger{Kind::prefetch, e});
      triggers_.emplace(entry.next_use, Trigger{Kind::use, e});
    }
    if (entry.leaves) triggers_.emplace(entry.evict_after, Trigger{Kind::evict, e});
  }
}

void PlanFollower::mismatch(std::string why) {
  if (!matched_this_iteration_) return;
  matched_this_iteration_ = false;
  following_ = false;
  mismatch_ = std::move(why);
}

void PlanFollower::end_iteration() {
  if (!in_iteration_) return;
  ++stats_.iterations;
  if (matched_this_iteration_ && !last_sequence_.empty() &&
      sequence_.size() != last_sequence_.size())
    mismatch(fmt::format("{} launches, the last iteration had {}", sequence_.size(),
                         last_sequence_.size()));
  last_mismatch_ = mismatch_;
  if (matched_this_iteration_) {
    ++stats_.followed_iterations;
    mismatched_in_a_row_ = 0;
  } else {
    ++stats_.mismatched_iterations;
    ++mismatched_in_a_row_;
  }
  // The launches of a matching iteration are what the next must look like.
  if (matched_this_iteration_ || last_sequence_.empty()) last_sequence_.swap(sequence_);
  std::vector<uint8_t> late(entries_.size(), 0);
  for (uint32_t e : to_move_)
    late[e] = 1;
  for (uint32_t e = 0; e < entries_.size(); ++e)
    if (!late[e]) entries_[e].late_streak = 0;
  bool moved = false;
  if (!moved_last_.empty() && on_demand_ > on_demand_before_moves_) {
    // The last moves made room run short (Note [Moving triggers]).
    for (uint32_t e : moved_last_) {
      entries_[e].prefetch_at = entries_[e].moved_from;
      entries_[e].settled = true;
    }
    stats_.triggers_moved_back += moved_last_.size();
    to_move_.clear();
    moved = true;
  }
  moved_last_.clear();
  on_demand_before_moves_ = on_demand_;
  for (uint32_t e : to_move_)
    if (move_trigger(e)) {
      moved_last_.push_back(e);
      moved = true;
    }
  to_move_.clear();
  on_demand_ = 0;
  if (moved) build_triggers();
}

void PlanFollower::begin_iteration(std::span<const LiveBuffer> live) {
  end_iteration();
  in_iteration_ = true;
  std::fill(counts_.begin(), counts_.end(), 0);
  sequence_.clear();
  slot_of_buffer_.clear();
  alloc_ordinal_ = 0;
  strays_.clear();
  overdue_cursor_ = 0;
  mismatch_.clear();
  matched_this_iteration_ = true;
  following_ = !entries_.empty();
  for (Slot& s : slots_) {
    s.bound = 0;
    s.freed = false;
  }
  if (!following_) return;
  // Resident slots: the exact rank first, then the nearest free rank of
  // the same size (Note [Tolerant matching]).
  std::vector<uint8_t> taken(live.size(), 0);
  std::vector<uint32_t> unbound;
  for (uint32_t s = 0; s < slots_.size(); ++s) {
    Slot& slot = slots_[s];
    if (!slot.resident_at_start) continue;
    if (slot.ordinal < live.size() && !taken[slot.ordinal] &&
        live[slot.ordinal].size_bytes == slot.size_bytes) {
      taken[slot.ordinal] = 1;
      bind(s, live[slot.ordinal].id);
    } else {
      unbound.push_back(s);
    }
  }
  for (uint32_t s : unbound) {
    Slot& slot = slots_[s];
    int64_t best = -1;
    for (uint32_t d = 1; d <= kMatchWindow && best < 0; ++d) {
      for (int64_t rank : {int64_t{slot.ordinal} - d, int64_t{slot.ordinal} + d}) {
        if (rank < 0 || rank >= static_cast<int64_t>(live.size())) continue;
        const auto r = static_cast<size_t>(rank);
        if (!taken[r] && live[r].size_bytes == slot.size_bytes) {
          best = rank;
          break;
        }
      }
    }
    if (best < 0) {
      mismatch(
          fmt::format("no buffer of {} bytes live at the iteration's start near rank {} "
                      "({} live)",
                      slot.size_bytes, slot.ordinal, live.size()));
      return;
    }
    taken[static_cast<size_t>(best)] = 1;
    bind(s, live[static_cast<size_t>(best)].id);
  }
}

void PlanFollower::bind(uint32_t slot, uint64_t buffer_id) {
  slots_[slot].bound = buffer_id;
  slot_of_buffer_[buffer_id] = slot;
}

void PlanFollower::on_alloc(uint64_t id, uint64_t size_bytes) {
  const uint32_t n = alloc_ordinal_++;
  if (!following_) return;
  std::erase_if(strays_, [&](const Stray& s) { return s.ordinal + kMatchWindow < n; });
  const auto slots_at = alloc_slots_.find(n);
  bool done = false;
  if (slots_at != alloc_slots_.end()) {
    for (uint32_t s : slots_at->second) {
      if (slots_[s].bound == 0 && slots_[s].size_bytes == size_bytes) {
        bind(s, id);
        done = true;
        break;
      }
    }
  }
  if (!done) {
    // A slot of this size whose ordinal went by without it, the nearest.
    const auto lo = std::lower_bound(allocated_by_ordinal_.begin(), allocated_by_ordinal_.end(),
                                     n > kMatchWindow ? n - kMatchWindow : 0,
                                     [&](uint32_t s, uint32_t v) { return slots_[s].ordinal < v; });
    uint32_t best = UINT32_MAX;
    for (auto it = lo; it != allocated_by_ordinal_.end() && slots_[*it].ordinal < n; ++it)
      if (slots_[*it].bound == 0 && slots_[*it].size_bytes == size_bytes) best = *it;
    if (best != UINT32_MAX) {
      bind(best, id);
    } else {
      strays_.push_back({n, id, size_bytes});
    }
  }
  // A slot whose ordinal this was, left unbound: an earlier allocation of
  // its size that matched nothing, the nearest, was it coming early.
  if (slots_at != alloc_slots_.end()) {
    for (uint32_t s : slots_at->second) {
      if (slots_[s].bound != 0) continue;
      for (size_t i = strays_.size(); i-- > 0;) {
        if (strays_[i].ordinal >= n || strays_[i].size_bytes != slots_[s].size_bytes) continue;
        bind(s, strays_[i].id);
        strays_.erase(strays_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  // A slot left behind by more than the window will not come.
  while (overdue_cursor_ < allocated_by_ordinal_.size()) {
    const Slot& slot = slots_[allocated_by_ordinal_[overdue_cursor_]];
    if (slot.ordinal + kMatchWindow >= n) break;
    ++overdue_cursor_;
    if (slot.bound == 0) {
      mismatch(fmt::format("allocation {} of {} bytes did not come (allocation {} was {} bytes)",
                           slot.ordinal, slot.size_bytes, n, size_bytes));
      return;
    }
  }
}

void PlanFollower::on_free(uint64_t id) {
  std::erase_if(strays_, [&](const Stray& s) { return s.id == id; });
  auto it = slot_of_buffer_.find(id);
  if (it == slot_of_buffer_.end()) return;
  slots_[it->second].freed = true;
  slot_of_buffer_.erase(it);
}

void PlanFollower::on_launch(std::string_view kernel, Actions& out) {
  out.clear();
  const uint32_t name = intern(kernel);
  const OpKey key{name, counts_[name]++};
  sequence_.push_back(key);
  if (!following_) return;
  if (!last_sequence_.empty() && !launch_expected(key)) {
    mismatch(fmt::format("launch {} ({} #{}) is not where the last iteration had it",
                         sequence_.size() - 1, kernel, key.ordinal));
    return;
  }
  auto [first, last] = triggers_.equal_range(key);
  for (auto it = first; it != last; ++it) {
    const Trigger& t = it->second;
    const Slot& slot = slots_[entries_[t.entry].slot];
    if (slot.bound == 0 || slot.freed) continue;
    const Copy copy{slot.bound, t.entry};
    switch (t.kind) {
      case Kind::prefetch:
        out.prefetch.push_back(copy);
        break;
      case Kind::use:
        out.uses.push_back(copy);
        break;
      case Kind::evict:
        out.evict.push_back(copy);
        break;
    }
  }
}

// Note [Tolerant matching]: the launch at this position, or within the
// window of it, in the last iteration.
bool PlanFollower::launch_expected(const OpKey& key) const {
  const size_t at = sequence_.size() - 1;
  const size_t from = at > kMatchWindow ? at - kMatchWindow : 0;
  const size_t to = std::min(last_sequence_.size(), at + kMatchWindow + 1);
  for (size_t i = from; i < to; ++i)
    if (last_sequence_[i] == key) return true;
  return false;
}

void PlanFollower::report_late(uint32_t entry, uint64_t late_ns) {
  if (entry >= entries_.size()) return;
  ++stats_.late_prefetches;
  stats_.late_ns += late_ns;
  if (std::find(to_move_.begin(), to_move_.end(), entry) == to_move_.end())
    to_move_.push_back(entry);
}

bool PlanFollower::move_trigger(uint32_t e) {
  Entry& entry = entries_[e];
  if (entry.settled) return false;
  const auto find = [&](const OpKey& key) -> int64_t {
    auto it = std::find(last_sequence_.begin(), last_sequence_.end(), key);
    return it == last_sequence_.end() ? -1 : it - last_sequence_.begin();
  };
  const int64_t at = find(entry.prefetch_at);
  if (at <= 0) return false;
  int64_t floor = 0;
  if (entry.leaves && !entry.wraps) {
    const int64_t evicted = find(entry.evict_after);
    if (evicted < 0) return false;
    floor = evicted + 1;
  }
  const int64_t step = int64_t{1} << std::min<uint32_t>(entry.late_streak, 20);
  ++entry.late_streak;
  const int64_t to = std::max(floor, at - step);
  if (to >= at) return false;
  entry.moved_from = entry.prefetch_at;
  entry.prefetch_at = last_sequence_[static_cast<size_t>(to)];
  ++stats_.triggers_moved;
  return true;
}

}  // namespace cuswap::policy
