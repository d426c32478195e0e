// Tests for allocator/buffer_table.h: the map's rules at its edges (granule,
// tier and index boundaries, overlap refusal), randomized comparisons with a
// std::map, Readers nested and held while the same thread writes, and that
// lookups do not allocate. Every lookup here goes through both find() and a
// BufferTable::Reader, which must agree. The concurrency and epoch tests are
// in buffer_table_concurrency_test.cpp.
//
// Allocation is counted by tests/support/allocation_counter.h.
#include "allocator/buffer_table.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/allocation_counter.h"

namespace cuswap {
namespace {

constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t GiB = uint64_t{1} << 30;
constexpr uintptr_t kIndexLimit = uintptr_t{1} << 48;  // Note [Buffer table tiers]
constexpr uintptr_t kHeap = 0x7f12'3400'0000;          // where a driver might map

BufferRef ref(uintptr_t base, uint64_t size_bytes, uint64_t id) {
  return BufferRef{id, base, size_bytes};
}

bool same(const std::optional<BufferRef>& a, const std::optional<BufferRef>& b) {
  if (!a || !b) return a.has_value() == b.has_value();
  return a->id == b->id && a->base == b->base && a->size_bytes == b->size_bytes;
}

// find()'s answer, checked against a fresh Reader's: every rule below holds
// for both.
std::optional<BufferRef> lookup(const BufferTable& table, uintptr_t address) {
  const std::optional<BufferRef> found = table.find(address);
  const std::optional<BufferRef> read = BufferTable::Reader(table).find(address);
  EXPECT_TRUE(same(found, read)) << "find() and a Reader disagree at " << std::hex << address;
  return found;
}

uint64_t id_of(const std::optional<BufferRef>& found) {
  return found ? found->id : 0;
}

// The id found at `address`, 0 for none.
uint64_t id_at(const BufferTable& table, uintptr_t address) {
  return id_of(lookup(table, address));
}

::testing::AssertionResult found_exactly(const BufferTable& table, uintptr_t address,
                                         const BufferRef& expected) {
  const std::optional<BufferRef> found = lookup(table, address);
  if (!found) return ::testing::AssertionFailure() << "nothing at " << std::hex << address;
  if (found->id != expected.id || found->base != expected.base ||
      found->size_bytes != expected.size_bytes) {
    return ::testing::AssertionFailure()
           << "at " << std::hex << address << ": id " << found->id << " base " << found->base
           << " size " << found->size_bytes << ", expected id " << expected.id << " base "
           << expected.base << " size " << expected.size_bytes;
  }
  return ::testing::AssertionSuccess();
}

// Checks the four addresses around a buffer's edges.
void expect_edges(const BufferTable& table, const BufferRef& buffer) {
  EXPECT_TRUE(found_exactly(table, buffer.base, buffer));
  EXPECT_TRUE(found_exactly(table, buffer.base + buffer.size_bytes - 1, buffer));
  EXPECT_NE(id_at(table, buffer.base - 1), buffer.id);
  EXPECT_NE(id_at(table, buffer.base + buffer.size_bytes), buffer.id);
}

// ---------------------------------------------------------------------------
// Rules.

TEST(BufferTable, InsertFindErase) {
  BufferTable table;
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(id_at(table, kHeap), 0u);
  const BufferRef buffer = ref(kHeap, 4 * KiB, 7);
  ASSERT_TRUE(table.insert(buffer));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_TRUE(found_exactly(table, kHeap + 100, buffer));
  const std::optional<BufferRef> erased = table.erase(kHeap);
  ASSERT_TRUE(erased.has_value());
  EXPECT_EQ(erased->id, 7u);
  EXPECT_EQ(erased->size_bytes, 4 * KiB);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(id_at(table, kHeap + 100), 0u);
  ASSERT_TRUE(table.insert(buffer));  // the same range again after erase
  EXPECT_TRUE(found_exactly(table, kHeap, buffer));
}

TEST(BufferTable, BoundariesOfEachTier) {
  BufferTable table;
  // Unaligned bases and ends: small, granule-spanning, exactly 2 MiB (the
  // first coarse size), and just under it.
  const BufferRef buffers[] = {
      ref(kHeap + 0x1234, 700, 1),
      ref(kHeap + 64 * KiB - 512, 1 * KiB, 2),  // straddles a 64 KiB granule
      ref(kHeap + 3 * MiB + 8, 2 * MiB, 3),
      ref(kHeap + 8 * MiB, 2 * MiB - 1, 4),
      ref(kHeap + 16 * MiB, 64 * KiB, 5),  // exactly one granule
      ref(kHeap + 64 * MiB, 2 * MiB, 6),   // exactly one coarse granule
  };
  for (const BufferRef& buffer : buffers)
    ASSERT_TRUE(table.insert(buffer)) << buffer.id;
  for (const BufferRef& buffer : buffers) {
    SCOPED_TRACE(buffer.id);
    expect_edges(table, buffer);
    EXPECT_EQ(id_at(table, buffer.base - 1), 0u);
    EXPECT_EQ(id_at(table, buffer.base + buffer.size_bytes), 0u);
  }
}

TEST(BufferTable, AdjacentBuffersDoNotOverlap) {
  BufferTable table;
  const BufferRef left = ref(kHeap, 3 * MiB, 1);
  const BufferRef middle = ref(kHeap + 3 * MiB, 512, 2);
  const BufferRef right = ref(kHeap + 3 * MiB + 512, 5 * MiB, 3);
  ASSERT_TRUE(table.insert(left));
  ASSERT_TRUE(table.insert(right));
  ASSERT_TRUE(table.insert(middle));
  for (const BufferRef& buffer : {left, middle, right})
    expect_edges(table, buffer);
}

TEST(BufferTable, RefusesOverlapAndChangesNothing) {
  BufferTable table;
  const BufferRef small = ref(kHeap + 10 * KiB, 8 * KiB, 1);
  const BufferRef large = ref(kHeap + 8 * MiB + 512, 6 * MiB, 2);
  ASSERT_TRUE(table.insert(small));
  ASSERT_TRUE(table.insert(large));
  const BufferRef refused[] = {
      ref(small.base, small.size_bytes, 10),                // exact
      ref(small.base - 512, 1 * KiB, 11),                   // partial, from the left
      ref(small.base + 8 * KiB - 1, 4 * KiB, 12),           // partial, from the right
      ref(small.base + 512, 512, 13),                       // contained
      ref(small.base - 1, 8 * KiB + 2, 14),                 // containing
      ref(kHeap, 4 * MiB, 15),                              // large containing small
      ref(large.base + 3 * MiB, 512, 16),                   // small inside large
      ref(large.base - 1 * MiB, 1 * MiB + 1, 17),           // medium into large's head
      ref(large.base + large.size_bytes - 1, 3 * MiB, 18),  // large over large's tail
      ref(large.base - 2 * MiB, 10 * MiB, 19),              // large containing large
      ref(large.base, large.size_bytes, 20),                // exact, large
  };
  for (const BufferRef& buffer : refused) {
    EXPECT_FALSE(table.insert(buffer)) << buffer.id;
  }
  EXPECT_EQ(table.size(), 2u);
  expect_edges(table, small);
  expect_edges(table, large);
  EXPECT_EQ(id_at(table, small.base - 512), 0u);
  EXPECT_EQ(id_at(table, large.base - 1), 0u);
}

TEST(BufferTable, RefusesEmptyBuffersAndIdZero) {
  BufferTable table;
  EXPECT_FALSE(table.insert(ref(kHeap, 0, 1)));
  EXPECT_FALSE(table.insert(ref(kHeap, 4 * KiB, 0)));
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(id_at(table, kHeap), 0u);
  EXPECT_FALSE(table.erase(kHeap).has_value());
}

TEST(BufferTable, EraseOfUnknownBaseChangesNothing) {
  BufferTable table;
  const BufferRef small = ref(kHeap, 4 * KiB, 1);
  const BufferRef large = ref(kHeap + 4 * MiB, 8 * MiB, 2);
  ASSERT_TRUE(table.insert(small));
  ASSERT_TRUE(table.insert(large));
  EXPECT_FALSE(table.erase(kHeap + 512).has_value());           // inside, not the base
  EXPECT_FALSE(table.erase(large.base + 2 * MiB).has_value());  // inside a large one
  EXPECT_FALSE(table.erase(kHeap + 64 * MiB).has_value());      // nothing there
  EXPECT_FALSE(table.erase(kHeap - 1).has_value());             // just before
  EXPECT_FALSE(table.erase(kIndexLimit + kHeap).has_value());   // outside the index
  EXPECT_EQ(table.size(), 2u);
  expect_edges(table, small);
  expect_edges(table, large);
  ASSERT_TRUE(table.erase(large.base).has_value());
  EXPECT_FALSE(table.erase(large.base).has_value());  // twice
  EXPECT_EQ(table.size(), 1u);
}

TEST(BufferTable, ManySmallBuffersPackedInOnePage) {
  BufferTable table;
  // 4096 buffers of 512 B fill a 2 MiB page: 128 per 64 KiB granule.
  const uintptr_t page = kHeap + 32 * MiB;
  std::vector<BufferRef> buffers;
  for (uint64_t i = 0; i < 4096; ++i)
    buffers.push_back(ref(page + i * 512, 512, i + 1));
  // Insert in a scattered order, so runs grow in the middle as well.
  std::vector<BufferRef> shuffled = buffers;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(1));
  for (const BufferRef& buffer : shuffled)
    ASSERT_TRUE(table.insert(buffer));
  EXPECT_EQ(table.size(), 4096u);
  for (const BufferRef& buffer : buffers) {
    ASSERT_TRUE(found_exactly(table, buffer.base, buffer));
    ASSERT_TRUE(found_exactly(table, buffer.base + 511, buffer));
  }
  EXPECT_EQ(id_at(table, page - 1), 0u);
  EXPECT_EQ(id_at(table, page + 2 * MiB), 0u);
  EXPECT_FALSE(table.insert(ref(page + 100, 8, 99999)));
  for (size_t i = 0; i < buffers.size(); i += 2)
    ASSERT_TRUE(table.erase(buffers[i].base));
  for (size_t i = 0; i < buffers.size(); ++i) {
    ASSERT_EQ(id_at(table, buffers[i].base + 7), i % 2 == 0 ? 0 : buffers[i].id) << i;
  }
  // A larger buffer into two freed neighbours is refused (one is live between).
  EXPECT_FALSE(table.insert(ref(buffers[0].base, 1536, 99999)));
  for (size_t i = 1; i < buffers.size(); i += 2)
    ASSERT_TRUE(table.erase(buffers[i].base));
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(id_at(table, page + 300), 0u);
  ASSERT_TRUE(table.insert(ref(page, 2 * MiB, 1)));  // the whole page, now large
}

TEST(BufferTable, HugeBufferBetweenSmallOnes) {
  BufferTable table;
  // Unaligned at both ends, so its first and last granules in both tiers
  // are shared with small buffers.
  const BufferRef huge = ref(kHeap + 6 * MiB + 1536, 3 * GiB + 4 * KiB + 512, 1);
  const BufferRef left = ref(huge.base - 1024, 1024, 2);
  const BufferRef far_left = ref(huge.base - 4 * KiB, 2 * KiB, 3);
  const BufferRef right = ref(huge.base + huge.size_bytes, 512, 4);
  const BufferRef far_right = ref(right.base + 1 * KiB, 40 * KiB, 5);
  for (const BufferRef& buffer : {left, right, huge, far_left, far_right}) {
    ASSERT_TRUE(table.insert(buffer)) << buffer.id;
  }
  for (const BufferRef& buffer : {left, right, huge, far_left, far_right}) {
    SCOPED_TRACE(buffer.id);
    expect_edges(table, buffer);
  }
  for (uintptr_t offset = 0; offset < huge.size_bytes; offset += 97 * MiB + 12345) {
    ASSERT_TRUE(found_exactly(table, huge.base + offset, huge));
  }
  EXPECT_FALSE(table.insert(ref(huge.base + GiB, 512, 6)));
  EXPECT_FALSE(table.insert(ref(huge.base + GiB, 64 * MiB, 7)));
  EXPECT_FALSE(table.insert(ref(left.base + 512, 1024, 8)));
  ASSERT_TRUE(table.erase(huge.base).has_value());
  EXPECT_EQ(id_at(table, huge.base + GiB), 0u);
  EXPECT_EQ(id_at(table, huge.base), 0u);
  for (const BufferRef& buffer : {left, right, far_left, far_right})
    expect_edges(table, buffer);
  ASSERT_TRUE(table.insert(ref(huge.base + GiB, 512, 9)));  // the space is free again
  ASSERT_TRUE(table.insert(ref(huge.base, 1 * MiB, 10)));
  EXPECT_EQ(id_at(table, huge.base + GiB), 9u);
  EXPECT_EQ(table.size(), 6u);
}

TEST(BufferTable, EraseOverlappingTakesEveryBufferTouchingTheRange) {
  BufferTable table;
  const uintptr_t start = kHeap + 8 * MiB, end = start + 64 * MiB;
  const BufferRef before = ref(start - 8 * KiB, 4 * KiB, 1);         // stays
  const BufferRef head = ref(start - 1 * KiB, 2 * KiB, 2);           // straddles the start
  const BufferRef inside_small = ref(start + 5 * MiB, 512, 3);       // fine tier
  const BufferRef inside_large = ref(start + 16 * MiB, 8 * MiB, 4);  // coarse tier
  const BufferRef tail = ref(end - 2 * MiB, 2 * MiB, 5);             // ends at the end
  const BufferRef after = ref(end, 1 * MiB, 6);                      // starts at the end: stays
  for (const BufferRef& b : {before, head, inside_small, inside_large, tail, after})
    ASSERT_TRUE(table.insert(b)) << b.id;
  EXPECT_EQ(table.erase_overlapping(start, end - start), 4u);
  EXPECT_EQ(table.size(), 2u);
  for (const BufferRef& gone : {head, inside_small, inside_large, tail})
    EXPECT_EQ(id_at(table, gone.base), 0u) << gone.id;
  expect_edges(table, before);
  expect_edges(table, after);
  EXPECT_TRUE(table.insert(ref(start, end - start, 7))) << "the range is free now";
  EXPECT_EQ(table.erase_overlapping(start - 4 * KiB, 2 * KiB), 0u) << "a gap";
  EXPECT_EQ(table.erase_overlapping(start, 0), 0u);
  EXPECT_EQ(table.size(), 3u);
}

TEST(BufferTable, AddressesNearZero) {
  BufferTable table;
  EXPECT_EQ(id_at(table, 0), 0u);
  ASSERT_TRUE(table.insert(ref(0, 4 * KiB, 1)));
  ASSERT_TRUE(table.insert(ref(4 * KiB, 4 * MiB, 2)));
  EXPECT_EQ(id_at(table, 0), 1u);
  EXPECT_EQ(id_at(table, 4 * KiB - 1), 1u);
  EXPECT_EQ(id_at(table, 4 * KiB), 2u);
  EXPECT_EQ(id_at(table, 4 * MiB + 4 * KiB), 0u);
  EXPECT_FALSE(table.insert(ref(1, 1, 3)));
  ASSERT_TRUE(table.erase(0).has_value());
  EXPECT_EQ(id_at(table, 0), 0u);
}

TEST(BufferTable, AddressesNearAndBeyondTheIndexLimit) {
  BufferTable table;
  const BufferRef last_small = ref(kIndexLimit - 4 * KiB, 4 * KiB, 1);
  const BufferRef last_large = ref(kIndexLimit - 64 * MiB, 60 * MiB, 2);
  ASSERT_TRUE(table.insert(last_small));
  ASSERT_TRUE(table.insert(last_large));
  EXPECT_TRUE(found_exactly(table, kIndexLimit - 1, last_small));
  EXPECT_TRUE(found_exactly(table, last_large.base, last_large));
  // Refused: crossing the limit, beyond it, and a size that wraps around.
  EXPECT_FALSE(table.insert(ref(kIndexLimit - 4 * MiB, 4 * MiB + 1, 3)));
  EXPECT_FALSE(table.insert(ref(kIndexLimit, 4 * KiB, 4)));
  EXPECT_FALSE(table.insert(ref(uintptr_t{1} << 56, 4 * KiB, 5)));
  EXPECT_FALSE(table.insert(ref(~uintptr_t{0} - 100, 4 * KiB, 6)));
  EXPECT_FALSE(table.insert(ref(kHeap, ~uint64_t{0}, 7)));
  EXPECT_FALSE(table.insert(ref(0, kIndexLimit + 1, 8)));
  for (uintptr_t address : {kIndexLimit, kIndexLimit + 1, kIndexLimit + kHeap, uintptr_t{1} << 57,
                            ~uintptr_t{0}, ~uintptr_t{0} - 4095}) {
    EXPECT_EQ(id_at(table, address), 0u) << std::hex << address;
  }
  EXPECT_EQ(table.size(), 2u);
  // A buffer of 64 GiB ending exactly at the limit.
  ASSERT_TRUE(table.erase(last_small.base).has_value());
  ASSERT_TRUE(table.erase(last_large.base).has_value());
  const BufferRef top = ref(kIndexLimit - 64 * GiB, 64 * GiB, 9);
  ASSERT_TRUE(table.insert(top));
  EXPECT_TRUE(found_exactly(table, kIndexLimit - 1, top));
  EXPECT_EQ(id_at(table, kIndexLimit), 0u);
  EXPECT_FALSE(table.insert(ref(kIndexLimit - 512, 512, 10)));
}

// A table destroyed with live runs of every kind and retired runs pending;
// LeakSanitizer checks that all of it is freed.
TEST(BufferTable, DestructorFreesEverything) {
  BufferTable table;
  for (uint64_t i = 0; i < 300; ++i) {
    ASSERT_TRUE(
        table.insert(ref(kHeap + i * 3 * MiB + 512 * (i % 7), 512 + (i % 5) * 700 * KiB, i + 1)));
  }
  ASSERT_TRUE(table.insert(ref(kHeap + GiB, 5 * GiB + 123, 1000)));
  for (uint64_t i = 0; i < 300; i += 3)
    ASSERT_TRUE(table.erase(kHeap + i * 3 * MiB + 512 * (i % 7)));
}

// ---------------------------------------------------------------------------
// Against a model.

class Model {
 public:
  bool overlaps(const BufferRef& buffer) const {
    auto next = by_base_.lower_bound(buffer.base + buffer.size_bytes);
    if (next == by_base_.begin()) return false;
    --next;
    return next->second.base + next->second.size_bytes > buffer.base;
  }
  std::optional<BufferRef> find(uintptr_t address) const {
    auto next = by_base_.upper_bound(address);
    if (next == by_base_.begin()) return std::nullopt;
    --next;
    if (!next->second.contains(address)) return std::nullopt;
    return next->second;
  }
  // The first live buffer at or after `address`, wrapping around.
  std::optional<BufferRef> any_from(uintptr_t address) const {
    if (by_base_.empty()) return std::nullopt;
    auto it = by_base_.lower_bound(address);
    return (it == by_base_.end() ? by_base_.begin() : it)->second;
  }
  std::map<uintptr_t, BufferRef>& buffers() { return by_base_; }

 private:
  std::map<uintptr_t, BufferRef> by_base_;
};

// Mostly small, some spanning fine granules, a few large and huge.
uint64_t random_size_bytes(std::mt19937_64& rng) {
  const uint64_t kind = rng() % 100;
  if (kind < 70) return 512 + rng() % (64 * KiB);
  if (kind < 90) return 64 * KiB + rng() % (2 * MiB - 64 * KiB);
  if (kind < 99) return 2 * MiB + rng() % (62 * MiB);
  return 64 * MiB + rng() % (3 * GiB);
}

uintptr_t random_base(std::mt19937_64& rng, uintptr_t window_base, uint64_t window_bytes) {
  static constexpr uint64_t kAlignments[] = {512, 512, 512, 512, 4 * KiB, 2 * MiB, 1};
  const uint64_t alignment = kAlignments[rng() % std::size(kAlignments)];
  return window_base + (rng() % window_bytes) / alignment * alignment;
}

// Compares the table with the model at `address`, through find(), a fresh
// Reader, and `held` (a Reader the test keeps across changes) if not null.
void compare_at(const BufferTable& table, const Model& model, uintptr_t address,
                const BufferTable::Reader* held) {
  const std::optional<BufferRef> expected = model.find(address);
  ASSERT_TRUE(same(lookup(table, address), expected)) << std::hex << address;
  if (held != nullptr) {
    ASSERT_TRUE(same(held->find(address), expected)) << "held Reader, " << std::hex << address;
  }
}

// 40,000 random inserts, erases and probes on the table and the model. With
// `hold_readers`, a Reader lives across spans of 500 operations, replaced
// by the next one, and the same thread writes under it.
void check_against_model(uint64_t seed, bool hold_readers) {
  SCOPED_TRACE(seed);
  std::mt19937_64 rng(seed);
  BufferTable table;
  Model model;
  std::optional<BufferTable::Reader> held;
  const uintptr_t window_base = seed == 3 ? 0 : kHeap;  // seed 3: near address 0
  const uint64_t window_bytes = 16 * GiB;
  uint64_t next_id = 1;
  for (int op = 0; op < 40000; ++op) {
    if (hold_readers && op % 500 == 0) held.emplace(table);
    const BufferTable::Reader* reader = held ? &*held : nullptr;
    const uint64_t kind = rng() % 100;
    if (kind < 50) {
      const BufferRef buffer =
          ref(random_base(rng, window_base, window_bytes), random_size_bytes(rng), next_id++);
      ASSERT_EQ(table.insert(buffer), !model.overlaps(buffer)) << op;
      if (!model.overlaps(buffer)) model.buffers().emplace(buffer.base, buffer);
    } else if (kind < 80) {
      const std::optional<BufferRef> victim =
          model.any_from(random_base(rng, window_base, window_bytes));
      if (!victim) continue;
      const std::optional<BufferRef> erased = table.erase(victim->base);
      ASSERT_TRUE(erased.has_value()) << op;
      ASSERT_EQ(erased->id, victim->id);
      model.buffers().erase(victim->base);
    } else if (kind < 85) {
      const uintptr_t base = random_base(rng, window_base, window_bytes);
      ASSERT_EQ(table.erase(base).has_value(), model.buffers().count(base) == 1) << op;
      model.buffers().erase(base);
    } else {
      for (int probe = 0; probe < 4; ++probe) {
        compare_at(table, model, window_base + rng() % window_bytes, reader);
      }
      if (const std::optional<BufferRef> near =
              model.any_from(window_base + rng() % window_bytes)) {
        for (uintptr_t address : {near->base - 1, near->base, near->base + near->size_bytes - 1,
                                  near->base + near->size_bytes}) {
          compare_at(table, model, address, reader);
        }
      }
    }
    ASSERT_EQ(table.size(), model.buffers().size());
  }
  for (const auto& [base, buffer] : model.buffers())
    expect_edges(table, buffer);
}

TEST(BufferTable, AgreesWithAMapModel) {
  for (const uint64_t seed : {1u, 2u, 3u})
    check_against_model(seed, /*hold_readers=*/false);
}

TEST(BufferTableReader, HeldWhileThisThreadWritesAgreesWithAMapModel) {
  for (const uint64_t seed : {4u, 5u})
    check_against_model(seed, /*hold_readers=*/true);
}

// ---------------------------------------------------------------------------
// Readers nest, on one table and across tables, and end in any order.

TEST(BufferTableReader, NestsAndEndsInAnyOrder) {
  BufferTable table;
  BufferTable other;
  const BufferRef small = ref(kHeap, 4 * KiB, 1);
  const BufferRef large = ref(kHeap + 4 * MiB, 8 * MiB, 2);
  const BufferRef elsewhere = ref(kHeap, 64 * KiB, 3);
  ASSERT_TRUE(table.insert(small));
  ASSERT_TRUE(table.insert(large));
  ASSERT_TRUE(other.insert(elsewhere));
  const BufferTable::Reader outer(table);
  EXPECT_TRUE(same(outer.find(kHeap + 100), small));
  {
    const BufferTable::Reader inner(table);
    const BufferTable::Reader on_other(other);
    EXPECT_TRUE(same(inner.find(large.base + MiB), large));
    EXPECT_TRUE(same(on_other.find(kHeap + 8 * KiB), elsewhere));
    EXPECT_TRUE(same(table.find(kHeap + 100), small));  // find() inside two Readers
    EXPECT_TRUE(same(outer.find(large.base), large));
  }
  // Out of order: `first` ends while `second`, entered after it, lives.
  std::optional<BufferTable::Reader> first(std::in_place, table);
  std::optional<BufferTable::Reader> second(std::in_place, table);
  EXPECT_TRUE(same(first->find(kHeap), small));
  EXPECT_TRUE(same(second->find(kHeap + 4 * KiB - 1), small));
  first.reset();
  EXPECT_TRUE(same(second->find(large.base), large));
  EXPECT_FALSE(second->find(kHeap + 4 * KiB).has_value());
  second.reset();
  EXPECT_TRUE(same(outer.find(kHeap), small));
}

// This thread's own inserts and erases are seen by a Reader that lives
// across them, at once.
TEST(BufferTableReader, SeesThisThreadsChanges) {
  BufferTable table;
  const BufferTable::Reader reader(table);
  EXPECT_FALSE(reader.find(kHeap).has_value());
  ASSERT_TRUE(table.insert(ref(kHeap, 4 * KiB, 1)));
  EXPECT_EQ(id_of(reader.find(kHeap + 1)), 1u);
  for (uint64_t i = 2; i < 1000; ++i) {  // enough to attempt reclaiming many times
    ASSERT_TRUE(table.insert(ref(kHeap + 8 * KiB, 512 * i, i)));
    ASSERT_EQ(id_of(reader.find(kHeap + 8 * KiB + 100)), i);
    ASSERT_EQ(id_of(reader.find(kHeap + 1)), 1u);
    ASSERT_TRUE(table.erase(kHeap + 8 * KiB).has_value());
    ASSERT_FALSE(reader.find(kHeap + 8 * KiB + 100).has_value());
  }
  ASSERT_TRUE(table.erase(kHeap).has_value());
  EXPECT_FALSE(reader.find(kHeap + 1).has_value());
  EXPECT_FALSE(reader.find(~uintptr_t{0}).has_value());
}

// ---------------------------------------------------------------------------
// Lookups allocate nothing, including a thread's first one: 100,000 on a new
// thread, through find() and through Readers of 16 words each.

TEST(BufferTable, LookupsDoNotAllocate) {
  BufferTable table;
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(table.insert(ref(kHeap + i * 96 * KiB, 512 + i * 64, i + 1)));
  }
  ASSERT_TRUE(table.insert(ref(kHeap + GiB, GiB, 5000)));
  for (const bool batched : {false, true}) {
    uint64_t allocations = ~uint64_t{0};
    uint64_t hits = 0;
    std::thread reader([&] {
      const uint64_t before = cuswap::testing::allocations_on_this_thread();
      std::optional<BufferTable::Reader> scope;
      for (uint64_t i = 0; i < 100000; ++i) {
        if (batched && i % 16 == 0) scope.emplace(table);
        const uintptr_t address = kHeap + i * 24 * KiB;
        hits += (scope ? scope->find(address) : table.find(address)).has_value();
      }
      hits += (scope ? scope->find(~uintptr_t{0}) : table.find(~uintptr_t{0})).has_value();
      allocations = cuswap::testing::allocations_on_this_thread() - before;
    });
    reader.join();
    EXPECT_EQ(allocations, 0u) << (batched ? "through Readers" : "through find()");
    EXPECT_GT(hits, 1000u);
  }
}

}  // namespace
}  // namespace cuswap
