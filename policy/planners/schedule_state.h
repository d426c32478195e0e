// The cuswap planner's bookkeeping while it chooses: the excess of live
// bytes over the budget per op (range add, range max) and the copy lanes'
// busy intervals on the infinite-memory schedule.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

namespace cuswap::policy::planners {

// Range add / range max over ops, lazily propagated.
class ExcessTree {
 public:
  explicit ExcessTree(const std::vector<int64_t>& values) : n_(values.size()) {
    size_t size = 1;
    while (size < n_)
      size <<= 1;
    max_.assign(2 * size, INT64_MIN / 4);
    add_.assign(2 * size, 0);
    size_ = size;
    for (size_t i = 0; i < n_; ++i)
      max_[size + i] = values[i];
    for (size_t i = size - 1; i >= 1; --i)
      max_[i] = std::max(max_[2 * i], max_[2 * i + 1]);
  }
  int64_t max(size_t lo, size_t hi) const { return query(1, 0, size_ - 1, lo, hi); }
  int64_t max_all() const { return n_ == 0 ? 0 : max_[1]; }
  void add(size_t lo, size_t hi, int64_t delta) { update(1, 0, size_ - 1, lo, hi, delta); }
  // The first (last) op in [lo, hi] still over, or kNotFound.
  static constexpr size_t kNotFound = SIZE_MAX;
  size_t first_above_zero(size_t lo, size_t hi) const {
    return find(1, 0, size_ - 1, lo, hi, 0, false);
  }
  size_t last_above_zero(size_t lo, size_t hi) const {
    return find(1, 0, size_ - 1, lo, hi, 0, true);
  }

 private:
  // `above`: what the node's ancestors add to it. A subtree whose maximum
  // is not above zero is never entered, so a search visits O(log^2 n) nodes.
  size_t find(size_t node, size_t l, size_t r, size_t lo, size_t hi, int64_t above,
              bool last) const {
    if (hi < l || r < lo || above + max_[node] <= 0) return kNotFound;
    if (l == r) return l;
    const size_t mid = (l + r) / 2;
    const int64_t below = above + add_[node];
    const size_t found = last ? find(2 * node + 1, mid + 1, r, lo, hi, below, last)
                              : find(2 * node, l, mid, lo, hi, below, last);
    if (found != kNotFound) return found;
    return last ? find(2 * node, l, mid, lo, hi, below, last)
                : find(2 * node + 1, mid + 1, r, lo, hi, below, last);
  }
  int64_t query(size_t node, size_t l, size_t r, size_t lo, size_t hi) const {
    if (hi < l || r < lo) return INT64_MIN / 4;
    if (lo <= l && r <= hi) return max_[node];
    const size_t mid = (l + r) / 2;
    return add_[node] +
           std::max(query(2 * node, l, mid, lo, hi), query(2 * node + 1, mid + 1, r, lo, hi));
  }
  void update(size_t node, size_t l, size_t r, size_t lo, size_t hi, int64_t delta) {
    if (hi < l || r < lo) return;
    if (lo <= l && r <= hi) {
      max_[node] += delta;
      add_[node] += delta;
      return;
    }
    const size_t mid = (l + r) / 2;
    update(2 * node, l, mid, lo, hi, delta);
    update(2 * node + 1, mid + 1, r, lo, hi, delta);
    max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }
  size_t n_ = 0, size_ = 1;
  std::vector<int64_t> max_, add_;
};

// One copy engine's planned busy intervals. Searches give up after a
// bounded number of steps (a crowded lane counts as full), which keeps
// planning near-linear on very large traces.
class Lane {
 public:
  static constexpr int kMaxSteps = 256;

  // The earliest start >= from_ns of a free slot of length_ns.
  std::optional<int64_t> earliest(int64_t from_ns, int64_t length_ns) const {
    int64_t t = from_ns;
    auto it = busy_.upper_bound(t);
    if (it != busy_.begin() && std::prev(it)->second > t) t = std::prev(it)->second;
    for (int step = 0; step < kMaxSteps; ++step) {
      if (it == busy_.end() || it->first >= t + length_ns) return t;
      t = std::max(t, it->second);
      ++it;
    }
    return std::nullopt;
  }
  // The latest start >= floor_ns of a free slot of length_ns ending by deadline_ns.
  std::optional<int64_t> latest(int64_t deadline_ns, int64_t length_ns, int64_t floor_ns) const {
    int64_t s = deadline_ns - length_ns;
    auto it = busy_.lower_bound(s + length_ns);
    for (int step = 0; step < kMaxSteps && s >= floor_ns; ++step) {
      if (it == busy_.begin()) return s;
      const auto prev = std::prev(it);
      if (prev->second <= s) return s;
      s = std::min(s, prev->first - length_ns);
      it = prev;
    }
    return std::nullopt;
  }
  void reserve(int64_t start_ns, int64_t end_ns) { busy_[start_ns] = end_ns; }

 private:
  std::map<int64_t, int64_t> busy_;  // start -> end, not overlapping
};

}  // namespace cuswap::policy::planners
