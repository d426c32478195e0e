// Reads a whole .cst trace (docs/trace-format.md) into memory: the header,
// kernel names by id, every event in sequence order with all its fields, and
// the end record.
//
// Invariants:
// - Never throws, never crashes, on any input: every failure is one line,
//   `FILE: offset N: what was expected`, where N is the byte offset of the
//   first byte that does not fit (the start of a record whose checksum does
//   not match, or the point where the file ends early).
// - Input is parsed from memory (parse_cst), so tests and the fuzz target
//   need no files; read_cst_file only reads the bytes and calls it.
// - Strict by default: a file without its end record is an error. With
//   ReadOptions::allow_incomplete, a trace whose recording never finished
//   (the process died) is read up to its last whole record and says where
//   it stopped; corruption inside a whole record is still an error.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tracer/cst_format.h"
#include "tracer/recorder.h"

namespace cuswap::trace {

struct AllocEvent {
  uint64_t buffer_id = 0;
  uint64_t address = 0;
  uint64_t size_bytes = 0;
  uint64_t stream = 0;
  int device = 0;
  AllocKind kind = AllocKind::linear;

  bool operator==(const AllocEvent&) const = default;
};

struct FreeEvent {
  uint64_t buffer_id = 0;
  uint64_t stream = 0;
  FreeKind kind = FreeKind::sync;

  bool operator==(const FreeEvent&) const = default;
};

struct LaunchEvent {
  uint32_t kernel_id = 0;  // 0: unnamed (the recorder got an id it never issued)
  uint64_t stream = 0;
  int device = 0;
  uint8_t flags = 0;              // kLaunch* from recorder.h, kLaunchBuffersTruncated
  std::vector<uint64_t> buffers;  // in the order the recorder was given them

  bool operator==(const LaunchEvent&) const = default;
};

struct CopyEvent {
  uint64_t dst_buffer = kNoBuffer;
  uint64_t src_buffer = kNoBuffer;
  uint64_t bytes = 0;
  CopyDirection direction = CopyDirection::unknown;
  uint64_t stream = 0;
  bool is_set = false;

  bool operator==(const CopyEvent&) const = default;
};

struct VmmEvent {
  VmmOp op = VmmOp::create;
  uint64_t address = 0;
  uint64_t size_bytes = 0;
  uint64_t handle = 0;

  bool operator==(const VmmEvent&) const = default;
};

struct IterationEvent {
  uint64_t ordinal = 0;  // 0, 1, 2, ... in sequence order

  bool operator==(const IterationEvent&) const = default;
};

// 2.0: what the device measured for an earlier launch or prefetch.
struct TimingEvent {
  uint64_t target_seq = 0;  // the launch or prefetch event it measures
  uint64_t start_ns = 0;    // device start, on the recorder's clock
  uint64_t duration_ns = 0;

  bool operator==(const TimingEvent&) const = default;
};

// 2.0: cuswap copied a buffer to host memory.
struct EvictionEvent {
  uint64_t buffer_id = 0;
  uint64_t bytes = 0;
  EvictReason reason = EvictReason::budget;
  uint64_t start_ns = 0;     // the copy was queued
  uint64_t duration_ns = 0;  // until it was found complete

  bool operator==(const EvictionEvent&) const = default;
};

// 2.0: cuswap queued a copy of a buffer back to the device.
struct PrefetchEvent {
  uint64_t buffer_id = 0;
  uint64_t bytes = 0;
  PrefetchReason reason = PrefetchReason::on_demand;
  uint64_t stream = 0;  // the copy's stream

  bool operator==(const PrefetchEvent&) const = default;
};

// 2.0: the thread's next use on `stream` waited for the buffer's prefetch.
struct WaitEvent {
  uint64_t buffer_id = 0;
  uint64_t stream = 0;

  bool operator==(const WaitEvent&) const = default;
};

// 2.1: what cuswap moved in one of its iterations (an extension event).
using IterationStatsEvent = IterationStats;

// Alternative i is EventType i + 1 for the core types; the last is the
// extension type iteration_stats.
using EventData =
    std::variant<AllocEvent, FreeEvent, LaunchEvent, CopyEvent, VmmEvent, IterationEvent,
                 TimingEvent, EvictionEvent, PrefetchEvent, WaitEvent, IterationStatsEvent>;

struct Event {
  uint64_t seq = 0;      // global, unique; events are sorted by it
  uint64_t time_ns = 0;  // CLOCK_MONOTONIC since the recorder opened
  uint32_t thread = 0;   // the recording thread's OS thread id
  uint64_t offset = 0;   // where in the file the event starts
  EventData data;

  EventType type() const noexcept {
    return data.index() < kEventTypeCount ? static_cast<EventType>(data.index() + 1)
                                          : EventType::iteration_stats;
  }
  template <typename T>
  const T& as() const {
    return std::get<T>(data);
  }
};

struct CstHeader {
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  std::string cuswap_version;
  std::string configuration;
  uint64_t pid = 0;
  uint64_t start_unix_ns = 0;  // wall clock when recording began
  std::vector<DeviceInfo> devices;
};

struct CstEnd {
  uint64_t offset = 0;  // where the end record starts
  uint64_t end_time_ns = 0;
  uint64_t chunks = 0;
  uint64_t events = 0;
  std::vector<uint64_t> events_by_type;  // [0] is EventType 1 (alloc), ...
  uint64_t dropped_events = 0;
  uint64_t buffer_waits = 0;
  uint64_t kernel_names = 0;
  std::vector<Counter> counters;
};

struct CstTrace {
  CstHeader header;
  std::vector<std::string> kernel_names;      // by id; [0] is "" (unnamed)
  std::vector<uint64_t> kernel_name_offsets;  // by id: the record that defined it
  std::vector<Event> events;                  // sorted by seq
  uint64_t chunks = 0;
  uint64_t skipped_events = 0;   // extension events this reader does not know
  uint64_t skipped_records = 0;  // record tags this reader does not know
  uint64_t file_bytes = 0;
  std::optional<CstEnd> end;  // present: the recording finished
  // When the end record is missing (allow_incomplete): where reading stopped
  // and why, in the same words an error would use.
  uint64_t stopped_at = 0;
  std::string stopped_reason;

  bool complete() const noexcept { return end.has_value(); }
  std::string_view kernel_name(uint32_t id) const noexcept {
    return id < kernel_names.size() ? std::string_view(kernel_names[id]) : std::string_view();
  }
};

struct ReadOptions {
  bool allow_incomplete = false;  // accept a trace whose recording never finished
  bool verify_checksums = true;   // off only for fuzzing past the checksums
};

// Parses `bytes`; `name` is the file name errors start with. On failure
// returns false, leaves `out` unspecified and sets `error` to one line.
[[nodiscard]] bool parse_cst(std::span<const uint8_t> bytes, std::string_view name,
                             const ReadOptions& options, CstTrace& out,
                             std::string& error) noexcept;

// Reads the file at `path` and parses it; a file that cannot be read is
// `PATH: cannot read: REASON`.
[[nodiscard]] bool read_cst_file(const std::string& path, const ReadOptions& options, CstTrace& out,
                                 std::string& error) noexcept;

// Names for enums, as the CLI and the docs spell them.
std::string_view to_string(EventType type) noexcept;
std::string_view to_string(AllocKind kind) noexcept;
std::string_view to_string(FreeKind kind) noexcept;
std::string_view to_string(CopyDirection direction) noexcept;
std::string_view to_string(VmmOp op) noexcept;
std::string_view to_string(EvictReason reason) noexcept;
std::string_view to_string(PrefetchReason reason) noexcept;

}  // namespace cuswap::trace
