// Buffers by base address, for the lookups on a launch's path (Note [An index
// by base]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cuswap {

// Note [An index by base]
// A launch under a budget finds each buffer it names twice, in prepare and
// in finish, among up to hundreds of thousands. std::unordered_map spent
// most of that time in the prime modulo of its bucket index and in chasing
// its node; this is open addressing over a power-of-two table of (base,
// value) pairs: Fibonacci hashing of the base (the high bits of a
// multiplication, so the low bits, zero for aligned bases, do not matter),
// linear probing, at most half full, and deletion by shifting the later
// members of a run back (no tombstones, so a lookup's probe never grows
// with churn). Base 0 marks an empty slot: no buffer starts there.
template <typename T>
class BaseIndex {
 public:
  BaseIndex() { resize(kMinSlots); }

  // The value filed under `base`, or nullptr.
  T* find(uintptr_t base) const noexcept {
    for (size_t i = slot_of(base);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.base == base) return s.value;
      if (s.base == 0) return nullptr;
    }
  }

  // Files `value` under `base` (not 0, not filed yet). May throw
  // std::bad_alloc when the table grows; then nothing changed.
  void insert(uintptr_t base, T* value) {
    if (2 * (size_ + 1) > slots_.size()) grow();
    place(base, value);
    ++size_;
  }

  // Takes `base` out; false when it was not filed.
  bool erase(uintptr_t base) noexcept {
    size_t hole = slot_of(base);
    while (slots_[hole].base != base) {
      if (slots_[hole].base == 0) return false;
      hole = (hole + 1) & mask_;
    }
    // Each later member of the run moves into the hole unless its home lies
    // cyclically in (hole, here]: then it is already where a probe finds it.
    for (size_t here = (hole + 1) & mask_; slots_[here].base != 0; here = (here + 1) & mask_) {
      const size_t home = slot_of(slots_[here].base);
      if (((here - home) & mask_) >= ((here - hole) & mask_)) {
        slots_[hole] = slots_[here];
        hole = here;
      }
    }
    slots_[hole] = Slot{};
    --size_;
    return true;
  }

  size_t size() const noexcept { return size_; }

 private:
  static constexpr size_t kMinSlots = 64;
  struct Slot {
    uintptr_t base = 0;
    T* value = nullptr;
  };

  size_t slot_of(uintptr_t base) const noexcept {
    return static_cast<size_t>((static_cast<uint64_t>(base) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  void place(uintptr_t base, T* value) noexcept {
    size_t i = slot_of(base);
    while (slots_[i].base != 0)
      i = (i + 1) & mask_;
    slots_[i] = Slot{base, value};
  }

  void resize(size_t slots) {
    slots_.assign(slots, Slot{});
    mask_ = slots - 1;
    shift_ = 64;
    for (size_t n = slots; n > 1; n >>= 1)
      --shift_;
  }

  void grow() {
    std::vector<Slot> old(2 * slots_.size());  // may throw: nothing changed yet
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    --shift_;
    for (const Slot& s : old)
      if (s.base != 0) place(s.base, s.value);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  size_t mask_ = 0;
  unsigned shift_ = 64;
};

}  // namespace cuswap
