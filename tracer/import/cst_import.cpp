// `.cst` (cuswap's own recording, docs/trace-format.md) into the Trace model:
// launches become ops, allocations become device tensors whose accesses are
// the launches (and copies) that listed them, iteration marks become
// iterations running to the next mark or the end of the trace.
//
// Durations: a 2.x recording times launches on the device (timing events,
// Note [Device durations] in runtime/device_timer.h); their ops get the
// measured duration_ns. A 1.x recording, or one made with
// record_timing:false, has none, and every op gets 0.
//
// Note [A device-time timeline]: where a trace has timings, ops are laid
// out back to back in sequence order, each taking its measured duration, and
// every other event happens when the op before it ended. Host times cannot
// be used: the host runs ahead of the device (by host time a launch
// "starts" long before the previous one ends), and on simcuda the device's
// clock is virtual. Device starts are not used either: the gaps between them
// hold the waits for cuswap's own copies (recorded as wait events), which an
// infinite-memory iteration does not have. So the recording's compute time
// is its kernels' time, with no idle time between them (Note [Idle time] in
// policy/workload.cpp), and which op an allocation or a free falls next to
// is kept.
//
// What is dropped: virtual-memory calls (counted in a note), launch flags
// other than "unknown accesses" (counted in a note), and cuswap's own
// evictions, prefetches and waits (not ops of the program; `inspect` shows
// them, and a note counts them).
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "tracer/cst_reader.h"
#include "tracer/import/builder.h"
#include "tracer/import/importers.h"

namespace cuswap::trace::import {
namespace {

// Streams are handles; ops number them per device by first appearance, the
// default stream (0) being 0.
class StreamNumbers {
 public:
  uint32_t number(int device, uint64_t stream) {
    if (stream == 0) return 0;
    auto [it, inserted] = numbers_.try_emplace({device, stream}, 0u);
    if (inserted) it->second = ++next_[device];
    return it->second;
  }

 private:
  std::map<std::pair<int, uint64_t>, uint32_t> numbers_;
  std::map<int, uint32_t> next_;
};

std::string cst_allocator(int device) { return fmt::format("cuda:{}", device); }

// Within INT64_MAX/4, as every importer keeps its times (builder.cpp): sums of
// a start and a duration cannot overflow.
int64_t clamp_ns(uint64_t ns) {
  return static_cast<int64_t>(std::min<uint64_t>(ns, INT64_MAX / 4));
}

// The import's state as the events are walked in sequence order: the live
// buffers and what the notes count.
class CstImport {
 public:
  CstImport(const CstTrace& cst, Trace& out) : cst_(cst), out_(out), builder_(out) {}

  void index_timings();
  void event(const Event& e);
  void finish();

 private:
  void touch(uint64_t buffer, uint32_t op);
  void alloc(const AllocEvent& a, int64_t time_ns);
  void free(const FreeEvent& f, int64_t time_ns);
  void launch(const Event& e, int64_t time_ns);
  void copy(const CopyEvent& c, int64_t time_ns);
  void add_iterations();
  void add_notes();

  const CstTrace& cst_;
  Trace& out_;
  TraceBuilder builder_;
  StreamNumbers streams_;
  std::unordered_map<uint64_t, size_t> live_;  // buffer id -> tensor index
  std::unordered_map<uint64_t, int> buffer_device_;
  std::vector<int64_t> marks_;
  uint64_t vmm_events_ = 0;
  uint64_t unknown_access_launches_ = 0;
  uint64_t unknown_buffers_ = 0;
  uint64_t swap_events_ = 0;
  int64_t last_ns_ = 0;
  // Timings by the sequence number of what they measure.
  std::unordered_map<uint64_t, const TimingEvent*> timings_;
  bool device_timeline_ = false;  // Note [A device-time timeline]
  int64_t floor_ns_ = 0;          // the previous op's end
};

void CstImport::index_timings() {
  for (const Event& e : cst_.events)
    if (const auto* t = std::get_if<TimingEvent>(&e.data)) timings_.emplace(t->target_seq, t);
  device_timeline_ = !timings_.empty();
}

void CstImport::event(const Event& e) {
  const int64_t host_ns = clamp_ns(e.time_ns);
  const int64_t time_ns = device_timeline_ ? floor_ns_ : host_ns;
  last_ns_ = std::max(last_ns_, time_ns);
  switch (e.type()) {
    case EventType::alloc: alloc(e.as<AllocEvent>(), time_ns); break;
    case EventType::free: free(e.as<FreeEvent>(), time_ns); break;
    case EventType::launch: launch(e, time_ns); break;
    case EventType::copy: copy(e.as<CopyEvent>(), time_ns); break;
    case EventType::vmm: ++vmm_events_; break;
    case EventType::iteration: marks_.push_back(time_ns); break;
    case EventType::timing: break;  // read by index_timings()
    case EventType::eviction:
    case EventType::prefetch:
    case EventType::wait:
    case EventType::iteration_stats: ++swap_events_; break;
  }
}

// A launch or copy that lists a buffer is one of its accesses, the first
// its producer; a buffer allocated before the recording is only counted.
void CstImport::touch(uint64_t buffer, uint32_t op) {
  if (buffer == kNoBuffer) return;
  auto it = live_.find(buffer);
  if (it == live_.end()) {
    ++unknown_buffers_;
    return;
  }
  Tensor& t = out_.tensors[it->second];
  if (t.producer == kNoOp) t.producer = op;
  t.accesses.push_back(op);
}

void CstImport::alloc(const AllocEvent& a, int64_t time_ns) {
  Tensor t;
  t.name = fmt::format("buffer {}", a.buffer_id);
  t.size_bytes = a.size_bytes;
  t.requested_bytes = a.size_bytes;
  t.device = a.device;
  t.allocator = cst_allocator(a.device);
  t.address = a.address;
  t.alloc_ns = time_ns;
  live_[a.buffer_id] = out_.tensors.size();
  buffer_device_[a.buffer_id] = a.device;
  builder_.add_tensor(std::move(t));
  builder_.report_allocator(cst_allocator(a.device), MemorySpace::device, a.device, std::nullopt);
}

void CstImport::free(const FreeEvent& f, int64_t time_ns) {
  auto it = live_.find(f.buffer_id);
  if (it == live_.end()) {
    ++unknown_buffers_;
    return;
  }
  out_.tensors[it->second].free_ns = time_ns;
  live_.erase(it);
}

void CstImport::launch(const Event& e, int64_t time_ns) {
  const auto& l = e.as<LaunchEvent>();
  Op op;
  op.name = std::string(cst_.kernel_name(l.kernel_id));
  if (op.name.empty()) op.name = fmt::format("kernel#{}", l.kernel_id);
  op.type = op.name;
  op.device = l.device;
  op.stream = streams_.number(l.device, l.stream);
  op.start_ns = time_ns;
  if (auto it = timings_.find(e.seq); it != timings_.end())
    op.duration_ns = clamp_ns(it->second->duration_ns);
  if (device_timeline_) floor_ns_ = op.start_ns + op.duration_ns;
  last_ns_ = std::max(last_ns_, op.start_ns + op.duration_ns);
  if (l.flags & (kLaunchUnknownAccess | kLaunchGraph)) ++unknown_access_launches_;
  const uint32_t index = builder_.add_op(std::move(op));
  for (uint64_t buffer : l.buffers) touch(buffer, index);
}

// A copy or set runs on the device of a buffer it names, else on device 0.
void CstImport::copy(const CopyEvent& c, int64_t time_ns) {
  Op op;
  op.name = c.is_set ? "memset" : fmt::format("memcpy {}", to_string(c.direction));
  op.type = c.is_set ? "memset" : "memcpy";
  int device = 0;
  for (uint64_t b : {c.dst_buffer, c.src_buffer})
    if (auto it = buffer_device_.find(b); it != buffer_device_.end()) device = it->second;
  op.device = device;
  op.stream = streams_.number(device, c.stream);
  op.start_ns = time_ns;
  const uint32_t index = builder_.add_op(std::move(op));
  touch(c.src_buffer, index);
  touch(c.dst_buffer, index);
}

// Each mark runs to the next, the last to the end of the trace.
void CstImport::add_iterations() {
  if (cst_.end) last_ns_ = std::max(last_ns_, clamp_ns(cst_.end->end_time_ns));
  for (size_t i = 0; i < marks_.size(); ++i)
    builder_.add_iteration(marks_[i], i + 1 < marks_.size() ? marks_[i + 1] : last_ns_ + 1);
}

void CstImport::add_notes() {
  if (!cst_.complete())
    builder_.note(fmt::format("the recording never finished: read up to offset {} ({})",
                              cst_.stopped_at, cst_.stopped_reason));
  if (swap_events_)
    builder_.note(fmt::format("{} evictions, prefetches and waits by cuswap are not ops",
                              swap_events_));
  if (vmm_events_)
    builder_.note(fmt::format("{} virtual-memory calls are not represented", vmm_events_));
  if (unknown_access_launches_)
    builder_.note(fmt::format("{} launches touched buffers the recorder could not name",
                              unknown_access_launches_));
  if (unknown_buffers_)
    builder_.note(fmt::format("{} references to buffers allocated before the recording",
                              unknown_buffers_));
}

void CstImport::finish() {
  add_iterations();
  add_notes();
  builder_.finish();
}

}  // namespace

bool import_cst(std::string_view bytes, std::string_view name, const ImportOptions& options,
                Trace& out, std::string& error) {
  CstTrace cst;
  ReadOptions read;
  read.allow_incomplete = options.allow_incomplete;
  const std::span<const uint8_t> span(reinterpret_cast<const uint8_t*>(bytes.data()),
                                      bytes.size());
  if (!parse_cst(span, name, read, cst, error)) return false;

  out.format = TraceFormat::cst;
  CstImport import(cst, out);
  import.index_timings();
  for (const Event& e : cst.events) import.event(e);
  import.finish();
  return true;
}

}  // namespace cuswap::trace::import
