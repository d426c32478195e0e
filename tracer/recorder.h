// The recorder: the shim's events, from any thread, into a compact binary
// trace file (.cst, format in docs/trace-format.md).
//
// Each recording thread appends to its own buffer; full buffers go to one
// background writer thread that writes them as checksummed chunks. Memory is
// bounded: when the writer falls behind, a recording thread waits for a
// free buffer rather than growing without end (and the wait is counted).
// Buffers of threads that exit are handed over at their exit; close()
// hands over everything else, writes the end record and closes the file.
//
// Invariants:
// - The record_* functions are noexcept, never throw, never log, and after
//   a thread's first event allocate nothing. They are safe to call from
//   many threads at once and after close() (they do nothing then).
// - Every event gets a global sequence number, so the reader can merge the
//   per-thread chunks back into one order.
// - A kernel name is written to the file before the first chunk that uses
//   its id.
// - In a forked child, disable_in_child() turns recording off without
//   touching locks or the writer (which does not exist there).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cuswap::trace {

// How a buffer came to be.
enum class AllocKind : uint8_t {
  linear = 0,      // cuMemAlloc
  pitch = 1,       // cuMemAllocPitch
  async = 2,       // cuMemAllocAsync
  pool_async = 3,  // cuMemAllocFromPoolAsync
  pluggable = 4,   // the framework's allocator hook (PyTorch pluggable allocator)
};

enum class FreeKind : uint8_t { sync = 0, async = 1 };

enum class CopyDirection : uint8_t {
  host_to_device = 0,
  device_to_host = 1,
  device_to_device = 2,
  host_to_host = 3,
  peer = 4,     // device to device across devices
  unknown = 5,  // unified addressing, not resolved
};

// Virtual-memory calls the application made itself: recorded, not managed.
enum class VmmOp : uint8_t { create = 0, map = 1, unmap = 2, release = 3 };

// Why cuswap evicted a buffer.
enum class EvictReason : uint8_t {
  budget = 0,  // an allocation or a prefetch needed room under the budget
  plan = 1,    // a plan said so
};

// Why cuswap brought a buffer back.
enum class PrefetchReason : uint8_t {
  on_demand = 0,   // a use named the evicted buffer (the use waited for it)
  planned = 1,     // a plan's trigger started it ahead of the use
  unseen_use = 2,  // a use cuswap could not see into needed every buffer back
};

// Launch flags.
inline constexpr uint8_t kLaunchUnknownAccess = 1;  // parameters could not be read
inline constexpr uint8_t kLaunchGraph = 2;          // cuGraphLaunch: touches unknown
inline constexpr uint8_t kLaunchCooperative = 4;
// 0x80 is taken by the recorder: kLaunchBuffersTruncated (cst_format.h).

inline constexpr uint64_t kNoBuffer = 0;        // buffer ids start at 1
inline constexpr uint64_t kNoSeq = UINT64_MAX;  // an event that was not recorded

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  uint64_t total_bytes = 0;
};

struct RecorderOptions {
  std::string path;
  std::string cuswap_version;  // e.g. "0.1.0"
  std::string configuration;   // the effective CUSWAP_CONF (conf::describe)
  std::vector<DeviceInfo> devices;
  size_t buffer_bytes = 64 * 1024;  // per-thread buffer size
  size_t max_buffers = 64;          // bounds memory: buffers in flight, all threads
};

// What cuswap moved in one of its own iterations (cuswap_iteration_begin()
// or found from the launches), written when the next one begins.
struct IterationStats {
  uint64_t iteration = 0;  // cuswap's count, from 1
  uint64_t prefetches_planned = 0;
  uint64_t prefetches_on_demand = 0;
  uint64_t late_prefetches = 0;  // planned ones a use still waited for
  uint64_t late_ns = 0;          // how long those uses waited, on the device
  uint64_t evictions = 0;
  uint64_t bytes_to_host = 0;
  uint64_t bytes_to_device = 0;
  bool followed = false;  // a plan was followed to the end of it

  bool operator==(const IterationStats&) const = default;
};

// Counters kept by the shim (per-hook call counts and the like), written in
// the end record so a trace says what happened around it.
struct Counter {
  std::string name;
  uint64_t value = 0;
};

class Recorder {
 public:
  // Creates the file and starts the writer. On failure returns nullptr and
  // sets `error` to one line naming the path and the reason.
  static std::unique_ptr<Recorder> open(const RecorderOptions& options, std::string& error);

  // close(). Unlike close(), it must not race with record_* calls: the
  // shim keeps its recorder for the life of the process.
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Interns a kernel name; the same text always gets the same id (ids start
  // at 1). May allocate and lock: the shim caches ids per function.
  uint32_t kernel_id(std::string_view name) noexcept;

  // Timestamps are taken inside: CLOCK_MONOTONIC nanoseconds since open().
  // `stream` is the CUstream handle value (0 for the NULL stream).
  void record_alloc(uint64_t buffer_id, uint64_t address, uint64_t size_bytes, uint64_t stream,
                    int device, AllocKind kind) noexcept;
  void record_free(uint64_t buffer_id, uint64_t stream, FreeKind kind) noexcept;
  // Returns the launch's sequence number (for record_timing), or kNoSeq
  // when it was dropped.
  uint64_t record_launch(uint32_t kernel_id, uint64_t stream, int device,
                         std::span<const uint64_t> buffers, uint8_t flags) noexcept;
  // Copies and sets: kNoBuffer for a side that is not a tracked buffer; a
  // set has src_buffer == kNoBuffer and is_set.
  void record_copy(uint64_t dst_buffer, uint64_t src_buffer, uint64_t bytes,
                   CopyDirection direction, uint64_t stream, bool is_set) noexcept;
  void record_vmm(VmmOp op, uint64_t address, uint64_t size_bytes, uint64_t handle) noexcept;
  void record_iteration() noexcept;  // ordinals count from 0 in the file

  // What the device measured for an earlier launch or prefetch (`target_seq`
  // is what its record_* returned): when it started, on the recorder's
  // clock, and how long it ran (Note [Device durations] in
  // runtime/device_timer.h).
  void record_timing(uint64_t target_seq, uint64_t start_ns, uint64_t duration_ns) noexcept;
  // cuswap's own copies. An eviction is recorded once its copy is done,
  // with the times the copy was queued and found complete (recorder clock).
  void record_eviction(uint64_t buffer_id, uint64_t bytes, EvictReason reason, uint64_t start_ns,
                       uint64_t end_ns) noexcept;
  // A prefetch is recorded when its copy is queued on `stream`; returns its
  // sequence number, which a timing event names once the copy is done.
  uint64_t record_prefetch(uint64_t buffer_id, uint64_t bytes, PrefetchReason reason,
                           uint64_t stream) noexcept;
  // The next use this thread records on `stream` waits for the buffer's
  // prefetch copy.
  void record_wait(uint64_t buffer_id, uint64_t stream) noexcept;
  // 2.1: an iteration_stats event.
  void record_iteration_stats(const IterationStats& stats) noexcept;

  // The recorder's clock: CLOCK_MONOTONIC nanoseconds since open().
  uint64_t now_ns() const noexcept;

  // Hands over every buffer, writes the end record with `counters`, closes
  // the file. Idempotent; later record_* calls are ignored.
  void close(std::span<const Counter> counters = {}) noexcept;

  // In a forked child: stop recording; touch nothing shared.
  void disable_in_child() noexcept;

  // Events dropped because they arrived after close() or in a child (or
  // from a thread after its exit handover, or lost to a failed write), and
  // times a thread waited for a free buffer.
  uint64_t dropped_events() const noexcept;
  uint64_t buffer_waits() const noexcept;

 private:
  struct Impl;
  explicit Recorder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace cuswap::trace
