// BaseIndex (allocator/base_index.h, Note [An index by base]) against
// std::unordered_map: every lookup agrees through growth and churn, with
// bases that share a home slot, that wrap around the table's end, and the
// 2 MiB-aligned bases the allocator files.
#include "allocator/base_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

namespace cuswap {
namespace {

struct Item {
  uintptr_t base;
};

class Checked {
 public:
  void insert(uintptr_t base) {
    items_.push_back(std::make_unique<Item>(Item{base}));
    index_.insert(base, items_.back().get());
    reference_[base] = items_.back().get();
  }
  bool erase(uintptr_t base) {
    reference_.erase(base);
    return index_.erase(base);
  }
  void expect_agree(const std::vector<uintptr_t>& probes) const {
    ASSERT_EQ(index_.size(), reference_.size());
    for (const auto& [base, item] : reference_) ASSERT_EQ(index_.find(base), item) << base;
    for (uintptr_t base : probes) {
      auto it = reference_.find(base);
      ASSERT_EQ(index_.find(base), it == reference_.end() ? nullptr : it->second) << base;
    }
  }
  const std::unordered_map<uintptr_t, Item*>& reference() const { return reference_; }

 private:
  std::vector<std::unique_ptr<Item>> items_;
  BaseIndex<Item> index_;
  std::unordered_map<uintptr_t, Item*> reference_;
};

TEST(BaseIndex, EmptyFindsNothing) {
  BaseIndex<Item> index;
  EXPECT_EQ(index.find(0x7f0000000000), nullptr);
  EXPECT_FALSE(index.erase(0x7f0000000000));
  EXPECT_EQ(index.size(), 0u);
}

TEST(BaseIndex, AgreesWithAMapThroughGrowthAndChurn) {
  std::mt19937_64 rng(7);
  Checked index;
  std::vector<uintptr_t> live;
  std::vector<uintptr_t> probes;
  const uintptr_t arena = 0x7f0000000000;
  for (int round = 0; round < 20000; ++round) {
    const bool add = live.size() < 50 || rng() % 100 < (round < 10000 ? 70u : 40u);
    if (add) {
      // 2 MiB pages of an arena, or 256-byte-aligned slab addresses.
      uintptr_t base = rng() % 2 ? arena + (rng() % 100000) * (uintptr_t{2} << 20)
                                 : arena + (rng() % (uintptr_t{1} << 30)) * 256;
      if (index.reference().count(base)) continue;
      index.insert(base);
      live.push_back(base);
    } else {
      const size_t at = rng() % live.size();
      ASSERT_TRUE(index.erase(live[at]));
      probes.push_back(live[at]);  // gone: must not be found
      live[at] = live.back();
      live.pop_back();
    }
    if (round % 997 == 0) index.expect_agree(probes);
  }
  index.expect_agree(probes);
  for (uintptr_t base : live)
    ASSERT_TRUE(index.erase(base));
  index.expect_agree(probes);
  EXPECT_TRUE(index.reference().empty());
}

// Bases whose home is one of the last two of the 64 first slots make one
// long run that wraps past the end of the table; erase must close it up
// without losing a member, in any order.
TEST(BaseIndex, RunsSurviveErasesInAnyOrder) {
  std::vector<uintptr_t> bases;
  for (uintptr_t base = uintptr_t{2} << 20; bases.size() < 20; base += uintptr_t{2} << 20)
    if ((static_cast<uint64_t>(base) * 0x9E3779B97F4A7C15ull) >> 58 >= 62) bases.push_back(base);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::mt19937_64 rng(seed);
    Checked index;
    for (uintptr_t base : bases) index.insert(base);
    index.expect_agree({});
    std::vector<uintptr_t> order = bases;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); ++i) {
      ASSERT_TRUE(index.erase(order[i]));
      ASSERT_FALSE(index.erase(order[i]));
      index.expect_agree({order.begin(), order.begin() + static_cast<ptrdiff_t>(i) + 1});
    }
  }
}

}  // namespace
}  // namespace cuswap
