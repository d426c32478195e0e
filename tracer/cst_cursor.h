// The .cst reader's cursor over one record's payload (or the header body):
// typed reads that either succeed or record a Failure naming the byte
// offset where the file stopped making sense (Note [Error offsets] in
// cst_reader.cpp). Shared by the record walker (cst_reader.cpp) and the
// event payload decoders (cst_event_payload.cpp); nothing else includes it.
//
// Invariant: a read never goes past the end it was given, and every failed
// read leaves the Failure set and returns false, so callers chain reads with
// || and return false at the first one that fails.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "tracer/cst_format.h"

namespace cuswap::trace::cst {

// A failure: where, and what was expected there.
struct Failure {
  uint64_t offset = 0;
  std::string what;
};

// Reads a record's payload (or the header body); any read past `end` fails
// with the offset of the byte it needed.
class Cursor {
 public:
  Cursor(const uint8_t* file_begin, uint64_t begin, uint64_t end, Failure& failure)
      : file_(file_begin), pos_(begin), end_(end), failure_(failure) {}

  uint64_t offset() const noexcept { return pos_; }
  uint64_t left() const noexcept { return end_ - pos_; }
  bool at_end() const noexcept { return pos_ == end_; }

  bool fail(uint64_t at, std::string what) {
    failure_ = {at, std::move(what)};
    return false;
  }

  bool byte(uint8_t& v, std::string_view what) {
    if (pos_ >= end_)
      return fail(pos_, fmt::format("expected {}, found the end of the record", what));
    v = file_[pos_++];
    return true;
  }

  bool uvarint(uint64_t& v, std::string_view what) {
    const uint64_t start = pos_;
    v = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (pos_ >= end_)
        return fail(pos_, fmt::format("expected {} (a varint), found the end of the record", what));
      const uint8_t b = file_[pos_++];
      if (shift == 63 && b > 1)
        return fail(start, fmt::format("expected {} (a varint), found one beyond 64 bits", what));
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
  }

  bool svarint(int64_t& v, std::string_view what) {
    uint64_t u = 0;
    if (!uvarint(u, what)) return false;
    v = cst::unzigzag(u);
    return true;
  }

  bool int32(int& v, std::string_view what) {
    const uint64_t start = pos_;
    int64_t s = 0;
    if (!svarint(s, what)) return false;
    if (s < std::numeric_limits<int>::min() || s > std::numeric_limits<int>::max())
      return fail(start, fmt::format("expected {} to fit in 32 bits, found {}", what, s));
    v = static_cast<int>(s);
    return true;
  }

  bool string(std::string& s, std::string_view what) {
    const uint64_t start = pos_;
    uint64_t size = 0;
    if (!uvarint(size, fmt::format("the length of {}", what))) return false;
    if (size > left())
      return fail(start, fmt::format("expected {} of {} bytes, the record has {} left", what, size,
                                     left()));
    s.assign(reinterpret_cast<const char*>(file_ + pos_), size);
    pos_ += size;
    return true;
  }

  bool skip(uint64_t n, std::string_view what) {
    if (n > left())
      return fail(pos_,
                  fmt::format("expected {} of {} bytes, the record has {} left", what, n, left()));
    pos_ += n;
    return true;
  }

 private:
  const uint8_t* file_;
  uint64_t pos_;
  uint64_t end_;
  Failure& failure_;
};

template <typename Enum>
bool enum_value(Cursor& c, Enum& v, uint8_t max, bool lenient, std::string_view what) {
  const uint64_t at = c.offset();
  uint8_t b = 0;
  if (!c.byte(b, what)) return false;
  if (b > max && !lenient)
    return c.fail(at, fmt::format("expected {} (0..{}), found {}", what, max, b));
  v = static_cast<Enum>(b);
  return true;
}

}  // namespace cuswap::trace::cst
