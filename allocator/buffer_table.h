// The buffer table: every live device buffer by address, for the launch
// path, which asks "is this word a pointer into a buffer, and which?" for
// every 8-byte word of every kernel parameter.
//
// Invariants:
// - find() is lock-free, wait-free in practice, allocates nothing, makes no
//   system call, and is safe against concurrent insert() and erase() from
//   other threads: it returns a buffer that was live at some point during
//   the call, or nothing. Memory a reader may still be looking at is never
//   freed under it.
// - Reader::find() is find() with one epoch guard for a whole scope, so that
//   a launch's many lookups pay for one announcement (Note [Batched lookups]
//   in buffer_table.cpp). It allocates nothing either.
// - insert() and erase() may lock and allocate; they are called on the
//   allocation path, after the driver call, never on the launch path.
// - Buffers do not overlap: an insert that would overlap a live buffer is
//   refused and changes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "allocator/epoch.h"

namespace cuswap {

struct BufferRef {
  uint64_t id = 0;  // never 0 for a live buffer
  uintptr_t base = 0;
  uint64_t size_bytes = 0;

  bool contains(uintptr_t address) const { return address - base < size_bytes; }
};

class BufferTable {
 public:
  BufferTable();
  ~BufferTable();
  BufferTable(const BufferTable&) = delete;
  BufferTable& operator=(const BufferTable&) = delete;

  // Adds a live buffer ([base, base + size_bytes), size_bytes > 0, id != 0).
  // False, with nothing changed, if it overlaps a live buffer or is empty.
  bool insert(const BufferRef& buffer);

  // Removes the live buffer that starts exactly at `base` and returns it.
  std::optional<BufferRef> erase(uintptr_t base);

  // Removes every live buffer overlapping [base, base + size_bytes) and
  // returns how many: for entries that outlived their memory (freed behind
  // the table's back) where the driver now hands out something new.
  size_t erase_overlapping(uintptr_t base, uint64_t size_bytes);

  // The live buffer containing `address`, if any.
  std::optional<BufferRef> find(uintptr_t address) const noexcept;

  // A scope for many find()s, such as one launch's parameter words.
  class Reader;

  size_t size() const noexcept;  // live buffers

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Lookups under one epoch guard, entered by the first of them that reaches
// a run and held until the Reader ends (Note [Batched lookups]). Each find()
// answers as BufferTable::find() would at that moment; one scope's answers
// are not a snapshot. What it allows and forbids while it lives:
// - The table must outlive it, and it must stay on the thread that made it:
//   its guard is that thread's announcement.
// - insert() and erase(), on this thread or any other, are fine; its
//   find()s see them as BufferTable::find() would. But the runs they
//   replace once the Reader has entered are freed only after it ends, so it
//   should span one launch, not a thread's life.
// - Readers and BufferTable::find() nest inside it, on this table or others,
//   ended in any order (Note [Nested guards]).
class BufferTable::Reader {
 public:
  explicit Reader(const BufferTable& table) noexcept;
  ~Reader();
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // The live buffer containing `address`, if any; lock-free, no allocation.
  std::optional<BufferRef> find(uintptr_t address) const noexcept;

 private:
  Impl* impl_;                        // null if the table could not be made
  mutable EpochDomain::Guard guard_;  // entered by the first find() that needs it
};

}  // namespace cuswap
