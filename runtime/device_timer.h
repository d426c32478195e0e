// Device durations of launches and of cuswap's prefetch copies, measured
// with CUDA events and written to the trace as timing events.
//
// Note [Device durations]: a launch is timed by two events on its stream,
// one recorded just before the launch (after the allocator made the stream
// wait for any prefetch, so a stall is not counted as kernel time) and one
// just after. Nothing waits for them: the pair is queued, and later calls
// (the next launches, an iteration mark, the exit) query the oldest pairs
// with cuEventQuery and, once complete, read cuEventElapsedTime and record
// a timing event naming the launch's sequence number. The device start is
// placed on the recorder's clock through an anchor event: the first timed
// start, taken to have run when the host recorded it; later starts are the
// anchor's time plus their elapsed time from it. cuEventElapsedTime is a
// float of milliseconds, so the anchor moves forward to the newest start
// once that is over a second past it, keeping starts within a microsecond.
//
// Events were chosen over CUPTI's activity API: they exist in every driver
// (CUPTI is a separate library, often absent where training runs, and owns
// process-wide state a profiler may already hold), they work on simcuda,
// whose virtual clock gives a kernel exactly its declared duration, and
// they cost two event records per launch, measured in bench/hook_bench.cpp.
// What they measure is stream time: from the moment the stream reached the
// launch to the kernel's end, which is the kernel's duration unless another
// stream held the device.
//
// Invariants:
// - Never blocks the launching thread: the queue is resolved with try_lock
//   and non-blocking queries; drain() alone waits, at exit.
// - Bounded: at most kMaxPairs pairs exist; a launch that finds none free is
//   not timed (counted in untimed()).
// - Events are reused: a pair goes back to the pool once resolved. Pairs
//   are per context; a pair is reused only in the context it was made in.
//
// Lock order: the allocator's lock (the observer times prefetches from
// inside it), then mu_, then the recorder's slot lock. mu_ is never held
// while calling into the allocator.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "allocator/driver.h"
#include "tracer/recorder.h"

namespace cuswap::hooks {

class DeviceTimer {
 public:
  struct Pair {
    CUevent start = nullptr;
    CUevent end = nullptr;
    CUcontext context = nullptr;
    uint64_t host_ns = 0;  // the recorder's clock when start was recorded
    uint64_t seq = trace::kNoSeq;
  };
  static constexpr size_t kMaxPairs = 4096;

  DeviceTimer(const Driver& driver, trace::Recorder& recorder) noexcept
      : driver_(driver), recorder_(recorder) {}
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  // Records a start event on `stream`; nullptr when this one is not timed.
  Pair* start(CUstream stream) noexcept;
  // After the work: records the end event; the pair will be resolved into a
  // timing of the event numbered `seq`. With kNoSeq (the event was dropped)
  // the pair goes back unused.
  void finish(Pair* pair, CUstream stream, uint64_t seq) noexcept;
  void abandon(Pair* pair) noexcept;

  // Resolves up to `limit` of the oldest pairs, while they are complete;
  // returns at once if another thread is resolving.
  void poll(size_t limit) noexcept;
  // Waits for every queued pair and resolves it.
  void drain() noexcept;

  uint64_t timed() const noexcept { return timed_.load(std::memory_order_relaxed); }
  uint64_t untimed() const noexcept { return untimed_.load(std::memory_order_relaxed); }

 private:
  void resolve(Pair& pair) noexcept;  // with mu_ held
  void recycle(Pair* pair) noexcept;  // with mu_ held

  const Driver& driver_;
  trace::Recorder& recorder_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Pair>> all_;  // every pair made, for their lifetime
  std::vector<Pair*> free_;
  std::deque<Pair*> queued_;  // finished, waiting for their events, oldest first
  CUevent anchor_ = nullptr;  // Note [Device durations]
  CUcontext anchor_context_ = nullptr;
  uint64_t anchor_ns_ = 0;
  std::atomic<uint64_t> timed_{0};
  std::atomic<uint64_t> untimed_{0};
};

}  // namespace cuswap::hooks
