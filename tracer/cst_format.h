// The .cst trace format: the constants and the encoders that the recorder
// (writer) and the reader share. docs/trace-format.md is the specification;
// this file and that page must say the same thing.
//
// Layout in one breath: a header (magic, format version, body length, body,
// crc32), then records, each `tag u8, length u32 LE, payload, crc32 u32 LE`
// with the crc over tag, length and payload. Integers inside payloads are
// LEB128 varints (signed ones zigzag-encoded first); fixed-width integers
// are little-endian.
//
// Invariants:
// - The encoders never allocate and never write more than kMaxVarintBytes
//   per integer: the recorder sizes its buffers with these bounds.
// - A change to anything here that an old reader cannot skip is a new major
//   version (see Note [Format versioning]).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace cuswap::trace {

// Event types as they appear in a chunk. Types 1..63 are core types whose
// layout every reader of the same major version knows; types 64..255 are
// extension events followed by their length, which older readers skip.
enum class EventType : uint8_t {
  alloc = 1,
  free = 2,
  launch = 3,
  copy = 4,
  vmm = 5,
  iteration = 6,
  // 2.0: measurements and cuswap's own decisions.
  timing = 7,    // the device start and duration of an earlier launch or prefetch
  eviction = 8,  // cuswap copied a buffer to host memory
  prefetch = 9,  // cuswap copied a buffer back to the device
  wait = 10,     // a use waited for a buffer's prefetch
  // 2.1, extension events (length-prefixed).
  iteration_stats = 64,  // what cuswap moved in one of its iterations, and how late
};
inline constexpr size_t kEventTypeCount = 10;  // core types in this version
// Core types of format 1.x: a 1.x file holding a later type is corrupt.
inline constexpr size_t kEventTypeCountV1 = 6;
inline constexpr uint8_t kFirstExtensionEventType = 64;

// Launch flag set by the recorder (never by the shim) when the launch's
// buffer list did not fit in one chunk and was cut; see recorder.cpp.
inline constexpr uint8_t kLaunchBuffersTruncated = 0x80;

}  // namespace cuswap::trace

namespace cuswap::trace::cst {

// Note [Format versioning]: the major version changes when a reader of the
// previous major could misread a file: a changed field, a new core event
// type, a changed encoding. The minor version changes for additions an older
// reader can skip: fields appended at the end of the header body or of the
// end record's payload, new record tags, extension event types (>= 64,
// length-prefixed), new flag bits. A reader rejects a major version it does
// not know and accepts any minor; it skips what it does not know only when
// the file's major is its own and the file's minor is newer than its own
// (otherwise an unknown tag is corruption). Older majors it knows are read
// as they were written: this reader reads 1.x (kOldestMajor), whose files
// hold only the first kEventTypeCountV1 event types. History: 1.0 the first;
// 2.0 added the event types timing, eviction, prefetch and wait; 2.1 the
// extension event iteration_stats.
inline constexpr uint16_t kFormatMajor = 2;
inline constexpr uint16_t kFormatMinor = 1;
inline constexpr uint16_t kOldestMajor = 1;

// "\x89CST\r\n\x1a\n": the high byte catches 7-bit transfers, CR LF and the
// DOS end-of-file byte catch text-mode conversions (the PNG trick).
inline constexpr std::array<uint8_t, 8> kMagic = {0x89, 'C', 'S', 'T', '\r', '\n', 0x1a, '\n'};

inline constexpr size_t kHeaderFixedBytes = 16;  // magic, major u16, minor u16, body length u32
inline constexpr size_t kCrcBytes = 4;
inline constexpr size_t kRecordHeaderBytes = 5;  // tag u8, payload length u32

enum class RecordTag : uint8_t {
  names = 1,  // kernel names: first id, count, strings
  chunk = 2,  // one thread's events
  end = 3,    // counters and totals; the last record of a complete file
};

inline constexpr size_t kMaxVarintBytes = 10;

// ---------------------------------------------------------------------------
// Encoders. Each returns the position after what it wrote.

inline uint8_t* put_uvarint(uint8_t* out, uint64_t value) noexcept {
  while (value >= 0x80) {
    *out++ = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<uint8_t>(value);
  return out;
}

inline constexpr uint64_t zigzag(int64_t value) noexcept {
  return (static_cast<uint64_t>(value) << 1) ^ static_cast<uint64_t>(value >> 63);
}

inline constexpr int64_t unzigzag(uint64_t value) noexcept {
  return static_cast<int64_t>(value >> 1) ^ -static_cast<int64_t>(value & 1);
}

inline uint8_t* put_svarint(uint8_t* out, int64_t value) noexcept {
  return put_uvarint(out, zigzag(value));
}

inline uint8_t* put_u16(uint8_t* out, uint16_t value) noexcept {
  out[0] = static_cast<uint8_t>(value);
  out[1] = static_cast<uint8_t>(value >> 8);
  return out + 2;
}

inline uint8_t* put_u32(uint8_t* out, uint32_t value) noexcept {
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<uint8_t>(value >> (8 * i));
  return out + 4;
}

inline uint32_t get_u32(const uint8_t* in) noexcept {
  return static_cast<uint32_t>(in[0]) | static_cast<uint32_t>(in[1]) << 8 |
         static_cast<uint32_t>(in[2]) << 16 | static_cast<uint32_t>(in[3]) << 24;
}

inline uint16_t get_u16(const uint8_t* in) noexcept {
  return static_cast<uint16_t>(in[0] | in[1] << 8);
}

}  // namespace cuswap::trace::cst
