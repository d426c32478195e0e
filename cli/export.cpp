// `cuswap export --perfetto`: a trace (and optionally a plan) as
// Chrome/Perfetto trace-event JSON: the ops on a compute track, device
// memory as a counter track, and the copy lanes from the simulation.
//
// Layout: one process "device N (simulated)"; thread 1 compute, thread 2
// H2D, thread 3 D2H; a counter "device memory" in bytes. Times are the
// simulation's, in microseconds (the format's unit), from 0. One event a
// line (Note [One-line containers] in cli/json_writer.h).
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/json_writer.h"
#include "cli/policy_common.h"

namespace cuswap::cli {

namespace {

struct ExportOptions {
  std::string file;
  std::string output;
  std::string plan;
  std::string planner;
  bool perfetto = false;
  PolicyArgs policy;
};

double us(int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

// Opens an event, one line (Note [One-line containers]), with its phase,
// process and thread.
void begin_event(JsonWriter& j, std::string_view phase, int tid) {
  j.begin_object(Layout::line);
  j.field("ph", phase);
  j.field("pid", 1);
  j.field("tid", tid);
}

// In microseconds, the format's unit, to three places: to the nanosecond.
void time_fields(JsonWriter& j, int64_t start_ns, int64_t end_ns) {
  j.field("ts", Fixed{us(start_ns), 3});
  j.field("dur", Fixed{us(end_ns - start_ns), 3});
}

void metadata(JsonWriter& j, std::string_view name, int tid, std::string_view value) {
  begin_event(j, "M", tid);
  j.field("name", name);
  j.key("args");
  j.begin_object();
  j.field("name", value);
  j.end_object();
  j.end_object();
}

std::string copy_name(const policy::Workload& w, const policy::CopySpan& c) {
  const std::string& tensor = w.tensors[c.tensor].name;
  std::string name = c.to_device ? (c.on_demand ? "fetch " : "prefetch ") : "evict ";
  name += tensor.empty() ? fmt::format("tensor #{}", c.tensor) : tensor;
  if (c.tensors > 1) name += fmt::format(" +{}", c.tensors - 1);
  return name;
}

std::string render_perfetto(const Loaded& l, const policy::Plan& plan, const policy::SimResult& r) {
  const policy::Workload& w = l.workload;
  JsonWriter j;
  j.begin_object();
  j.field("displayTimeUnit", "ns");
  j.key("traceEvents");
  j.begin_array();
  metadata(j, "process_name", 0,
           fmt::format("device {} (simulated: {}, {} plan, time scale {:g})", w.device, r.link,
                       plan.planner.empty() ? "no" : plan.planner, r.time_scale));
  metadata(j, "thread_name", 1, "compute");
  metadata(j, "thread_name", 2, "H2D copies");
  metadata(j, "thread_name", 3, "D2H copies");
  for (const policy::OpSpan& s : r.ops) {
    const policy::WorkOp& op = w.ops[s.op];
    begin_event(j, "X", 1);
    time_fields(j, s.start_ns, s.end_ns);
    j.field("name", op.name);
    j.field("cat", "op");
    j.key("args");
    j.begin_object();
    j.field("index", s.op);
    j.field("type", op.type);
    j.end_object();
    j.end_object();
  }
  for (const policy::CopySpan& c : r.copies) {
    begin_event(j, "X", c.to_device ? 2 : 3);
    time_fields(j, c.start_ns, c.end_ns);
    j.field("name", copy_name(w, c));
    j.field("cat", "copy");
    j.key("args");
    j.begin_object();
    j.field("bytes", c.bytes);
    j.field("tensors", c.tensors);
    j.end_object();
    j.end_object();
  }
  for (const policy::MemorySample& m : r.memory) {
    begin_event(j, "C", 0);
    j.field("ts", Fixed{us(m.time_ns), 3});
    j.field("name", "device memory");
    j.key("args");
    j.begin_object();
    j.field("bytes", m.bytes);
    j.end_object();
    j.end_object();
  }
  begin_event(j, "M", 0);
  j.field("name", "process_sort_index");
  j.key("args");
  j.begin_object();
  j.field("sort_index", 0);
  j.end_object();
  j.end_object();
  j.end_array();
  j.end_object();
  return j.finish();
}

Status run_export(const ExportOptions& o) {
  if (!o.perfetto)
    return failure(kExitBadInput, "export: expected --perfetto (the one format so far)");
  Loaded loaded;
  std::string error;
  policy::Plan plan;
  std::vector<policy::ResolvedEntry> entries;
  if (!load(o.file, o.policy, loaded, error) ||
      ((!o.plan.empty() || !o.planner.empty()) &&
       !obtain_plan(loaded, o.policy, o.plan, o.planner, plan, entries, error)))
    return failure(kExitBadInput, error);
  policy::SimOptions sim = policy::sim_options(loaded.request);
  sim.record_timeline = true;
  const policy::SimResult r = policy::simulate(loaded.workload, plan.mode, entries, sim);
  if (!write_file(o.output, render_perfetto(loaded, plan, r), error))
    return failure(kExitFailed, error);
  return {};
}

}  // namespace

Command add_export(CLI::App& app) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* sub = app.add_subcommand(
      "export", "Write a trace's simulated iteration as Perfetto / Chrome trace JSON.");
  sub->footer(
      "Open the output in ui.perfetto.dev or chrome://tracing: ops on a compute track, device "
      "memory as a counter, H2D and D2H copy lanes. Without --plan or --planner no tensor moves. "
      "Exit codes: 0 ok, 1 the output cannot be written, 2 bad usage or input.");
  sub->add_option("file", options->file, "The trace")->required();
  sub->add_flag("--perfetto", options->perfetto, "Chrome/Perfetto trace-event JSON (required)");
  sub->add_option("-o,--output", options->output, "Where to write it (- for stdout)")->required();
  auto* plan = sub->add_option("--plan", options->plan, "A plan file (JSON)");
  sub->add_option("--planner", options->planner,
                  "Make the plan with this planner (needs --budget): " + policy::planner_names())
      ->excludes(plan);
  add_policy_options(sub, options->policy);
  return {sub, [options] { return run_export(*options); }};
}

}  // namespace cuswap::cli
