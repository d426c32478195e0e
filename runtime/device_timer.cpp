// Timing launches with event pairs (Note [Device durations] in device_timer.h).
#include "runtime/device_timer.h"

#include <algorithm>
#include <cmath>

namespace cuswap::hooks {
namespace {

// Past this, an elapsed time as a float of milliseconds is coarser than a
// microsecond: the anchor moves (Note [Device durations]).
constexpr float kAnchorSpanMs = 1000.0f;

uint64_t ns_from_ms(float ms) {
  if (!(ms > 0)) return 0;  // also NaN
  return static_cast<uint64_t>(std::llround(static_cast<double>(ms) * 1e6));
}

}  // namespace

DeviceTimer::Pair* DeviceTimer::start(CUstream stream) noexcept {
  if (!driver_.cuEventRecord || !driver_.cuEventCreate || !driver_.cuEventQuery ||
      !driver_.cuEventElapsedTime) {
    untimed_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  CUcontext context = nullptr;
  if (driver_.cuCtxGetCurrent) (void)driver_.cuCtxGetCurrent(&context);
  Pair* pair = nullptr;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(free_.rbegin(), free_.rend(),
                           [&](const Pair* p) { return p->context == context; });
    if (it != free_.rend()) {
      pair = *it;
      free_.erase(std::next(it).base());
    } else if (all_.size() < kMaxPairs) {
      try {
        auto made = std::make_unique<Pair>();
        made->context = context;
        free_.reserve(all_.size() + 1);  // so that recycle() never allocates
        pair = made.get();
        all_.push_back(std::move(made));
      } catch (...) {
        pair = nullptr;
      }
    }
  }
  if (!pair) {
    untimed_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  // Made lazily, so that a pair whose start became the anchor gets a new one.
  bool ok = true;
  if (!pair->start) ok = driver_.cuEventCreate(&pair->start, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
  if (ok && !pair->end) ok = driver_.cuEventCreate(&pair->end, CU_EVENT_DEFAULT) == CUDA_SUCCESS;
  pair->host_ns = recorder_.now_ns();
  if (ok) ok = driver_.cuEventRecord(pair->start, stream) == CUDA_SUCCESS;
  if (!ok) {
    abandon(pair);
    return nullptr;
  }
  return pair;
}

void DeviceTimer::finish(Pair* pair, CUstream stream, uint64_t seq) noexcept {
  if (!pair) return;
  if (seq == trace::kNoSeq || driver_.cuEventRecord(pair->end, stream) != CUDA_SUCCESS) {
    abandon(pair);
    return;
  }
  pair->seq = seq;
  std::lock_guard lock(mu_);
  try {
    queued_.push_back(pair);
  } catch (...) {
    untimed_.fetch_add(1, std::memory_order_relaxed);
    recycle(pair);
  }
}

void DeviceTimer::abandon(Pair* pair) noexcept {
  if (!pair) return;
  untimed_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mu_);
  recycle(pair);
}

void DeviceTimer::recycle(Pair* pair) noexcept {
  pair->seq = trace::kNoSeq;
  free_.push_back(pair);  // reserved in start(): free_ never holds more than all_
}

void DeviceTimer::poll(size_t limit) noexcept {
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock) return;
  for (size_t n = 0; n < limit && !queued_.empty(); ++n) {
    Pair* pair = queued_.front();
    const CUresult state = driver_.cuEventQuery(pair->end);
    if (state == CUDA_ERROR_NOT_READY) return;
    queued_.pop_front();
    if (state == CUDA_SUCCESS)
      resolve(*pair);
    else
      untimed_.fetch_add(1, std::memory_order_relaxed);  // the context broke
    recycle(pair);
  }
}

void DeviceTimer::drain() noexcept {
  std::lock_guard lock(mu_);
  while (!queued_.empty()) {
    Pair* pair = queued_.front();
    queued_.pop_front();
    if (driver_.cuEventSynchronize && driver_.cuEventSynchronize(pair->end) == CUDA_SUCCESS)
      resolve(*pair);
    else
      untimed_.fetch_add(1, std::memory_order_relaxed);
    recycle(pair);
  }
}

void DeviceTimer::resolve(Pair& pair) noexcept {
  float ms = 0;
  if (driver_.cuEventElapsedTime(&ms, pair.start, pair.end) != CUDA_SUCCESS) {
    untimed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t duration_ns = ns_from_ms(ms);
  uint64_t start_ns = pair.host_ns;  // without an anchor in its context
  if (!anchor_) {
    // The first start becomes the anchor; the pair makes a new start event
    // when it is next used.
    anchor_ = pair.start;
    anchor_context_ = pair.context;
    anchor_ns_ = pair.host_ns;
    pair.start = nullptr;
  } else if (anchor_context_ == pair.context) {
    float since_ms = 0;
    if (driver_.cuEventElapsedTime(&since_ms, anchor_, pair.start) == CUDA_SUCCESS) {
      const double since_ns = static_cast<double>(since_ms) * 1e6;
      const double at = static_cast<double>(anchor_ns_) + since_ns;
      start_ns = at > 0 ? static_cast<uint64_t>(std::llround(at)) : 0;
      if (since_ms > kAnchorSpanMs) {
        std::swap(anchor_, pair.start);
        anchor_ns_ = start_ns;
      }
    }
  }
  recorder_.record_timing(pair.seq, start_ns, duration_ns);
  timed_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace cuswap::hooks
