// Private to tracer/: the recorder's state and the pieces its three source
// files share. recorder.cpp has the public methods and the record_* path,
// recorder_slots.cpp the per-thread slots (attach, thread exit, refill), and
// recorder_writer.cpp the file: header, writer thread, chunks, end record.
//
// The words (buffer, slot, sweep) are defined in docs/architecture.md
// ("Words of one component").
//
// Note [Per-thread buffers]: a recording thread finds its slot through a
// small thread-local cache keyed by the recorder's uid and appends the event
// to the slot's buffer. The slot's lock is a one-word spin lock that two
// parties ever take: the owning thread, once per event (uncontended, one
// atomic exchange and one release store), and a collector (the writer's
// sweep, or close()), for the few instructions it takes to move the buffer
// pointer. The writer only try-locks, so an event never waits for the
// writer; close() does wait, but only for the event in progress. A lock-free
// handoff would need the same wait at close (to know the last event is
// complete) and costs as much on x86, so the lock stays: it is the only
// synchronisation on the record_* path besides the global sequence counter.
//
// Note [Bounded memory]: max_buffers buffers exist, allocated (not touched)
// at open(). A buffer is free, in a slot, queued for the writer, or being
// written. A thread whose buffer is full queues it and takes a free one;
// when none is free it waits on `buffer_freed` (counted once per wait in
// `waits`) and wakes the writer, which writes what is queued and, while
// anyone waits, also takes empty buffers from idle slots (Note [Sweeps]), so
// threads cannot all wait on buffers that idle threads hold.
//
// Note [Sweeps]: every kSweepInterval, and at once while a thread waits for
// a buffer, the writer try-locks each slot and takes its buffer if it holds
// events (so events reach the file within the interval even from threads
// that record rarely), if the slot's thread has exited, or, while a thread
// waits, if it is empty. A slot it cannot lock is skipped until next time.
//
// Note [Thread exit]: a pthread key destructor runs when a thread exits. It
// marks the thread's slots exited, under their locks, and drops the
// thread's reference. It never touches the recorder, which may be gone by
// then: slots are reference-counted (thread and recorder) exactly so that
// the exiting thread needs nothing else. The next sweep, or close(), takes
// the buffer. A new thread reuses an exited slot, so the list is as long as
// the most threads that recorded at once. The main thread leaves through
// exit(), which runs no key destructors; close() collects its buffer.
//
// Note [Fork]: in a child only the forking thread exists and any lock may be
// held by a thread that is gone. disable_in_child() sets `stopped` and
// `in_child` and closes the child's copy of the descriptor; from then on the
// record_* functions return at their first check, close() does nothing,
// and the destructor leaks the state (destroying a condition variable that
// a vanished thread waited on can block). close() and the destructor also
// recognise a child by its pid, for a child that nobody told.
//
// Lock order: close_mu, then a slot lock, then mu. names_mu is a leaf. Code
// holding mu only ever try-locks a slot.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracer/cst_format.h"
#include "tracer/recorder.h"

namespace cuswap::trace::detail {

inline constexpr size_t kMinBufferBytes = 256;
inline constexpr size_t kMaxBufferBytes = size_t{64} << 20;
inline constexpr size_t kMaxBuffers = 1 << 16;
inline constexpr std::chrono::milliseconds kSweepInterval{100};

// Upper bounds of an encoded event, used to decide whether it fits. The
// event header is type, seq delta and time delta.
inline constexpr size_t kEventHeaderMaxBytes = 1 + 2 * cst::kMaxVarintBytes;
inline constexpr size_t kAllocMaxBytes = 5 * cst::kMaxVarintBytes + 1;
inline constexpr size_t kFreeMaxBytes = 2 * cst::kMaxVarintBytes + 1;
inline constexpr size_t kLaunchFixedMaxBytes = 4 * cst::kMaxVarintBytes + 1;  // + ids
inline constexpr size_t kCopyMaxBytes = 4 * cst::kMaxVarintBytes + 2;
inline constexpr size_t kVmmMaxBytes = 3 * cst::kMaxVarintBytes + 1;
inline constexpr size_t kTimingMaxBytes = 3 * cst::kMaxVarintBytes;
inline constexpr size_t kEvictionMaxBytes = 4 * cst::kMaxVarintBytes + 1;
inline constexpr size_t kPrefetchMaxBytes = 3 * cst::kMaxVarintBytes + 1;
inline constexpr size_t kWaitMaxBytes = 2 * cst::kMaxVarintBytes;
inline constexpr size_t kIterationStatsFields = 8;  // then the followed byte
inline constexpr size_t kIterationStatsMaxBytes = kIterationStatsFields * cst::kMaxVarintBytes + 1;

struct Buffer {
  uint8_t* data = nullptr;
  uint32_t capacity = 0;
  uint32_t used = 0;
  uint32_t events = 0;
  uint32_t thread_id = 0;
  uint64_t last_seq = 0;  // deltas in a chunk start from 0
  uint64_t last_time_ns = 0;
  std::array<uint32_t, kEventTypeCount> events_by_type{};

  void reset(uint32_t tid) noexcept {
    used = 0;
    events = 0;
    thread_id = tid;
    last_seq = 0;
    last_time_ns = 0;
    events_by_type = {};
  }
};

struct ThreadSlot {
  std::atomic<bool> locked{false};
  std::atomic<int> refs{2};           // the thread's and the recorder's
  std::atomic<bool> orphaned{false};  // the recorder is gone
  pid_t pid = 0;                      // the process that made it (Note [Fork])
  ThreadSlot* next = nullptr;         // the recorder's list; constant once published

  // Guarded by `locked`.
  Buffer* buffer = nullptr;
  uint32_t thread_id = 0;
  bool exited = false;  // its thread is gone; the buffer awaits a sweep
  bool closed = false;  // the recorder closed: never write again

  void lock() noexcept {
    if (locked.exchange(true, std::memory_order_acquire)) lock_contended();
  }
  bool try_lock() noexcept { return !locked.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { locked.store(false, std::memory_order_release); }

 private:
  void lock_contended() noexcept;
};

// Drops one reference; the last one frees the slot.
void release(ThreadSlot* slot) noexcept;

// Buffers handed to the writer, oldest first. Capacity is the number of
// buffers, so a push always fits.
class BufferQueue {
 public:
  void init(size_t capacity) { ring_.assign(capacity, nullptr); }
  bool empty() const noexcept { return count_ == 0; }
  void push(Buffer* b) noexcept {
    ring_[(head_ + count_) % ring_.size()] = b;
    ++count_;
  }
  Buffer* pop() noexcept {
    Buffer* b = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
    return b;
  }

 private:
  std::vector<Buffer*> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

// What only the writer thread touches (and close(), after joining it).
struct WriterState {
  uint32_t names_written = 0;
  uint64_t chunks = 0;
  uint64_t events = 0;
  std::array<uint64_t, kEventTypeCount> events_by_type{};
  bool failed = false;
  std::vector<uint8_t> scratch;
};

struct RecorderState {
  // Constant after open().
  uint64_t uid = 0;  // never reused within the process; keys thread caches
  std::string path;
  pid_t pid = 0;
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC at open()
  int fd = -1;

  // Read on every event.
  alignas(64) std::atomic<bool> stopped{false};  // closed, in a child, or write failed
  std::atomic<uint32_t> kernel_count{0};
  alignas(64) std::atomic<uint64_t> next_seq{0};
  alignas(64) std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> waits{0};
  std::atomic<bool> in_child{false};

  // Guarded by mu (Note [Bounded memory]).
  std::mutex mu;
  std::condition_variable buffer_freed;
  std::condition_variable writer_wake;
  std::vector<Buffer*> free_buffers;  // capacity reserved at open()
  BufferQueue queue;
  int waiting = 0;  // threads waiting for a free buffer
  bool writer_exit = false;
  std::atomic<ThreadSlot*> slots{nullptr};  // pushed under mu, walked without it

  std::unique_ptr<uint8_t[]> storage;
  std::vector<Buffer> buffers;

  // Kernel names; id = index + 1.
  std::mutex names_mu;
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> ids;

  pthread_t writer{};
  bool writer_running = false;
  WriterState ws;

  std::mutex close_mu;
  bool closed = false;  // guarded by close_mu
};

// recorder_slots.cpp
uint64_t next_recorder_uid() noexcept;
// The calling thread's slot in `r`, attaching it on the thread's first
// event (which may allocate). nullptr when the event must be dropped.
ThreadSlot* slot_for_this_thread(RecorderState& r) noexcept;
// Called with `slot` locked and its buffer missing or too full: queues the
// buffer and takes a free one, waiting if none is free. nullptr when the
// recorder stopped meanwhile.
Buffer* refill(RecorderState& r, ThreadSlot& slot) noexcept;
// Takes buffers out of slots (Note [Sweeps]); called with mu held. Returns
// how many it took.
size_t sweep(RecorderState& r, bool take_empty) noexcept;

// recorder_writer.cpp
// Creates the file and writes the header; on failure sets `error`.
bool create_file(RecorderState& r, const RecorderOptions& options, std::string& error);
bool start_writer(RecorderState& r, std::string& error);
// Stops and joins the writer after it wrote everything queued.
void stop_writer(RecorderState& r) noexcept;
// Writes pending kernel names and the end record, then closes the file.
void finish_file(RecorderState& r, std::span<const Counter> counters) noexcept;

uint64_t monotonic_ns() noexcept;

}  // namespace cuswap::trace::detail
