// `cuswap export --perfetto`: a trace (and optionally a plan) as
// Chrome/Perfetto trace-event JSON: the ops on a compute track, device
// memory as a counter track, and the copy lanes from the simulation.
//
// Layout: one process "device N (simulated)"; thread 1 compute, thread 2
// H2D, thread 3 D2H; a counter "device memory" in bytes. Times are the
// simulation's, in microseconds (the format's unit), from 0.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
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

std::string render_perfetto(const Loaded& l, const policy::Plan& plan, const policy::SimResult& r) {
  const policy::Workload& w = l.workload;
  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  const auto meta = [&](std::string_view name, int tid, std::string_view value) {
    out += fmt::format(
        "{{\"ph\": \"M\", \"pid\": 1, \"tid\": {}, \"name\": {}, \"args\": {{\"name\": {}}}}},\n",
        tid, json_string(name), json_string(value));
  };
  meta("process_name", 0,
       fmt::format("device {} (simulated: {}, {} plan, time scale {:g})", w.device, r.link,
                   plan.planner.empty() ? "no" : plan.planner, r.time_scale));
  meta("thread_name", 1, "compute");
  meta("thread_name", 2, "H2D copies");
  meta("thread_name", 3, "D2H copies");
  for (const policy::OpSpan& s : r.ops) {
    const policy::WorkOp& op = w.ops[s.op];
    out += fmt::format(
        "{{\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": {:.3f}, \"dur\": {:.3f}, \"name\": {}, "
        "\"cat\": \"op\", \"args\": {{\"index\": {}, \"type\": {}}}}},\n",
        us(s.start_ns), us(s.end_ns - s.start_ns), json_string(op.name), s.op,
        json_string(op.type));
  }
  for (const policy::CopySpan& c : r.copies) {
    const std::string& tensor = w.tensors[c.tensor].name;
    std::string name = c.to_device ? (c.on_demand ? "fetch " : "prefetch ") : "evict ";
    name += tensor.empty() ? fmt::format("tensor #{}", c.tensor) : tensor;
    if (c.tensors > 1) name += fmt::format(" +{}", c.tensors - 1);
    out += fmt::format(
        "{{\"ph\": \"X\", \"pid\": 1, \"tid\": {}, \"ts\": {:.3f}, \"dur\": {:.3f}, \"name\": {}, "
        "\"cat\": \"copy\", \"args\": {{\"bytes\": {}, \"tensors\": {}}}}},\n",
        c.to_device ? 2 : 3, us(c.start_ns), us(c.end_ns - c.start_ns), json_string(name), c.bytes,
        c.tensors);
  }
  for (const policy::MemorySample& m : r.memory)
    out += fmt::format(
        "{{\"ph\": \"C\", \"pid\": 1, \"tid\": 0, \"ts\": {:.3f}, \"name\": \"device memory\", "
        "\"args\": {{\"bytes\": {}}}}},\n",
        us(m.time_ns), m.bytes);
  // The last event carries no trailing comma.
  out += fmt::format(
      "{{\"ph\": \"M\", \"pid\": 1, \"tid\": 0, \"name\": \"process_sort_index\", \"args\": "
      "{{\"sort_index\": 0}}}}\n]}}\n");
  return out;
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
