// Where uses are, without an event per launch (Note [Lazy use events] in
// swap_internal.h).
#include "allocator/swap_internal.h"

namespace cuswap {
namespace {

// Calls `f` with each stream entry of `dev` whose work up to `point.seq`
// the point names; stops at the first false.
template <typename F>
bool each_stream(Allocator::Device& dev, const UsePoint& point, F&& f) {
  for (StreamUses& uses : dev.streams) {
    if (uses.first_seq > point.seq) continue;  // no work of its own before the point
    bool named = point.all_streams;
    for (uint8_t i = 0; i < point.count && !named; ++i)
      named = point.streams[i] == uses.stream;
    if (named && !f(uses)) return false;
  }
  return true;
}

// `uses`' work up to `at` is known done: every later point passes it over,
// and its cover goes if that is the event that said so.
void known_done_to(StreamUses& uses, uint64_t at) {
  uses.done_below = std::max(uses.done_below, at + 1);
  if (uses.cover_seq == at) uses.cover.reset();
}

// The latest of `uses`' work that `seq` covers.
uint64_t needed(const StreamUses& uses, uint64_t seq) {
  return std::min(seq, uses.last_seq);
}

}  // namespace

StreamUses* Allocator::stream_uses(Device& dev, CUstream stream) noexcept {
  for (StreamUses& uses : dev.streams)
    if (uses.stream == stream) return &uses;
  try {
    StreamUses& added = dev.streams.emplace_back();
    added.stream = stream;
    added.first_seq = added.last_seq = use_seq_;
    return &added;
  } catch (...) {
    return nullptr;
  }
}

EventRef Allocator::cover(Device& dev, StreamUses& uses, uint64_t seq, uint64_t* at) noexcept {
  const uint64_t need = needed(uses, seq);
  // The earliest event that follows the use: a mark, or the cover.
  const EventRef* best = uses.cover && uses.cover_seq >= need ? &uses.cover : nullptr;
  uint64_t best_seq = best ? uses.cover_seq : 0;
  for (const UseMark& mark : uses.marks)
    if (mark.event && mark.seq >= need && (!best || mark.seq < best_seq)) {
      best = &mark.event;
      best_seq = mark.seq;
    }
  if (best) {
    if (at) *at = best_seq;
    return *best;
  }
  EventRef event = record_event(dev, uses.stream);
  if (!event) return {};
  uses.cover = event;
  uses.cover_seq = use_seq_;
  if (at) *at = use_seq_;
  return event;
}

void Allocator::mark(Device& dev, StreamUses& uses) noexcept {
  uses.mark_due = use_seq_ + kMarkEvery;
  EventRef event = record_event(dev, uses.stream);
  if (!event) return;  // the cover answers, later
  UseMark& slot = uses.marks[uses.next_mark];
  uses.next_mark = static_cast<uint8_t>((uses.next_mark + 1) % kMarks);
  slot.event = std::move(event);
  slot.seq = use_seq_;
}

CUresult Allocator::order_after(Device& dev, const UsePoint& point, CUstream on) noexcept {
  if (point.empty()) return CUDA_SUCCESS;
  CUresult result = CUDA_SUCCESS;
  each_stream(dev, point, [&](StreamUses& uses) {
    if (uses.stream == on || needed(uses, point.seq) < uses.done_below) return true;
    uint64_t at = 0;
    EventRef event = cover(dev, uses, point.seq, &at);
    if (!event) {
      // No event to order by: wait for the stream instead.
      (void)calls_.cuStreamSynchronize(uses.stream);
      uses.done_below = std::max(uses.done_below, use_seq_ + 1);
      return true;
    }
    // Note [Idle streams]: a stream with no use since its event (a setup
    // copy on the legacy stream, a side stream gone quiet) is asked once,
    // and once done every later point passes it over. Before, the first
    // use of memory freed synchronously (which waits for every stream)
    // queued a wait on that event each time: on ResNet-50 under its 1x
    // peak, sync path, 663 waits a step for a memset made at start-up, and
    // 17.78 ms a step where the stream path took 16.83.
    const bool idle = uses.last_seq <= at;
    if (event.known_done() || (idle && event.done())) {
      known_done_to(uses, at);
      return true;
    }
    result = calls_.cuStreamWaitEvent(on, event.event());
    return result == CUDA_SUCCESS;
  });
  return result;
}

bool Allocator::point_done(Device& dev, const UsePoint& point, bool ask) noexcept {
  if (point.empty()) return true;
  return each_stream(dev, point, [&](StreamUses& uses) {
    if (needed(uses, point.seq) < uses.done_below) return true;
    if (!ask) return false;
    uint64_t at = 0;
    EventRef event = cover(dev, uses, point.seq, &at);
    if (!event) return false;
    if (!event.done()) return false;
    known_done_to(uses, at);
    return true;
  });
}

void Allocator::synchronize_point(Device& dev, const UsePoint& point) noexcept {
  if (point.empty()) return;
  each_stream(dev, point, [&](StreamUses& uses) {
    if (needed(uses, point.seq) < uses.done_below) return true;
    uint64_t at = use_seq_;
    EventRef event = cover(dev, uses, point.seq, &at);
    if (event)
      event.synchronize();
    else
      (void)calls_.cuStreamSynchronize(uses.stream);
    uses.done_below = std::max(uses.done_below, at + 1);
    return true;
  });
}

}  // namespace cuswap
