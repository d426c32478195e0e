// simcuda: streams, events, workers and the virtual timeline.
//
// Each stream has a worker thread that runs its ops in order. See Note [Virtual
// time is placed in enqueue order] and Note [Hazards by vector clocks] in
// sim.h for how ops get their times and clocks.
//
// The NULL stream is the legacy default stream: work on it waits for all
// earlier work on the context's blocking streams, and work on a blocking
// stream waits for earlier work on it. Per-thread default streams (the
// `_ptsz`/`_ptds` entry points with stream 0, or CU_STREAM_PER_THREAD) are
// blocking streams of their own. cuStreamDestroy waits for the stream's work
// to finish (the real one returns at once and releases it later).
#include <signal.h>

#include <algorithm>

#include "tests/simcuda/sim.h"

namespace simcuda {
namespace {

void join(VectorClock& into, const VectorClock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i)
    into[i] = std::max(into[i], from[i]);
}

// The calling thread waited until `to_ns`.
void advance_host(uint64_t to_ns) {
  uint64_t& now = host_clock();
  if (to_ns > now) {
    state().host_wait_ns += to_ns - now;
    now = to_ns;
  }
}

// The host has now seen `c` complete.
void observe(const Completion& c) {
  State& s = state();
  advance_host(c.end_ns);
  join(s.host_vc, c.vc);
}

double bandwidth_gbps(const Op& op) {
  const Config& c = *state().config;
  switch (op.direction) {
    case Op::Direction::h2d:
    case Op::Direction::h2h:
      return c.h2d_gbps;
    case Op::Direction::d2h:
    case Op::Direction::peer:
      return c.d2h_gbps;
    case Op::Direction::d2d:
      return c.d2d_gbps;
  }
  return c.d2d_gbps;
}

uint64_t transfer_ns(const Op& op) {
  const Config& c = *state().config;
  double seconds = static_cast<double>(op.copy_bytes) / (bandwidth_gbps(op) * 1e9);
  return static_cast<uint64_t>(seconds * 1e9 + 0.5) + ns_from_us(c.copy_latency_us);
}

void count_bytes(DeviceStats& stats, const Op& op) {
  switch (op.direction) {
    case Op::Direction::h2d:
      stats.h2d_bytes += op.copy_bytes;
      break;
    case Op::Direction::d2h:
      stats.d2h_bytes += op.copy_bytes;
      break;
    case Op::Direction::d2d:
    case Op::Direction::peer:
      stats.d2d_bytes += op.copy_bytes;
      break;
    case Op::Direction::h2h:
      break;
  }
}

// Gives `op` its place on the virtual timeline; requires mu and that every op
// with a smaller seq is placed.
void place(Op& op, uint64_t kernel_ns, bool ran, bool faulted) {
  State& s = state();
  Stream* stream = op.stream;
  Device& device = s.devices[static_cast<size_t>(op.ctx->device)];
  uint64_t own_ready = std::max(op.host_ready_ns, stream->last_end_ns);
  uint64_t ready = own_ready;
  for (const CompletionPtr& w : op.waits)
    ready = std::max(ready, w->end_ns);
  stream->stall_carry_ns += ready - own_ready;

  uint64_t duration = 0;
  if (ran) {
    if (op.kind == OpKind::kernel) duration = kernel_ns;
    if (op.kind == OpKind::copy || op.kind == OpKind::set) duration = transfer_ns(op);
  }
  uint64_t start = ready;
  if (op.engine != Engine::none)
    start = device.engines[static_cast<int>(op.engine)].place(ready, duration, op.host_ready_ns);
  uint64_t end = start + duration;

  if (op.engine == Engine::compute) {
    device.stats.stall_ns += stream->stall_carry_ns;
    stream->stall_carry_ns = 0;
  } else if (op.engine != Engine::none) {
    stream->stall_carry_ns = 0;  // copies waiting on compute are not stalls
  }
  bool completed = ran && !faulted;
  if (completed && op.kind == OpKind::kernel) ++device.stats.kernels;
  if (completed && (op.kind == OpKind::copy || op.kind == OpKind::set)) {
    ++device.stats.copies;
    if (op.kind == OpKind::copy) count_bytes(device.stats, op);
  }

  op.completion->end_ns = end;
  op.completion->failed = !ran || faulted;
  op.completion->done = true;
  stream->last_end_ns = end;
  s.max_end_ns = std::max(s.max_end_ns, end);
}

void worker_main(Stream* stream) {
  State& s = state();
  std::unique_lock lock(s.mu);
  for (;;) {
    stream->cv.wait(lock, [&] { return !stream->queue.empty() || stream->stopping; });
    if (stream->queue.empty()) return;
    OpPtr op = stream->queue.front();  // stays queued until done: see check_release
    s.done_cv.wait(lock, [&] {
      return std::all_of(op->waits.begin(), op->waits.end(),
                         [](const CompletionPtr& w) { return w->done; });
    });
    bool ran = op->ctx->sticky == CUDA_SUCCESS;
    bool faulted = false;
    uintptr_t fault_address = 0;
    uint64_t kernel_ns = 0;
    if (ran) {
      switch (op->kind) {
        case OpKind::kernel:
        case OpKind::copy:
        case OpKind::set:
          for (const Range& r : op->ranges)
            record_access(*op, r);
          lock.unlock();
          kernel_ns = run_op_body(*op, faulted, fault_address);
          lock.lock();
          break;
        case OpKind::free_async:
          record_access(*op, op->ranges.front());
          finish_free_async(*op);
          break;
        case OpKind::record:
        case OpKind::wait:
          break;
      }
    } else if (op->kind == OpKind::free_async) {
      finish_free_async(*op);  // the memory goes even when the context is broken
    }
    if (faulted) {
      op->ctx->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
      ++s.devices[static_cast<size_t>(op->ctx->device)].stats.faults;
      s.last_fault = fault_address;
    }
    s.done_cv.wait(lock, [&] { return s.next_to_place == op->seq; });
    place(*op, kernel_ns, ran, faulted);
    ++s.next_to_place;
    stream->queue.pop_front();
    s.done_cv.notify_all();
  }
}

Stream* legacy_stream(Context* ctx) {
  if (!ctx->legacy) ctx->legacy = create_stream(ctx, 0, /*legacy=*/true, /*per_thread=*/false);
  return ctx->legacy;
}

Stream* per_thread_stream(Context* ctx) {
  Stream*& stream = ctx->per_thread[std::this_thread::get_id()];
  if (!stream) stream = create_stream(ctx, 0, /*legacy=*/false, /*per_thread=*/true);
  return stream;
}

CUresult resolve_event(CUevent handle, Event*& out) {
  if (!handle || !state().events.count(handle)) return CUDA_ERROR_INVALID_HANDLE;
  out = handle;
  return CUDA_SUCCESS;
}

CUresult record_event(CUevent hEvent, CUstream hStream, unsigned flags, DefaultStream ds) {
  if (flags != CU_EVENT_RECORD_DEFAULT && flags != CU_EVENT_RECORD_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(state().mu);
  Event* event = nullptr;
  if (CUresult r = resolve_event(hEvent, event); r != CUDA_SUCCESS) return r;
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  if (stream->ctx != event->ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  auto op = std::make_shared<Op>();
  op->kind = OpKind::record;
  enqueue(lock, stream, op);
  event->recorded = op->completion;
  return CUDA_SUCCESS;
}

CUresult wait_event(CUstream hStream, CUevent hEvent, unsigned flags, DefaultStream ds) {
  if (flags != CU_EVENT_WAIT_DEFAULT && flags != CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(state().mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  Event* event = nullptr;
  if (CUresult r = resolve_event(hEvent, event); r != CUDA_SUCCESS) return r;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  if (!event->recorded) return CUDA_SUCCESS;  // waiting on a never-recorded event is a no-op
  auto op = std::make_shared<Op>();
  op->kind = OpKind::wait;
  op->waits.push_back(event->recorded);
  enqueue(lock, stream, op);
  return CUDA_SUCCESS;
}

CUresult query_stream(CUstream hStream, DefaultStream ds) {
  std::unique_lock lock(state().mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  if (!stream->last) return CUDA_SUCCESS;
  if (CUresult r = query(lock, stream->last); r != CUDA_SUCCESS) return r;
  return stream->ctx->sticky;
}

CUresult synchronize_stream(CUstream hStream, DefaultStream ds) {
  State& s = state();
  std::unique_lock lock(s.mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  charge_call(s.config->costs.sync_us);
  count_host_sync();
  if (stream->last) host_wait(lock, stream->last);
  return stream->ctx->sticky;
}

CUresult stream_ctx(CUstream hStream, DefaultStream ds, Context*& ctx) {
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  ctx = stream->ctx;
  return CUDA_SUCCESS;
}

CUresult get_ctx(CUstream hStream, CUcontext* pctx, DefaultStream ds) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Context* ctx = nullptr;
  if (CUresult r = stream_ctx(hStream, ds, ctx); r != CUDA_SUCCESS) return r;
  *pctx = ctx;
  return CUDA_SUCCESS;
}

CUresult get_device(CUstream hStream, CUdevice* device, DefaultStream ds) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Context* ctx = nullptr;
  if (CUresult r = stream_ctx(hStream, ds, ctx); r != CUDA_SUCCESS) return r;
  *device = ctx->device;
  return CUDA_SUCCESS;
}

CUresult get_flags(CUstream hStream, unsigned int* flags, DefaultStream ds) {
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Stream* stream = nullptr;
  if (CUresult r = resolve_stream(hStream, ds, stream); r != CUDA_SUCCESS) return r;
  *flags = stream->flags;
  return CUDA_SUCCESS;
}

CUresult create(CUstream* phStream, unsigned int flags) {
  if (!phStream || (flags & ~static_cast<unsigned>(CU_STREAM_NON_BLOCKING)))
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(state().mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  *phStream = create_stream(ctx, flags, false, false);
  return CUDA_SUCCESS;
}

CUresult elapsed_time(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(state().mu);
  Event *start = nullptr, *end = nullptr;
  if (CUresult r = resolve_event(hStart, start); r != CUDA_SUCCESS) return r;
  if (CUresult r = resolve_event(hEnd, end); r != CUDA_SUCCESS) return r;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
  for (Event* e : {start, end})
    if (CUresult r = query(lock, e->recorded); r != CUDA_SUCCESS) return r;
  double ns =
      static_cast<double>(end->recorded->end_ns) - static_cast<double>(start->recorded->end_ns);
  *pMilliseconds = static_cast<float>(ns / 1e6);
  return CUDA_SUCCESS;
}

}  // namespace

uint64_t Timeline::place(uint64_t ready, uint64_t duration, uint64_t horizon) {
  while (!busy.empty() && busy.begin()->second <= horizon)
    busy.erase(busy.begin());
  if (duration == 0) return ready;
  uint64_t start = ready;
  auto it = busy.upper_bound(start);
  if (it != busy.begin()) start = std::max(start, std::prev(it)->second);
  for (; it != busy.end() && it->first < start + duration; ++it)
    start = std::max(start, it->second);
  uint64_t end = start + duration;
  auto next = busy.lower_bound(start);
  if (next != busy.end() && next->first == end) {
    end = next->second;
    next = busy.erase(next);
  }
  if (next != busy.begin()) {
    auto prev = std::prev(next);
    if (prev->second == start) {
      prev->second = end;
      return start;
    }
  }
  busy.emplace(start, end);
  return start;
}

CUresult resolve_stream(CUstream handle, DefaultStream default_stream, Stream*& out) {
  State& s = state();
  if (handle == nullptr || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
    Context* ctx = current_context();
    if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
    bool per_thread = handle == CU_STREAM_PER_THREAD ||
                      (handle == nullptr && default_stream == DefaultStream::per_thread);
    out = per_thread ? per_thread_stream(ctx) : legacy_stream(ctx);
    return CUDA_SUCCESS;
  }
  if (!s.streams.count(handle)) return CUDA_ERROR_INVALID_HANDLE;
  out = handle;
  return CUDA_SUCCESS;
}

Stream* create_stream(Context* ctx, unsigned flags, bool legacy, bool per_thread) {
  State& s = state();
  auto owned = std::make_unique<Stream>();
  Stream* stream = owned.get();
  stream->index = s.next_stream_index++;
  stream->ctx = ctx;
  stream->flags = flags;
  stream->legacy = legacy;
  stream->per_thread = per_thread;
  // Workers take no asynchronous signals; faults stay deliverable so guarded
  // kernels and copies can be caught.
  sigset_t all, previous;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  stream->worker = std::thread(worker_main, stream);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  s.streams.insert(stream);
  s.all_streams.push_back(std::move(owned));
  return stream;
}

// Note [A stream's queue is finite]: a GPU takes about a thousand
// operations ahead on one stream; the next launch blocks its thread until
// the oldest ends (measured: launches of 4-5 us until about 1000 kernels
// are queued, then one per kernel's run, each stream apart: "CUDA stream is
// blocked when launching many kernels (>1000)", Stack Overflow 53970187).
// So a host can run at most `queue_depth` operations ahead of the device on
// a stream; without the limit a program of many short kernels behind a slow
// copy would have its host run ahead without end, deciding what to evict
// and fetch from a future no GPU lets it reach. (The PyTorch transformer
// snapshot under 60% of its peak without a plan: 63.9 ms a step with the
// host unbounded, 70.6 held to 1024; ResNet-50's calibration runs never
// queue 1024 on a stream, and are unchanged.)
void wait_for_room(std::unique_lock<std::mutex>& lock, Stream* stream) {
  State& s = state();
  const uint64_t depth = s.config->queue_depth;
  std::deque<CompletionPtr>& queued = stream->queued;
  if (depth == 0) return;  // nothing is kept in `queued` then
  while (queued.size() >= depth) {
    CompletionPtr oldest = queued.front();
    if (!oldest->done) {
      s.done_cv.wait(lock, [&] { return oldest->done; });
      continue;  // another thread may have taken it meanwhile
    }
    // Ops on one stream end in order: while the oldest has not ended by the
    // host's clock, all `depth` are queued, and the host waits for it.
    if (oldest->end_ns > host_clock()) observe(*oldest);
    queued.pop_front();
  }
}

void enqueue(std::unique_lock<std::mutex>& lock, Stream* stream, OpPtr op) {
  State& s = state();
  wait_for_room(lock, stream);
  Context* ctx = stream->ctx;
  op->stream = stream;
  op->ctx = ctx;
  op->seq = s.next_seq++;
  advance_host_clock(enqueue_cost_us(op->kind));
  op->host_ready_ns = host_clock();
  switch (op->kind) {
    case OpKind::kernel:
    case OpKind::set:
      op->engine = Engine::compute;
      break;
    case OpKind::copy:
      switch (op->direction) {
        case Op::Direction::d2h:
        case Op::Direction::peer:
          op->engine = Engine::d2h;
          break;
        case Op::Direction::d2d:
          op->engine = Engine::compute;
          break;
        case Op::Direction::h2d:
        case Op::Direction::h2h:
          op->engine = Engine::h2d;
          break;
      }
      break;
    default:
      op->engine = Engine::none;
      break;
  }
  // Implicit synchronisation with the legacy default stream.
  if (stream->legacy) {
    for (Stream* other : s.streams)
      if (other != stream && other->ctx == ctx && other->blocking() && other->last)
        op->waits.push_back(other->last);
  } else if (stream->blocking() && ctx->legacy && ctx->legacy->last) {
    op->waits.push_back(ctx->legacy->last);
  }
  VectorClock vc = stream->vc;
  join(vc, s.host_vc);
  for (const CompletionPtr& w : op->waits)
    join(vc, w->vc);
  if (vc.size() <= static_cast<size_t>(stream->index))
    vc.resize(static_cast<size_t>(stream->index) + 1, 0);
  ++vc[static_cast<size_t>(stream->index)];
  auto completion = std::make_shared<Completion>();
  completion->stream = stream->index;
  completion->epoch = vc[static_cast<size_t>(stream->index)];
  completion->vc = vc;
  stream->vc = std::move(vc);
  stream->last = completion;
  if (s.config->queue_depth > 0) stream->queued.push_back(completion);
  op->completion = std::move(completion);
  stream->queue.push_back(std::move(op));
  stream->cv.notify_one();
}

void host_wait(std::unique_lock<std::mutex>& lock, const CompletionPtr& completion) {
  state().done_cv.wait(lock, [&] { return completion->done; });
  observe(*completion);
}

// Note [Queries answer in virtual time]: an op is done for the host once the
// host's clock has reached its virtual end, not when its worker happens to
// have run it. A query waits (in real time only) for the op to be placed,
// then answers from the two clocks: done, and seen by the host, if it ended
// by the host's clock; else not ready, and the host's clock moves on by the
// cost of one query, so a loop that polls gets there. Answering from the
// workers' progress made queries depend on thread timing, and made a done
// answer move the host's clock to the op's end: a query became a wait.
CUresult query(std::unique_lock<std::mutex>& lock, const CompletionPtr& completion) {
  State& s = state();
  s.done_cv.wait(lock, [&] { return completion->done; });
  // Every query is a call (an unanswered one also under host_costs:false,
  // so that a polling loop gets there).
  const bool ready = completion->end_ns <= host_clock();
  if (s.config->host_costs || !ready) advance_host_clock(s.config->costs.query_cost_us);
  if (!ready) return CUDA_ERROR_NOT_READY;
  observe(*completion);
  return CUDA_SUCCESS;
}

void wait_all(std::unique_lock<std::mutex>& lock, Context* ctx) {
  State& s = state();
  uint64_t target = s.next_seq;
  s.done_cv.wait(lock, [&] { return s.next_to_place >= target; });
  for (Stream* stream : s.streams)
    if ((!ctx || stream->ctx == ctx) && stream->last) observe(*stream->last);
}

void stop_stream(std::unique_lock<std::mutex>& lock, Stream* stream) {
  State& s = state();
  // Unreachable before the lock is released, so nothing is enqueued on a
  // stream whose worker is leaving.
  s.streams.erase(stream);
  Context* ctx = stream->ctx;
  if (ctx->legacy == stream) ctx->legacy = nullptr;
  for (auto it = ctx->per_thread.begin(); it != ctx->per_thread.end();)
    it = it->second == stream ? ctx->per_thread.erase(it) : std::next(it);
  stream->stopping = true;
  stream->cv.notify_one();
  std::thread worker = std::move(stream->worker);
  lock.unlock();
  if (worker.joinable()) worker.join();
  lock.lock();
  if (stream->last) observe(*stream->last);
}

void destroy_context_streams(std::unique_lock<std::mutex>& lock, Context* ctx) {
  State& s = state();
  std::vector<Stream*> owned;
  for (Stream* stream : s.streams)
    if (stream->ctx == ctx) owned.push_back(stream);
  for (Stream* stream : owned)
    stop_stream(lock, stream);
}

bool happens_before(const Completion& a, const Completion& b) {
  auto i = static_cast<size_t>(a.stream);
  return i < b.vc.size() && b.vc[i] >= a.epoch;
}

bool host_has_seen(const Completion& op) {
  const VectorClock& host = state().host_vc;
  auto i = static_cast<size_t>(op.stream);
  return i < host.size() && host[i] >= op.epoch;
}

}  // namespace simcuda

using namespace simcuda;

extern "C" {

CUresult CUDAAPI cuStreamCreate(CUstream* phStream, unsigned int Flags) {
  SIM_ENTER();
  return create(phStream, Flags);
}

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream* phStream, unsigned int flags, int priority) {
  SIM_ENTER();
  (void)priority;  // priorities are not simulated
  return create(phStream, flags);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream) {
  SIM_ENTER();
  State& s = state();
  std::unique_lock lock(s.mu);
  if (!hStream || !s.streams.count(hStream) || hStream->legacy || hStream->per_thread)
    return CUDA_ERROR_INVALID_HANDLE;
  stop_stream(lock, hStream);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  SIM_ENTER();
  return query_stream(hStream, DefaultStream::legacy);
}

CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream) {
  SIM_ENTER();
  return query_stream(hStream, DefaultStream::per_thread);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  SIM_ENTER();
  return synchronize_stream(hStream, DefaultStream::legacy);
}

CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream) {
  SIM_ENTER();
  return synchronize_stream(hStream, DefaultStream::per_thread);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  SIM_ENTER();
  return wait_event(hStream, hEvent, Flags, DefaultStream::legacy);
}

CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags) {
  SIM_ENTER();
  return wait_event(hStream, hEvent, Flags, DefaultStream::per_thread);
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext* pctx) {
  SIM_ENTER();
  return get_ctx(hStream, pctx, DefaultStream::legacy);
}

CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx) {
  SIM_ENTER();
  return get_ctx(hStream, pctx, DefaultStream::per_thread);
}

CUresult CUDAAPI cuStreamGetDevice(CUstream hStream, CUdevice* device) {
  SIM_ENTER();
  return get_device(hStream, device, DefaultStream::legacy);
}

CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device) {
  SIM_ENTER();
  return get_device(hStream, device, DefaultStream::per_thread);
}

CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int* flags) {
  SIM_ENTER();
  return get_flags(hStream, flags, DefaultStream::legacy);
}

CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream hStream, unsigned int* flags) {
  SIM_ENTER();
  return get_flags(hStream, flags, DefaultStream::per_thread);
}

// ---------------------------------------------------------------------------
// Events

CUresult CUDAAPI cuEventCreate(CUevent* phEvent, unsigned int Flags) {
  SIM_ENTER();
  if (!phEvent || (Flags & ~0x7u)) return CUDA_ERROR_INVALID_VALUE;
  if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_VALUE;
  State& s = state();
  std::lock_guard lock(s.mu);
  Context* ctx = nullptr;
  if (CUresult r = usable_context(ctx); r != CUDA_SUCCESS) return r;
  auto event = std::make_unique<Event>();
  event->ctx = ctx;
  event->flags = Flags;
  *phEvent = event.get();
  s.events.insert(event.get());
  s.all_events.push_back(std::move(event));
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent) {
  SIM_ENTER();
  std::lock_guard lock(state().mu);
  Event* event = nullptr;
  if (CUresult r = resolve_event(hEvent, event); r != CUDA_SUCCESS) return r;
  state().events.erase(event);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  SIM_ENTER();
  return record_event(hEvent, hStream, 0, DefaultStream::legacy);
}

CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream) {
  SIM_ENTER();
  return record_event(hEvent, hStream, 0, DefaultStream::per_thread);
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags) {
  SIM_ENTER();
  return record_event(hEvent, hStream, flags, DefaultStream::legacy);
}

CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags) {
  SIM_ENTER();
  return record_event(hEvent, hStream, flags, DefaultStream::per_thread);
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  SIM_ENTER();
  std::unique_lock lock(state().mu);
  Event* event = nullptr;
  if (CUresult r = resolve_event(hEvent, event); r != CUDA_SUCCESS) return r;
  if (event->ctx->sticky != CUDA_SUCCESS) return event->ctx->sticky;
  if (!event->recorded) return CUDA_SUCCESS;
  if (CUresult r = query(lock, event->recorded); r != CUDA_SUCCESS) return r;
  return event->ctx->sticky;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  SIM_ENTER();
  State& s = state();
  std::unique_lock lock(s.mu);
  Event* event = nullptr;
  if (CUresult r = resolve_event(hEvent, event); r != CUDA_SUCCESS) return r;
  charge_call(s.config->costs.sync_us);
  if (event->recorded) {
    s.done_cv.wait(lock, [&] { return event->recorded->done; });
    if (event->recorded->end_ns > host_clock()) count_host_sync();
    host_wait(lock, event->recorded);
  }
  return event->ctx->sticky;
}

CUresult CUDAAPI cuEventElapsedTime_v2(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  SIM_ENTER();
  return elapsed_time(pMilliseconds, hStart, hEnd);
}

CUresult CUDAAPI cuEventElapsedTime(float* pMilliseconds, CUevent hStart, CUevent hEnd) {
  SIM_ENTER();
  return elapsed_time(pMilliseconds, hStart, hEnd);
}

}  // extern "C"
