// PyTorch profiler trace JSON (torch.profiler with profile_memory=True,
// export_chrome_trace) into the Trace model.
//
// What is read: `cpu_op` (or older `Operator`) X events as host ops, kernel,
// memcpy and memset X events as device ops, ProfilerStep#N X events as
// iterations, and `[memory]` instants (args Device Type 0 = CPU, 1 = CUDA,
// Device Id, Addr, Bytes with negative = free, Total Allocated). An
// allocation is paired with the next free of the same address on the same
// device; it is attributed to the innermost op that encloses it on the same
// thread (its producer). Frees without an allocation are tensors allocated
// before the trace (persistent until their free). The maximum "Total
// Allocated" per device is the source's own peak.
//
// Memory events pair as Note [Pairing memory events] says; with kernels in
// the trace, CUDA tensors then live on the device's clock (Note [Device time
// of memory events], device_clock.h), and so do the ProfilerStep spans.
//
// Dropped: python_function and other annotation events, flow events, input
// shapes, "Total Reserved" (the caching allocator's reservation).
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "tracer/import/builder.h"
#include "tracer/import/device_clock.h"
#include "tracer/import/json_importers.h"

namespace cuswap::trace::import {
namespace {

struct MemoryEvent {
  int64_t ts_ns = 0;
  int64_t pid = 0, tid = 0;
  int device_type = 0;
  int device_id = 0;
  bool has_addr = false;
  uint64_t addr = 0;
  int64_t bytes = 0;
  std::optional<uint64_t> total_allocated;
  size_t order = 0;
};

struct Span {
  int64_t start_ns, end_ns;
  uint32_t op;
};



bool optional_int(simdjson::dom::object o, std::string_view key, const JsonPath& p,
                  const JsonErrors& errors, std::optional<int64_t>& out) {
  simdjson::dom::element e;
  if (o.at_key(key).get(e) != simdjson::SUCCESS || e.is_null()) return true;
  int64_t v = 0;
  if (!errors.int64(e, p.at(key), v)) return false;
  out = v;
  return true;
}

std::string allocator_name(const MemoryEvent& m) {
  return m.device_type == 1 ? fmt::format("cuda:{}", m.device_id)
                            : (m.device_type == 0 ? std::string("cpu")
                                                  : fmt::format("device-type-{}:{}",
                                                                m.device_type, m.device_id));
}

// Note [Pairing memory events]
// With addresses, a free ends the live allocation at its address, and a free
// of an address nothing in the trace allocated is memory allocated before
// the trace (a persistent tensor until its free). Without addresses (PyTorch
// before 1.10), the live bytes must follow the running sum of the events
// exactly: a free ends the latest live allocation of its size; a free of a
// size no live allocation has ends the oldest live allocations until as many
// bytes are given back, splitting the last one where it gives back less than
// its size; only bytes freed beyond everything live are memory from before
// the trace. The persistent bytes are then exactly the deepest the running
// sum goes below zero, and every other free pairs with an allocation.
class LivePool {
 public:
  LivePool(std::string allocator, int device) : allocator_(std::move(allocator)), device_(device) {}

  uint64_t persistent_frees = 0;
  uint64_t split_frees = 0;
  uint64_t reused_addresses = 0;

  void allocate(Trace& out, Tensor t, bool has_addr) {
    if (has_addr) {
      if (const auto it = by_addr_.find(t.address); it != by_addr_.end()) {
        ++reused_addresses;
        end(out, it->second, t.alloc_ns);
      }
    }
    const size_t index = out.tensors.size();
    out.tensors.push_back(std::move(t));
    add_live(out, index, has_addr);
  }

  void free(Trace& out, uint64_t bytes, bool has_addr, uint64_t addr, int64_t ts_ns) {
    if (has_addr) {
      if (const auto it = by_addr_.find(addr); it != by_addr_.end()) {
        end(out, it->second, ts_ns);
        return;
      }
      persistent(out, bytes, addr, ts_ns);
      return;
    }
    if (const auto it = by_size_.find(bytes); it != by_size_.end() && !it->second.empty()) {
      end(out, it->second.back(), ts_ns);
      return;
    }
    ++split_frees;
    uint64_t left = bytes;
    while (left > 0 && !oldest_.empty()) {
      const size_t index = oldest_.begin()->second;
      const uint64_t size = out.tensors[index].size_bytes;
      if (size <= left) {
        left -= size;
        end(out, index, ts_ns);
        continue;
      }
      // The oldest gives back `left` of its bytes: it becomes two tensors,
      // one ending now and one that stays live.
      remove_live(out, index);
      Tensor rest = out.tensors[index];
      rest.size_bytes = size - left;
      rest.requested_bytes = std::min(rest.requested_bytes, rest.size_bytes);
      out.tensors[index].size_bytes = left;
      out.tensors[index].requested_bytes = std::min(out.tensors[index].requested_bytes, left);
      out.tensors[index].free_ns = std::max(ts_ns, out.tensors[index].alloc_ns);
      const size_t rest_index = out.tensors.size();
      out.tensors.push_back(std::move(rest));
      add_live(out, rest_index, false);
      left = 0;
    }
    if (left > 0) persistent(out, left, 0, ts_ns);
  }

 private:
  void add_live(Trace& out, size_t index, bool has_addr) {
    const Tensor& t = out.tensors[index];
    if (has_addr) by_addr_[t.address] = index;
    else by_size_[t.size_bytes].push_back(index);
    oldest_.insert({t.alloc_ns, index});
  }
  void remove_live(Trace& out, size_t index) {
    const Tensor& t = out.tensors[index];
    oldest_.erase({t.alloc_ns, index});
    if (const auto it = by_addr_.find(t.address); it != by_addr_.end() && it->second == index) {
      by_addr_.erase(it);
      return;
    }
    if (const auto it = by_size_.find(t.size_bytes); it != by_size_.end()) {
      std::vector<size_t>& list = it->second;
      if (const auto at = std::find(list.rbegin(), list.rend(), index); at != list.rend())
        list.erase(std::next(at).base());
      if (list.empty()) by_size_.erase(it);
    }
  }
  void end(Trace& out, size_t index, int64_t ts_ns) {
    remove_live(out, index);
    Tensor& t = out.tensors[index];
    t.free_ns = std::max(ts_ns, t.alloc_ns);
  }
  void persistent(Trace& out, uint64_t bytes, uint64_t addr, int64_t ts_ns) {
    ++persistent_frees;
    Tensor t;
    t.size_bytes = bytes;
    t.requested_bytes = bytes;
    t.allocator = allocator_;
    t.device = device_;
    t.address = addr;
    t.persistent = true;
    t.free_ns = ts_ns;
    out.tensors.push_back(std::move(t));
  }

  std::unordered_map<uint64_t, size_t> by_addr_;
  std::map<uint64_t, std::vector<size_t>> by_size_;
  std::set<std::pair<int64_t, size_t>> oldest_;
  std::string allocator_;
  int device_;
};

// What the events say, read in one walk.
struct ProfilerRead {
  std::vector<MemoryEvent> memory;
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> cpu_spans;  // by (pid, tid)
  std::map<std::pair<int64_t, int64_t>, uint32_t> lanes;              // host op lanes
  std::vector<bool> host_op;                                          // by op index
  DeviceClock clock;
  bool any_cuda = false;
  std::vector<Span> steps;  // host time
};

// The fields of an X or instant event that every kind of them has.
struct EventHead {
  std::string_view name, cat;
  int64_t ts_ns = 0, pid = 0, tid = 0;
  bool has_args = false;
  simdjson::dom::object args;
};

// A `[memory]` instant: Bytes (negative: a free), and where known the
// device, the address and the allocator's total.
bool read_memory_event(const EventHead& h, const JsonPath& ep, const JsonErrors& errors,
                       ProfilerRead& read) {
  if (!h.has_args) return errors.fail(ep, "an object with the key \"args\"");
  const JsonPath ap = ep.at("args");
  simdjson::dom::element field;
  MemoryEvent m;
  m.ts_ns = h.ts_ns;
  m.pid = h.pid;
  m.tid = h.tid;
  m.order = read.memory.size();
  std::optional<int64_t> type, id, total;
  if (h.args.at_key("Bytes").get(field) != simdjson::SUCCESS)
    return errors.fail(ap, "an object with the key \"Bytes\"");
  if (!errors.int64(field, ap.at("Bytes"), m.bytes)) return false;
  m.bytes = std::max(m.bytes, -INT64_MAX);  // so that -bytes is defined
  if (!optional_int(h.args, "Device Type", ap, errors, type) ||
      !optional_int(h.args, "Device Id", ap, errors, id) ||
      !optional_int(h.args, "Total Allocated", ap, errors, total))
    return false;
  if (h.args.at_key("Addr").get(field) == simdjson::SUCCESS) {
    if (field.is_int64()) {  // some versions print addresses signed
      m.addr = static_cast<uint64_t>(field.get_int64().value_unsafe());
    } else if (!errors.uint64(field, ap.at("Addr"), m.addr)) {
      return false;
    }
    m.has_addr = true;
  }
  m.device_type = static_cast<int>(type.value_or(0));
  m.device_id = static_cast<int>(std::max<int64_t>(id.value_or(0), 0));
  if (total && *total >= 0) m.total_allocated = static_cast<uint64_t>(*total);
  read.any_cuda |= m.device_type == 1;
  read.memory.push_back(m);
  return true;
}

// A kernel, memcpy or memset, on the device's clock.
bool add_device_op(const EventHead& h, int64_t dur_ns, bool kernel, bool copy, const JsonPath& ep,
                   const JsonErrors& errors, TraceBuilder& builder, ProfilerRead& read) {
  const JsonPath ap = ep.at("args");
  Op op;
  op.name = h.name;
  op.start_ns = h.ts_ns;
  op.duration_ns = dur_ns;
  op.type = kernel ? op.name : (copy ? "memcpy" : "memset");
  op.is_copy = copy;
  std::optional<int64_t> device, stream, correlation;
  if (h.has_args && (!optional_int(h.args, "device", ap, errors, device) ||
                     !optional_int(h.args, "stream", ap, errors, stream) ||
                     !optional_int(h.args, "correlation", ap, errors, correlation)))
    return false;
  op.device = static_cast<int>(std::max<int64_t>(device.value_or(0), 0));
  if (correlation)
    read.clock.add_work(static_cast<uint64_t>(*correlation), op.device, h.ts_ns, h.ts_ns + dur_ns);
  op.stream = static_cast<uint32_t>(std::max<int64_t>(stream.value_or(0), 0));
  read.any_cuda = true;
  builder.add_op(std::move(op));
  read.host_op.push_back(false);
  return true;
}

// An X event: a ProfilerStep, a runtime call (a launch's host side), a host
// op or device work; other categories are dropped.
bool read_complete_event(const EventHead& h, simdjson::dom::object ev, const JsonPath& ep,
                         const JsonErrors& errors, TraceBuilder& builder, ProfilerRead& read) {
  simdjson::dom::element field;
  int64_t dur_ns = 0;
  if (ev.at_key("dur").get(field) == simdjson::SUCCESS &&
      !trace_time_ns(field, ep.at("dur"), errors, dur_ns))
    return false;
  dur_ns = std::max<int64_t>(dur_ns, 0);
  if (h.name.starts_with("ProfilerStep#")) {
    read.steps.push_back({h.ts_ns, h.ts_ns + dur_ns, 0});
    return true;
  }
  const std::string_view cat = h.cat;
  if (cat == "cuda_runtime" || cat == "Runtime") {
    std::optional<int64_t> correlation;
    if (h.has_args && !optional_int(h.args, "correlation", ep.at("args"), errors, correlation))
      return false;
    if (correlation) read.clock.add_launch(static_cast<uint64_t>(*correlation), h.ts_ns);
    return true;
  }
  const bool cpu = cat == "cpu_op" || cat == "Operator";
  const bool kernel = cat == "kernel" || cat == "Kernel";
  const bool copy = cat == "gpu_memcpy" || cat == "Memcpy";
  const bool set = cat == "gpu_memset" || cat == "Memset";
  if (!cpu && !kernel && !copy && !set) return true;
  if (!cpu) return add_device_op(h, dur_ns, kernel, copy, ep, errors, builder, read);
  Op op;
  op.name = h.name;
  op.start_ns = h.ts_ns;
  op.duration_ns = dur_ns;
  op.type = h.name;
  auto [lane, inserted] =
      read.lanes.try_emplace({h.pid, h.tid}, static_cast<uint32_t>(read.lanes.size()));
  op.stream = lane->second;
  const uint32_t index = builder.add_op(std::move(op));
  read.cpu_spans[{h.pid, h.tid}].push_back({h.ts_ns, h.ts_ns + dur_ns, index});
  read.host_op.push_back(true);
  return true;
}

// One event of the trace; phases other than X and instants are dropped.
bool read_event(simdjson::dom::element e, const JsonPath& ep, const JsonErrors& errors,
                TraceBuilder& builder, ProfilerRead& read) {
  simdjson::dom::object ev;
  if (!errors.object(e, ep, ev)) return false;
  simdjson::dom::element field;
  std::string_view ph;
  EventHead h;
  if (!errors.member(ev, "ph", ep, field) || !errors.string(field, ep.at("ph"), ph)) return false;
  if (ph != "X" && ph != "i" && ph != "I") return true;
  if (!errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), h.name))
    return false;
  if (ev.at_key("cat").get(field) == simdjson::SUCCESS &&
      !errors.string(field, ep.at("cat"), h.cat))
    return false;
  if (!errors.member(ev, "ts", ep, field) || !trace_time_ns(field, ep.at("ts"), errors, h.ts_ns))
    return false;
  // pid and tid are numbers in PyTorch's traces; some writers use strings.
  if (ev.at_key("pid").get(field) == simdjson::SUCCESS && field.is_int64())
    h.pid = field.get_int64().value_unsafe();
  if (ev.at_key("tid").get(field) == simdjson::SUCCESS && field.is_int64())
    h.tid = field.get_int64().value_unsafe();
  h.has_args = ev.at_key("args").get(field) == simdjson::SUCCESS;
  if (h.has_args && !errors.object(field, ep.at("args"), h.args)) return false;

  if (ph != "X") {
    if (h.name != "[memory]") return true;
    return read_memory_event(h, ep, errors, read);
  }
  return read_complete_event(h, ev, ep, errors, builder, read);
}

// The innermost enclosing op on the same thread, by a sweep per thread.
std::vector<uint32_t> find_producers(ProfilerRead& read) {
  const std::vector<MemoryEvent>& memory = read.memory;
  std::vector<uint32_t> producer(memory.size(), kNoOp);
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_thread;
  for (size_t m = 0; m < memory.size(); ++m)
    by_thread[{memory[m].pid, memory[m].tid}].push_back(m);
  for (auto& [thread, list] : by_thread) {
    auto it = read.cpu_spans.find(thread);
    if (it == read.cpu_spans.end()) continue;
    std::vector<Span>& spans = it->second;
    std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
    });
    std::stable_sort(list.begin(), list.end(),
                     [&](size_t a, size_t b) { return memory[a].ts_ns < memory[b].ts_ns; });
    std::vector<const Span*> stack;
    size_t next = 0;
    for (size_t m : list) {
      const int64_t ts = memory[m].ts_ns;
      while (next < spans.size() && spans[next].start_ns <= ts) {
        while (!stack.empty() && stack.back()->end_ns < spans[next].start_ns) stack.pop_back();
        stack.push_back(&spans[next++]);
      }
      while (!stack.empty() && stack.back()->end_ns < ts) stack.pop_back();
      if (!stack.empty()) producer[m] = stack.back()->op;
    }
  }
  return producer;
}

// The memory events paired into tensors, per allocator, with its figures.
struct Pairing {
  std::map<std::string, std::optional<uint64_t>> peaks;  // the largest "Total Allocated"
  std::map<std::string, int> allocator_device;
  std::map<std::string, LivePool> pools;         // by allocator
  std::map<std::string, uint64_t> before_trace;  // bytes held before the first event
  uint64_t without_addr = 0;
};

void pair_event(const MemoryEvent& me, uint32_t producer, TraceBuilder& builder, Trace& out,
                Pairing& p) {
  const std::string allocator = allocator_name(me);
  p.allocator_device[allocator] = me.device_type == 1 ? me.device_id : 0;
  std::optional<uint64_t>& peak = p.peaks[allocator];
  if (me.total_allocated) {
    peak = std::max(peak.value_or(0), *me.total_allocated);
    // What the allocator held before this first event: memory from before the trace.
    if (!p.before_trace.count(allocator)) {
      const int64_t before = static_cast<int64_t>(*me.total_allocated) - me.bytes;
      p.before_trace[allocator] = static_cast<uint64_t>(std::max<int64_t>(before, 0));
    }
  }
  if (!me.has_addr) ++p.without_addr;
  if (me.bytes == 0) return;  // neither an allocation nor a free
  LivePool& pool =
      p.pools.try_emplace(allocator, allocator, p.allocator_device[allocator]).first->second;
  if (me.bytes > 0) {
    Tensor t;
    t.size_bytes = static_cast<uint64_t>(me.bytes);
    t.requested_bytes = t.size_bytes;
    t.allocator = allocator;
    t.device = p.allocator_device[allocator];
    t.address = me.has_addr ? me.addr : 0;
    t.alloc_ns = me.ts_ns;
    t.producer = producer;
    if (t.producer != kNoOp) t.name = builder.op(t.producer).name;
    pool.allocate(out, std::move(t), me.has_addr);
  } else {
    pool.free(out, static_cast<uint64_t>(-me.bytes), me.has_addr, me.addr, me.ts_ns);
  }
}

// Memory held before the trace and not freed in it (weights, optimizer
// state): what "Total Allocated" says was there beyond what the trace's
// own frees account for. One persistent tensor keeps the live bytes equal
// to the allocator's count.
void add_held_before(Pairing& p, TraceBuilder& builder) {
  uint64_t never_freed_bytes = 0;
  for (const auto& [allocator, bytes] : p.before_trace)
    never_freed_bytes += builder.add_held_before(allocator, p.allocator_device[allocator], bytes,
                                                 "(allocated before the trace)");
  if (never_freed_bytes)
    builder.note(fmt::format("{} bytes allocated before the trace and not freed in it (by \"Total "
                             "Allocated\"): one persistent tensor per allocator", never_freed_bytes));
}

// Paired on the host's clock, where the events happened; then lifetimes
// move to the device's (Note [Device time of memory events]), and the
// steps go on the clock of the device with the most work.
void to_device_clock(ProfilerRead& read, TraceBuilder& builder, Trace& out) {
  read.clock.finish();
  if (read.clock.mapped()) {
    for (Tensor& t : out.tensors)
      if (t.allocator.starts_with("cuda:")) (void)read.clock.to_device_clock(t);
    builder.note("CUDA tensors and steps on the device's clock: from the first kernel launched "
                 "after their start to the end of the last launched before their end");
  }
  const int step_device = busiest_device(out.ops);
  for (const Span& step : read.steps) {
    if (step_device >= 0 && read.clock.mapped(step_device))
      builder.add_iteration(read.clock.alloc_ns(step_device, step.start_ns),
                            read.clock.free_ns(step_device, step.end_ns));
    else
      builder.add_iteration(step.start_ns, step.end_ns);
  }
}

// Device or host: CUDA allocations are the device's; without any, the CPU
// allocator stands in.
void report_spaces(Pairing& p, bool any_cuda, TraceBuilder& builder, Trace& out) {
  std::string device_allocator;
  for (const auto& [name, peak] : p.peaks)
    if (name.starts_with("cuda:") && device_allocator.empty()) device_allocator = name;
  if (device_allocator.empty() && p.peaks.count("cpu")) {
    device_allocator = "cpu";
    builder.note("captured without a GPU: cpu stands for device memory");
  }
  auto space_of = [&](const std::string& allocator) {
    if (any_cuda) return allocator.starts_with("cuda:") ? MemorySpace::device : MemorySpace::host;
    return allocator == device_allocator ? MemorySpace::device : MemorySpace::host;
  };
  for (Tensor& t : out.tensors) t.space = space_of(t.allocator);
  for (const auto& [name, peak] : p.peaks)
    builder.report_allocator(name, space_of(name), p.allocator_device[name], peak);
  uint64_t device_peak = 0;
  bool have_device_peak = false;
  for (const auto& [name, peak] : p.peaks)
    if (space_of(name) == MemorySpace::device && peak) {
      device_peak = std::max(device_peak, *peak);
      have_device_peak = true;
    }
  if (have_device_peak) out.reported_peak_device_bytes = device_peak;
}

void add_pairing_notes(const Pairing& p, TraceBuilder& builder) {
  uint64_t persistent_frees = 0, split_frees = 0, reused = 0;
  for (const auto& [name, pool] : p.pools) {
    persistent_frees += pool.persistent_frees;
    split_frees += pool.split_frees;
    reused += pool.reused_addresses;
  }
  if (persistent_frees)
    builder.note(fmt::format("{} frees of memory allocated before the trace: those tensors "
                             "are persistent until their free", persistent_frees));
  if (p.without_addr)
    builder.note(fmt::format("{} memory events without an address: frees paired by size, "
                             "live bytes follow the events' running sum",
                             p.without_addr));
  if (split_frees)
    builder.note(fmt::format("{} frees of a size no live allocation has: the oldest live "
                             "allocations end there", split_frees));
  if (reused)
    builder.note(fmt::format("{} allocations at an address still live: the earlier one "
                             "ends there", reused));
}

}  // namespace

bool import_torch_profiler(simdjson::dom::array events, const JsonPath& path,
                           const JsonErrors& errors, Trace& out) {
  out.format = TraceFormat::torch_profiler;
  TraceBuilder builder(out);
  ProfilerRead read;
  size_t i = 0;
  for (simdjson::dom::element e : events)
    if (!read_event(e, path.at(i++), errors, builder, read)) return false;
  for (size_t op = 0; op < read.host_op.size(); ++op)
    if (read.host_op[op]) builder.op(static_cast<uint32_t>(op)).device = read.any_cuda ? -1 : 0;

  const std::vector<uint32_t> producer = find_producers(read);
  // Pair allocations and frees in time order (Note [Pairing memory events]).
  std::vector<size_t> order(read.memory.size());
  for (size_t m = 0; m < order.size(); ++m) order[m] = m;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return read.memory[a].ts_ns < read.memory[b].ts_ns;
  });
  Pairing pairing;
  for (size_t m : order) pair_event(read.memory[m], producer[m], builder, out, pairing);
  add_held_before(pairing, builder);

  to_device_clock(read, builder, out);
  report_spaces(pairing, read.any_cuda, builder, out);
  add_pairing_notes(pairing, builder);
  if (read.steps.empty()) builder.note("no ProfilerStep#N events: no iterations");
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
