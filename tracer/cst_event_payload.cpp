// The payload decoders, one per event type (cst_event_payload.h). Every
// failure names the first byte that cannot be decoded (Note [Error offsets]
// in cst_reader.cpp). `lax` is PayloadContext::lenient: an enum value this
// reader does not know is kept as it is rather than refused.
#include "tracer/cst_event_payload.h"

#include <utility>

#include <fmt/format.h>

namespace cuswap::trace::cst {
namespace {

bool alloc_payload(Cursor& c, bool lax, Event& e) {
  AllocEvent a;
  if (!c.uvarint(a.buffer_id, "a buffer id") || !c.uvarint(a.address, "an address") ||
      !c.uvarint(a.size_bytes, "a size") || !c.uvarint(a.stream, "a stream") ||
      !c.int32(a.device, "a device ordinal") ||
      !enum_value(c, a.kind, static_cast<uint8_t>(AllocKind::pluggable), lax,
                  "an allocation kind"))
    return false;
  e.data = a;
  return true;
}

bool free_payload(Cursor& c, bool lax, Event& e) {
  FreeEvent f;
  if (!c.uvarint(f.buffer_id, "a buffer id") || !c.uvarint(f.stream, "a stream") ||
      !enum_value(c, f.kind, static_cast<uint8_t>(FreeKind::async), lax, "a free kind"))
    return false;
  e.data = f;
  return true;
}

// The first buffer id is absolute and the rest signed deltas: the recorder
// hands ids out in order, so neighbours in a list are close (recorder.cpp).
bool launch_payload(Cursor& c, size_t kernel_names, Event& e) {
  LaunchEvent l;
  uint64_t kernel = 0, count = 0;
  const uint64_t kernel_at = c.offset();
  if (!c.uvarint(kernel, "a kernel id")) return false;
  if (kernel >= kernel_names)
    return c.fail(kernel_at, fmt::format("expected a kernel id defined earlier in the file "
                                         "(0..{}), found {}",
                                         kernel_names - 1, kernel));
  l.kernel_id = static_cast<uint32_t>(kernel);
  if (!c.uvarint(l.stream, "a stream") || !c.int32(l.device, "a device ordinal") ||
      !c.byte(l.flags, "launch flags") || !c.uvarint(count, "a buffer count"))
    return false;
  if (count > c.left())
    return c.fail(c.offset(), fmt::format("expected at most {} buffer ids, found a count of {}",
                                          c.left(), count));
  l.buffers.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (i == 0) {
      if (!c.uvarint(l.buffers[0], "a buffer id")) return false;
    } else {
      int64_t delta = 0;
      if (!c.svarint(delta, "a buffer id delta")) return false;
      l.buffers[i] = l.buffers[i - 1] + static_cast<uint64_t>(delta);
    }
  }
  e.data = std::move(l);
  return true;
}

bool copy_payload(Cursor& c, bool lax, Event& e) {
  CopyEvent k;
  uint8_t is_set = 0;
  if (!c.uvarint(k.dst_buffer, "a destination buffer") ||
      !c.uvarint(k.src_buffer, "a source buffer") || !c.uvarint(k.bytes, "a byte count") ||
      !enum_value(c, k.direction, static_cast<uint8_t>(CopyDirection::unknown), lax,
                  "a copy direction") ||
      !c.uvarint(k.stream, "a stream"))
    return false;
  const uint64_t set_at = c.offset();
  if (!c.byte(is_set, "the set flag")) return false;
  if (is_set > 1)
    return c.fail(set_at, fmt::format("expected a set flag 0 or 1, found {}", is_set));
  k.is_set = is_set == 1;
  e.data = k;
  return true;
}

bool vmm_payload(Cursor& c, bool lax, Event& e) {
  VmmEvent v;
  if (!enum_value(c, v.op, static_cast<uint8_t>(VmmOp::release), lax, "a vmm operation") ||
      !c.uvarint(v.address, "an address") || !c.uvarint(v.size_bytes, "a size") ||
      !c.uvarint(v.handle, "a handle"))
    return false;
  e.data = v;
  return true;
}

// A timing names its target by how many sequence numbers back it is, so the
// target must be an earlier event (the reader checks later that it is a
// launch or a prefetch, once every event is read).
bool timing_payload(Cursor& c, Event& e) {
  TimingEvent t;
  uint64_t back = 0;
  const uint64_t back_at = c.offset();
  if (!c.uvarint(back, "a timing's target distance")) return false;
  if (back == 0 || back > e.seq)
    return c.fail(back_at, fmt::format("expected a timing of an earlier event (1..{} back), "
                                       "found {} back",
                                       e.seq, back));
  t.target_seq = e.seq - back;
  if (!c.uvarint(t.start_ns, "a device start time") ||
      !c.uvarint(t.duration_ns, "a device duration"))
    return false;
  e.data = t;
  return true;
}

bool eviction_payload(Cursor& c, bool lax, Event& e) {
  EvictionEvent v;
  if (!c.uvarint(v.buffer_id, "a buffer id") || !c.uvarint(v.bytes, "a byte count") ||
      !enum_value(c, v.reason, static_cast<uint8_t>(EvictReason::plan), lax,
                  "an eviction reason") ||
      !c.uvarint(v.start_ns, "the eviction's start") ||
      !c.uvarint(v.duration_ns, "the eviction's duration"))
    return false;
  e.data = v;
  return true;
}

bool prefetch_payload(Cursor& c, bool lax, Event& e) {
  PrefetchEvent p;
  if (!c.uvarint(p.buffer_id, "a buffer id") || !c.uvarint(p.bytes, "a byte count") ||
      !enum_value(c, p.reason, static_cast<uint8_t>(PrefetchReason::unseen_use), lax,
                  "a prefetch reason") ||
      !c.uvarint(p.stream, "a stream"))
    return false;
  e.data = p;
  return true;
}

bool wait_payload(Cursor& c, Event& e) {
  WaitEvent w;
  if (!c.uvarint(w.buffer_id, "a buffer id") || !c.uvarint(w.stream, "a stream")) return false;
  e.data = w;
  return true;
}

// Length first, as for every extension event: fields a later minor appends
// are skipped.
bool iteration_stats_payload(Cursor& c, Event& e) {
  uint64_t bytes = 0;
  if (!c.uvarint(bytes, "an extension event's length")) return false;
  const uint64_t start = c.offset();
  if (bytes > c.left())
    return c.fail(start, fmt::format("expected an iteration_stats event of {} bytes, found {} "
                                     "left",
                                     bytes, c.left()));
  IterationStatsEvent s;
  uint8_t followed = 0;
  for (uint64_t* field :
       {&s.iteration, &s.prefetches_planned, &s.prefetches_on_demand, &s.late_prefetches,
        &s.late_ns, &s.evictions, &s.bytes_to_host, &s.bytes_to_device})
    if (!c.uvarint(*field, "an iteration_stats field")) return false;
  const uint64_t followed_at = c.offset();
  if (!c.byte(followed, "the followed flag")) return false;
  if (followed > 1)
    return c.fail(followed_at, fmt::format("expected a followed flag 0 or 1, found {}", followed));
  s.followed = followed == 1;
  const uint64_t used = c.offset() - start;
  if (used > bytes)
    return c.fail(start, fmt::format("expected an iteration_stats event within its length of "
                                     "{} bytes, its fields take {}",
                                     bytes, used));
  if (!c.skip(bytes - used, "the rest of an iteration_stats event")) return false;
  e.data = s;
  return true;
}

// A type this reader does not know: an error, unless it is an extension
// event of a newer minor version, which is skipped by its length.
PayloadKind unknown_payload(Cursor& c, uint8_t type, const PayloadContext& context,
                            uint64_t event_offset) {
  if (type < kFirstExtensionEventType || !context.lenient) {
    (void)c.fail(event_offset, fmt::format("expected an event type (1..{}), found {}",
                                           context.event_types, type));
    return PayloadKind::failed;
  }
  uint64_t bytes = 0;
  if (!c.uvarint(bytes, "an extension event's length") || !c.skip(bytes, "an extension event"))
    return PayloadKind::failed;
  return PayloadKind::skipped;
}

PayloadKind core(bool read) { return read ? PayloadKind::core : PayloadKind::failed; }

}  // namespace

PayloadKind read_event_payload(Cursor& c, uint8_t type, const PayloadContext& context,
                               Event& e) {
  const bool lax = context.lenient;
  // A 1.x file has only the first six types.
  switch (type > context.event_types && type < kFirstExtensionEventType ? 0 : type) {
    case static_cast<uint8_t>(EventType::alloc):
      return core(alloc_payload(c, lax, e));
    case static_cast<uint8_t>(EventType::free):
      return core(free_payload(c, lax, e));
    case static_cast<uint8_t>(EventType::launch):
      return core(launch_payload(c, context.kernel_names, e));
    case static_cast<uint8_t>(EventType::copy):
      return core(copy_payload(c, lax, e));
    case static_cast<uint8_t>(EventType::vmm):
      return core(vmm_payload(c, lax, e));
    case static_cast<uint8_t>(EventType::iteration):
      e.data = IterationEvent{};
      return PayloadKind::core;
    case static_cast<uint8_t>(EventType::timing):
      return core(timing_payload(c, e));
    case static_cast<uint8_t>(EventType::eviction):
      return core(eviction_payload(c, lax, e));
    case static_cast<uint8_t>(EventType::prefetch):
      return core(prefetch_payload(c, lax, e));
    case static_cast<uint8_t>(EventType::wait):
      return core(wait_payload(c, e));
    case static_cast<uint8_t>(EventType::iteration_stats):
      return iteration_stats_payload(c, e) ? PayloadKind::extension : PayloadKind::failed;
    default:
      return unknown_payload(c, type, context, e.offset);
  }
}

}  // namespace cuswap::trace::cst
