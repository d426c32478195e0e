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
// Dropped: python_function and other annotation events, flow events, input
// shapes, "Total Reserved" (the caching allocator's reservation).
#include <algorithm>
#include <map>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "tracer/import/builder.h"
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

}  // namespace

bool import_torch_profiler(simdjson::dom::array events, const JsonPath& path,
                           const JsonErrors& errors, Trace& out) {
  out.format = TraceFormat::torch_profiler;
  TraceBuilder builder(out);
  std::vector<MemoryEvent> memory;
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> cpu_spans;  // by (pid, tid)
  std::map<std::pair<int64_t, int64_t>, uint32_t> lanes;
  std::vector<bool> host_op;
  bool any_cuda = false;
  uint64_t steps = 0;

  size_t i = 0;
  for (simdjson::dom::element e : events) {
    const JsonPath ep = path.at(i++);
    simdjson::dom::object ev;
    if (!errors.object(e, ep, ev)) return false;
    simdjson::dom::element field;
    std::string_view ph, name, cat;
    if (!errors.member(ev, "ph", ep, field) || !errors.string(field, ep.at("ph"), ph)) return false;
    if (ph != "X" && ph != "i" && ph != "I") continue;
    if (!errors.member(ev, "name", ep, field) || !errors.string(field, ep.at("name"), name))
      return false;
    if (ev.at_key("cat").get(field) == simdjson::SUCCESS && !errors.string(field, ep.at("cat"), cat))
      return false;
    int64_t ts_ns = 0, pid = 0, tid = 0;
    if (!errors.member(ev, "ts", ep, field) || !trace_time_ns(field, ep.at("ts"), errors, ts_ns))
      return false;
    // pid and tid are numbers in PyTorch's traces; some writers use strings.
    if (ev.at_key("pid").get(field) == simdjson::SUCCESS && field.is_int64()) pid = field.get_int64().value_unsafe();
    if (ev.at_key("tid").get(field) == simdjson::SUCCESS && field.is_int64()) tid = field.get_int64().value_unsafe();
    simdjson::dom::object args;
    const bool has_args = ev.at_key("args").get(field) == simdjson::SUCCESS;
    if (has_args && !errors.object(field, ep.at("args"), args)) return false;
    const JsonPath ap = ep.at("args");

    if (ph != "X") {
      if (name != "[memory]") continue;
      if (!has_args) return errors.fail(ep, "an object with the key \"args\"");
      MemoryEvent m;
      m.ts_ns = ts_ns;
      m.pid = pid;
      m.tid = tid;
      m.order = memory.size();
      std::optional<int64_t> type, id, total;
      if (args.at_key("Bytes").get(field) != simdjson::SUCCESS)
        return errors.fail(ap, "an object with the key \"Bytes\"");
      if (!errors.int64(field, ap.at("Bytes"), m.bytes)) return false;
      m.bytes = std::max(m.bytes, -INT64_MAX);  // so that -bytes is defined
      if (!optional_int(args, "Device Type", ap, errors, type) ||
          !optional_int(args, "Device Id", ap, errors, id) ||
          !optional_int(args, "Total Allocated", ap, errors, total))
        return false;
      if (args.at_key("Addr").get(field) == simdjson::SUCCESS) {
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
      any_cuda |= m.device_type == 1;
      memory.push_back(m);
      continue;
    }

    int64_t dur_ns = 0;
    if (ev.at_key("dur").get(field) == simdjson::SUCCESS &&
        !trace_time_ns(field, ep.at("dur"), errors, dur_ns))
      return false;
    dur_ns = std::max<int64_t>(dur_ns, 0);
    if (name.starts_with("ProfilerStep#")) {
      builder.add_iteration(ts_ns, ts_ns + dur_ns);
      ++steps;
      continue;
    }
    const bool cpu = cat == "cpu_op" || cat == "Operator";
    const bool kernel = cat == "kernel" || cat == "Kernel";
    const bool copy = cat == "gpu_memcpy" || cat == "Memcpy";
    const bool set = cat == "gpu_memset" || cat == "Memset";
    if (!cpu && !kernel && !copy && !set) continue;
    Op op;
    op.name = name;
    op.start_ns = ts_ns;
    op.duration_ns = dur_ns;
    if (cpu) {
      op.type = name;
      auto [lane, inserted] = lanes.try_emplace({pid, tid}, static_cast<uint32_t>(lanes.size()));
      op.stream = lane->second;
      const uint32_t index = builder.add_op(std::move(op));
      cpu_spans[{pid, tid}].push_back({ts_ns, ts_ns + dur_ns, index});
      host_op.push_back(true);
      continue;
    }
    op.type = kernel ? op.name : (copy ? "memcpy" : "memset");
    std::optional<int64_t> device, stream;
    if (has_args && (!optional_int(args, "device", ap, errors, device) ||
                     !optional_int(args, "stream", ap, errors, stream)))
      return false;
    op.device = static_cast<int>(std::max<int64_t>(device.value_or(0), 0));
    op.stream = static_cast<uint32_t>(std::max<int64_t>(stream.value_or(0), 0));
    any_cuda = true;
    builder.add_op(std::move(op));
    host_op.push_back(false);
  }
  for (size_t op = 0; op < host_op.size(); ++op)
    if (host_op[op]) builder.op(static_cast<uint32_t>(op)).device = any_cuda ? -1 : 0;

  // The innermost enclosing op on the same thread, by a sweep per thread.
  std::vector<uint32_t> producer(memory.size(), kNoOp);
  {
    std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_thread;
    for (size_t m = 0; m < memory.size(); ++m)
      by_thread[{memory[m].pid, memory[m].tid}].push_back(m);
    for (auto& [thread, list] : by_thread) {
      auto it = cpu_spans.find(thread);
      if (it == cpu_spans.end()) continue;
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
  }

  // Pair allocations and frees in time order.
  std::vector<size_t> order(memory.size());
  for (size_t m = 0; m < order.size(); ++m) order[m] = m;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return memory[a].ts_ns < memory[b].ts_ns; });
  struct Key {
    int type, id;
    uint64_t addr;
    bool operator<(const Key& o) const {
      return std::tie(type, id, addr) < std::tie(o.type, o.id, o.addr);
    }
  };
  std::map<Key, size_t> live;  // -> index in out.tensors
  std::map<std::string, std::optional<uint64_t>> peaks;
  std::map<std::string, int> allocator_device;
  uint64_t unpaired_frees = 0, without_addr = 0;
  for (size_t m : order) {
    const MemoryEvent& me = memory[m];
    const std::string allocator = allocator_name(me);
    allocator_device[allocator] = me.device_type == 1 ? me.device_id : 0;
    std::optional<uint64_t>& peak = peaks[allocator];
    if (me.total_allocated) peak = std::max(peak.value_or(0), *me.total_allocated);
    if (!me.has_addr) ++without_addr;
    // Without addresses (old traces), a free pairs with the latest live
    // allocation of the same size: the key uses the size as its address.
    const Key key{me.device_type, me.device_id,
                  me.has_addr ? me.addr : static_cast<uint64_t>(me.bytes < 0 ? -me.bytes : me.bytes)};
    if (me.bytes == 0) continue;  // neither an allocation nor a free
    if (me.bytes > 0) {
      Tensor t;
      t.size_bytes = static_cast<uint64_t>(me.bytes);
      t.requested_bytes = t.size_bytes;
      t.allocator = allocator;
      t.device = allocator_device[allocator];
      t.address = me.has_addr ? me.addr : 0;
      t.alloc_ns = me.ts_ns;
      t.producer = producer[m];
      if (t.producer != kNoOp) t.name = builder.op(t.producer).name;
      live[key] = out.tensors.size();
      builder.add_tensor(std::move(t));
      continue;
    }
    const auto it = live.find(key);
    if (it != live.end()) {
      out.tensors[it->second].free_ns = me.ts_ns;
      live.erase(it);
      continue;
    }
    ++unpaired_frees;
    Tensor t;
    t.size_bytes = static_cast<uint64_t>(-me.bytes);
    t.requested_bytes = t.size_bytes;
    t.allocator = allocator;
    t.device = allocator_device[allocator];
    t.address = me.has_addr ? me.addr : 0;
    t.persistent = true;
    t.free_ns = me.ts_ns;
    builder.add_tensor(std::move(t));
  }

  // Device or host: CUDA allocations are the device's; without any, the CPU
  // allocator stands in.
  std::string device_allocator;
  for (const auto& [name, peak] : peaks)
    if (name.starts_with("cuda:") && device_allocator.empty()) device_allocator = name;
  if (device_allocator.empty() && peaks.count("cpu")) {
    device_allocator = "cpu";
    builder.note("captured without a GPU: cpu stands for device memory");
  }
  auto space_of = [&](const std::string& allocator) {
    if (any_cuda) return allocator.starts_with("cuda:") ? MemorySpace::device : MemorySpace::host;
    return allocator == device_allocator ? MemorySpace::device : MemorySpace::host;
  };
  for (Tensor& t : out.tensors) t.space = space_of(t.allocator);
  for (const auto& [name, peak] : peaks)
    builder.report_allocator(name, space_of(name), allocator_device[name], peak);
  uint64_t device_peak = 0;
  bool have_device_peak = false;
  for (const auto& [name, peak] : peaks)
    if (space_of(name) == MemorySpace::device && peak) {
      device_peak = std::max(device_peak, *peak);
      have_device_peak = true;
    }
  if (have_device_peak) out.reported_peak_device_bytes = device_peak;

  if (unpaired_frees)
    builder.note(fmt::format("{} frees of memory allocated before the trace: those tensors "
                             "are persistent until their free", unpaired_frees));
  if (without_addr)
    builder.note(fmt::format("{} memory events without an address: frees paired by size",
                             without_addr));
  if (steps == 0) builder.note("no ProfilerStep#N events: no iterations");
  builder.finish();
  return true;
}

}  // namespace cuswap::trace::import
