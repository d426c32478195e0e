// The Recorder's public methods: open and close around the writer, and the
// record_* path, which encodes each event straight into the calling thread's
// buffer in its final file form (Note [Per-thread buffers] in
// recorder_state.h).
//
// Invariants of the record_* path: noexcept, no allocation after the
// thread's first event, no logging, and no lock but the thread's own slot
// (plus mu when a buffer is full). A dropped event never takes a sequence
// number, so the numbers in a file are dense.
#include "tracer/recorder.h"

#include <unistd.h>

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "tracer/recorder_state.h"

namespace cuswap::trace {

struct Recorder::Impl : detail::RecorderState {};

namespace {

using detail::Buffer;
using detail::ThreadSlot;

// One event being appended to the calling thread's buffer. On construction
// it locks the slot, makes room and writes the event header; the caller
// writes the fields through put_*; the destructor commits and unlocks. When
// the event is dropped, ok() is false and nothing else happens.
class EventWriter {
 public:
  EventWriter(detail::RecorderState& r, EventType type, size_t max_field_bytes) noexcept {
    if (r.stopped.load(std::memory_order_relaxed)) {
      r.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    ThreadSlot* slot = detail::slot_for_this_thread(r);
    if (!slot) {
      r.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    slot->lock();
    Buffer* b = slot->buffer;
    const size_t need = detail::kEventHeaderMaxBytes + max_field_bytes;
    if (!slot->closed && (!b || b->capacity - b->used < need)) b = detail::refill(r, *slot);
    if (slot->closed || !b) {
      slot->unlock();
      r.dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Sequence first, then time: within one thread both increase.
    const uint64_t seq = r.next_seq.fetch_add(1, std::memory_order_relaxed);
    const uint64_t time_ns = detail::monotonic_ns() - r.start_ns;
    uint8_t* p = b->data + b->used;
    *p++ = static_cast<uint8_t>(type);
    p = cst::put_uvarint(p, seq - b->last_seq);
    p = cst::put_svarint(p, static_cast<int64_t>(time_ns - b->last_time_ns));
    b->last_seq = seq;
    b->last_time_ns = time_ns;
    slot_ = slot;
    seq_ = seq;
    buffer_ = b;
    type_ = type;
    out_ = p;
  }

  ~EventWriter() {
    if (!slot_) return;
    buffer_->used = static_cast<uint32_t>(out_ - buffer_->data);
    ++buffer_->events;
    // Extension events are counted only in the total.
    if (static_cast<size_t>(type_) <= kEventTypeCount)
      ++buffer_->events_by_type[static_cast<size_t>(type_) - 1];
    slot_->unlock();
  }

  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  bool ok() const noexcept { return slot_ != nullptr; }
  uint64_t seq() const noexcept { return seq_; }
  void put_u(uint64_t v) noexcept { out_ = cst::put_uvarint(out_, v); }
  void put_s(int64_t v) noexcept { out_ = cst::put_svarint(out_, v); }
  void put_byte(uint8_t v) noexcept { *out_++ = v; }

 private:
  ThreadSlot* slot_ = nullptr;
  uint64_t seq_ = kNoSeq;
  Buffer* buffer_ = nullptr;
  EventType type_ = EventType::alloc;
  uint8_t* out_ = nullptr;
};

// Note [Long buffer lists]: an event must fit in one buffer, so a launch
// keeps at most this many buffer ids and sets kLaunchBuffersTruncated when
// it had more. At the default 64 KiB that is over 6000 ids.
size_t max_launch_ids(size_t buffer_capacity) noexcept {
  return (buffer_capacity - detail::kEventHeaderMaxBytes - detail::kLaunchFixedMaxBytes) /
         cst::kMaxVarintBytes;
}

}  // namespace

Recorder::Recorder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Recorder> Recorder::open(const RecorderOptions& options, std::string& error) {
  try {
    auto impl = std::make_unique<Impl>();
    detail::RecorderState& r = *impl;
    r.uid = detail::next_recorder_uid();
    r.path = options.path;
    r.pid = ::getpid();

    const size_t capacity =
        std::clamp(options.buffer_bytes, detail::kMinBufferBytes, detail::kMaxBufferBytes);
    const size_t count = std::clamp<size_t>(options.max_buffers, 1, detail::kMaxBuffers);
    // Not value-initialised: pages are touched only when a buffer is used.
    r.storage.reset(new uint8_t[capacity * count]);
    r.buffers.resize(count);
    r.free_buffers.reserve(count);
    r.queue.init(count);
    for (size_t i = count; i-- > 0;) {
      r.buffers[i].data = r.storage.get() + i * capacity;
      r.buffers[i].capacity = static_cast<uint32_t>(capacity);
      r.free_buffers.push_back(&r.buffers[i]);
    }

    if (!detail::create_file(r, options, error)) return nullptr;
    if (!detail::start_writer(r, error)) {
      ::close(r.fd);
      return nullptr;
    }
    return std::unique_ptr<Recorder>(new Recorder(std::move(impl)));
  } catch (const std::exception& e) {
    error = fmt::format("{}: cannot start recording: {}", options.path, e.what());
    return nullptr;
  }
}

Recorder::~Recorder() {
  if (!impl_) return;
  if (impl_->in_child.load() || ::getpid() != impl_->pid) {
    (void)impl_.release();  // Note [Fork]: leaked on purpose
    return;
  }
  close();
  // Threads that recorded may still hold their slots (Note [Thread exit]).
  ThreadSlot* s = impl_->slots.load(std::memory_order_acquire);
  while (s) {
    ThreadSlot* next = s->next;
    s->orphaned.store(true, std::memory_order_release);
    detail::release(s);
    s = next;
  }
}

uint32_t Recorder::kernel_id(std::string_view name) noexcept {
  detail::RecorderState& r = *impl_;
  if (r.in_child.load(std::memory_order_relaxed)) return 0;  // names_mu may be held
  try {
    std::lock_guard lock(r.names_mu);
    std::string key(name);
    if (auto it = r.ids.find(key); it != r.ids.end()) return it->second;
    if (r.names.size() >= UINT32_MAX - 1) return 0;
    r.names.push_back(key);
    const auto id = static_cast<uint32_t>(r.names.size());
    r.ids.emplace(std::move(key), id);
    r.kernel_count.store(id, std::memory_order_release);
    return id;
  } catch (...) {
    return 0;  // out of memory: the launch is recorded with the unnamed kernel
  }
}

void Recorder::record_alloc(uint64_t buffer_id, uint64_t address, uint64_t size_bytes,
                            uint64_t stream, int device, AllocKind kind) noexcept {
  EventWriter w(*impl_, EventType::alloc, detail::kAllocMaxBytes);
  if (!w.ok()) return;
  w.put_u(buffer_id);
  w.put_u(address);
  w.put_u(size_bytes);
  w.put_u(stream);
  w.put_s(device);
  w.put_byte(static_cast<uint8_t>(kind));
}

void Recorder::record_free(uint64_t buffer_id, uint64_t stream, FreeKind kind) noexcept {
  EventWriter w(*impl_, EventType::free, detail::kFreeMaxBytes);
  if (!w.ok()) return;
  w.put_u(buffer_id);
  w.put_u(stream);
  w.put_byte(static_cast<uint8_t>(kind));
}

uint64_t Recorder::record_launch(uint32_t kernel_id, uint64_t stream, int device,
                                 std::span<const uint64_t> buffers, uint8_t flags) noexcept {
  detail::RecorderState& r = *impl_;
  // An id the recorder never handed out would make the file unreadable.
  if (kernel_id > r.kernel_count.load(std::memory_order_acquire)) kernel_id = 0;
  const size_t capacity = r.buffers.front().capacity;
  size_t count = buffers.size();
  flags = static_cast<uint8_t>(flags & ~kLaunchBuffersTruncated);
  if (count > max_launch_ids(capacity)) {
    count = max_launch_ids(capacity);
    flags |= kLaunchBuffersTruncated;  // Note [Long buffer lists]
  }
  EventWriter w(r, EventType::launch, detail::kLaunchFixedMaxBytes + count * cst::kMaxVarintBytes);
  if (!w.ok()) return kNoSeq;
  w.put_u(kernel_id);
  w.put_u(stream);
  w.put_s(device);
  w.put_byte(flags);
  w.put_u(count);
  // Buffer ids are handed out in order, so neighbours in a list are close:
  // the first is absolute, the rest are signed deltas.
  uint64_t previous = 0;
  for (size_t i = 0; i < count; ++i) {
    if (i == 0)
      w.put_u(buffers[0]);
    else
      w.put_s(static_cast<int64_t>(buffers[i] - previous));
    previous = buffers[i];
  }
  return w.seq();
}

void Recorder::record_copy(uint64_t dst_buffer, uint64_t src_buffer, uint64_t bytes,
                           CopyDirection direction, uint64_t stream, bool is_set) noexcept {
  EventWriter w(*impl_, EventType::copy, detail::kCopyMaxBytes);
  if (!w.ok()) return;
  w.put_u(dst_buffer);
  w.put_u(src_buffer);
  w.put_u(bytes);
  w.put_byte(static_cast<uint8_t>(direction));
  w.put_u(stream);
  w.put_byte(is_set ? 1 : 0);
}

void Recorder::record_vmm(VmmOp op, uint64_t address, uint64_t size_bytes,
                          uint64_t handle) noexcept {
  EventWriter w(*impl_, EventType::vmm, detail::kVmmMaxBytes);
  if (!w.ok()) return;
  w.put_byte(static_cast<uint8_t>(op));
  w.put_u(address);
  w.put_u(size_bytes);
  w.put_u(handle);
}

void Recorder::record_iteration() noexcept {
  EventWriter w(*impl_, EventType::iteration, 0);
}

void Recorder::record_timing(uint64_t target_seq, uint64_t start_ns,
                             uint64_t duration_ns) noexcept {
  EventWriter w(*impl_, EventType::timing, detail::kTimingMaxBytes);
  if (!w.ok()) return;
  // The target is earlier: its distance back is small where its number is not.
  w.put_u(w.seq() - target_seq);
  w.put_u(start_ns);
  w.put_u(duration_ns);
}

void Recorder::record_eviction(uint64_t buffer_id, uint64_t bytes, EvictReason reason,
                               uint64_t start_ns, uint64_t end_ns) noexcept {
  EventWriter w(*impl_, EventType::eviction, detail::kEvictionMaxBytes);
  if (!w.ok()) return;
  w.put_u(buffer_id);
  w.put_u(bytes);
  w.put_byte(static_cast<uint8_t>(reason));
  w.put_u(start_ns);
  w.put_u(end_ns >= start_ns ? end_ns - start_ns : 0);
}

uint64_t Recorder::record_prefetch(uint64_t buffer_id, uint64_t bytes, PrefetchReason reason,
                                   uint64_t stream) noexcept {
  EventWriter w(*impl_, EventType::prefetch, detail::kPrefetchMaxBytes);
  if (!w.ok()) return kNoSeq;
  w.put_u(buffer_id);
  w.put_u(bytes);
  w.put_byte(static_cast<uint8_t>(reason));
  w.put_u(stream);
  return w.seq();
}

void Recorder::record_wait(uint64_t buffer_id, uint64_t stream) noexcept {
  EventWriter w(*impl_, EventType::wait, detail::kWaitMaxBytes);
  if (!w.ok()) return;
  w.put_u(buffer_id);
  w.put_u(stream);
}

void Recorder::record_iteration_stats(const IterationStats& stats) noexcept {
  uint8_t payload[detail::kIterationStatsMaxBytes];
  uint8_t* p = payload;
  for (uint64_t v : {stats.iteration, stats.prefetches_planned, stats.prefetches_on_demand,
                     stats.late_prefetches, stats.late_ns, stats.evictions, stats.bytes_to_host,
                     stats.bytes_to_device})
    p = cst::put_uvarint(p, v);
  *p++ = stats.followed ? 1 : 0;
  const auto length = static_cast<uint64_t>(p - payload);
  EventWriter w(*impl_, EventType::iteration_stats,
                cst::kMaxVarintBytes + detail::kIterationStatsMaxBytes);
  if (!w.ok()) return;
  w.put_u(length);
  for (const uint8_t* q = payload; q < p; ++q)
    w.put_byte(*q);
}

uint64_t Recorder::now_ns() const noexcept {
  return detail::monotonic_ns() - impl_->start_ns;
}

void Recorder::close(std::span<const Counter> counters) noexcept {
  detail::RecorderState& r = *impl_;
  if (r.in_child.load() || ::getpid() != r.pid) {
    disable_in_child();
    return;
  }
  std::lock_guard close_lock(r.close_mu);
  if (r.closed) return;
  r.closed = true;
  {
    std::lock_guard lock(r.mu);
    r.stopped.store(true);  // under mu: no slot attaches and no wait starts after this
    r.buffer_freed.notify_all();
  }
  // Every slot's buffer goes to the writer; a thread in the middle of an
  // event finishes it first, a thread waiting for a buffer gives up.
  for (ThreadSlot* s = r.slots.load(std::memory_order_acquire); s; s = s->next) {
    s->lock();
    Buffer* b = s->buffer;
    s->buffer = nullptr;
    s->closed = true;
    s->unlock();
    if (!b) continue;
    std::lock_guard lock(r.mu);
    if (b->events)
      r.queue.push(b);
    else
      r.free_buffers.push_back(b);
  }
  detail::stop_writer(r);
  detail::finish_file(r, counters);
}

void Recorder::disable_in_child() noexcept {
  detail::RecorderState& r = *impl_;
  r.stopped.store(true);
  if (::getpid() == r.pid) return;  // not a child after all: just stop recording
  if (!r.in_child.exchange(true) && r.fd >= 0) {
    ::close(r.fd);  // the child's copy; the parent's stays open
    r.fd = -1;
  }
}

uint64_t Recorder::dropped_events() const noexcept {
  return impl_->dropped.load(std::memory_order_relaxed);
}

uint64_t Recorder::buffer_waits() const noexcept {
  return impl_->waits.load(std::memory_order_relaxed);
}

}  // namespace cuswap::trace
