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
  TraceBuilder builder(out);
  StreamNumbers streams;
  std::unordered_map<uint64_t, size_t> live;  // buffer id -> tensor index
  std::unordered_map<uint64_t, int> buffer_device;
  std::vector<int64_t> marks;
  uint64_t vmm_events = 0;
  uint64_t unknown_access_launches = 0;
  uint64_t unknown_buffers = 0;
  uint64_t swap_events = 0;
  int64_t last_ns = 0;

  // Timings by the sequence number of what they measure.
  std::unordered_map<uint64_t, const TimingEvent*> timings;
  for (const Event& e : cst.events)
    if (const auto* t = std::get_if<TimingEvent>(&e.data)) timings.emplace(t->target_seq, t);
  const bool device_timeline = !timings.empty();  // Note [A device-time timeline]
  int64_t floor_ns = 0;                           // the previous op's end
  const auto clamp = [](uint64_t ns) {
    return static_cast<int64_t>(std::min<uint64_t>(ns, INT64_MAX / 4));
  };

  auto touch = [&](uint64_t buffer, uint32_t op) {
    if (buffer == kNoBuffer) return;
    auto it = live.find(buffer);
    if (it == live.end()) {
      ++unknown_buffers;
      return;
    }
    Tensor& t = out.tensors[it->second];
    if (t.producer == kNoOp) t.producer = op;
    t.accesses.push_back(op);
  };

  for (const Event& e : cst.events) {
    const int64_t host_ns = clamp(e.time_ns);
    const int64_t time_ns = device_timeline ? floor_ns : host_ns;
    last_ns = std::max(last_ns, time_ns);
    switch (e.type()) {
      case EventType::alloc: {
        const auto& a = e.as<AllocEvent>();
        Tensor t;
        t.name = fmt::format("buffer {}", a.buffer_id);
        t.size_bytes = a.size_bytes;
        t.requested_bytes = a.size_bytes;
        t.device = a.device;
        t.allocator = cst_allocator(a.device);
        t.address = a.address;
        t.alloc_ns = time_ns;
        live[a.buffer_id] = out.tensors.size();
        buffer_device[a.buffer_id] = a.device;
        builder.add_tensor(std::move(t));
        builder.report_allocator(cst_allocator(a.device), MemorySpace::device, a.device,
                                 std::nullopt);
        break;
      }
      case EventType::free: {
        const auto& f = e.as<FreeEvent>();
        auto it = live.find(f.buffer_id);
        if (it == live.end()) {
          ++unknown_buffers;
          break;
        }
        out.tensors[it->second].free_ns = time_ns;
        live.erase(it);
        break;
      }
      case EventType::launch: {
        const auto& l = e.as<LaunchEvent>();
        Op op;
        op.name = std::string(cst.kernel_name(l.kernel_id));
        if (op.name.empty()) op.name = fmt::format("kernel#{}", l.kernel_id);
        op.type = op.name;
        op.device = l.device;
        op.stream = streams.number(l.device, l.stream);
        op.start_ns = time_ns;
        if (auto it = timings.find(e.seq); it != timings.end())
          op.duration_ns = clamp(it->second->duration_ns);
        if (device_timeline) floor_ns = op.start_ns + op.duration_ns;
        last_ns = std::max(last_ns, op.start_ns + op.duration_ns);
        if (l.flags & (kLaunchUnknownAccess | kLaunchGraph)) ++unknown_access_launches;
        const uint32_t index = builder.add_op(std::move(op));
        for (uint64_t buffer : l.buffers) touch(buffer, index);
        break;
      }
      case EventType::copy: {
        const auto& c = e.as<CopyEvent>();
        Op op;
        op.name = c.is_set ? "memset" : fmt::format("memcpy {}", to_string(c.direction));
        op.type = c.is_set ? "memset" : "memcpy";
        int device = 0;
        for (uint64_t b : {c.dst_buffer, c.src_buffer})
          if (auto it = buffer_device.find(b); it != buffer_device.end()) device = it->second;
        op.device = device;
        op.stream = streams.number(device, c.stream);
        op.start_ns = time_ns;
        const uint32_t index = builder.add_op(std::move(op));
        touch(c.src_buffer, index);
        touch(c.dst_buffer, index);
        break;
      }
      case EventType::vmm: ++vmm_events; break;
      case EventType::iteration: marks.push_back(time_ns); break;
      case EventType::timing: break;  // read above
      case EventType::eviction:
      case EventType::prefetch:
      case EventType::wait:
      case EventType::iteration_stats: ++swap_events; break;
    }
  }
  if (cst.end)
    last_ns = std::max(last_ns,
                       static_cast<int64_t>(std::min<uint64_t>(cst.end->end_time_ns, INT64_MAX / 4)));
  for (size_t i = 0; i < marks.size(); ++i)
    builder.add_iteration(marks[i], i + 1 < marks.size() ? marks[i + 1] : last_ns + 1);
  if (!cst.complete())
    builder.note(fmt::format("the recording never finished: read up to offset {} ({})",
                             cst.stopped_at, cst.stopped_reason));
  if (swap_events)
    builder.note(fmt::format("{} evictions, prefetches and waits by cuswap are not ops",
                             swap_events));
  if (vmm_events) builder.note(fmt::format("{} virtual-memory calls are not represented", vmm_events));
  if (unknown_access_launches)
    builder.note(fmt::format("{} launches touched buffers the recorder could not name",
                             unknown_access_launches));
  if (unknown_buffers)
    builder.note(fmt::format("{} references to buffers allocated before the recording",
                             unknown_buffers));
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
