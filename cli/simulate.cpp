// `cuswap simulate`: a trace and a plan (from a file or a planner) through
// the simulator; the report as text or one JSON object.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/json_writer.h"
#include "cli/policy_common.h"

namespace cuswap::cli {

namespace {

struct SimulateOptions {
  std::vector<std::string> files;
  uint32_t batch = 0;  // with two or more files: the fitted workload at this batch
  std::string plan;
  std::string planner{policy::kDefaultPlanner};
  bool json = false;
  PolicyArgs policy;
};

std::string header_text(const Loaded& l, const policy::Plan& plan, size_t entries) {
  const policy::Workload& w = l.workload;
  std::string out =
      fmt::format("{}: {} trace, device {}, {} ops and {} tensors in the window\n", l.trace.source,
                  trace::format_name(l.trace.format), w.device, w.ops.size(), w.tensors.size());
  for (const std::string& note : w.notes)
    out += fmt::format("note: {}\n", note);
  out += fmt::format("plan: {} ({}), {} tensors\n", plan.planner, policy::mode_name(plan.mode),
                     entries);
  out += fmt::format("link: {}\n", describe_link(l.request.link));
  return out;
}

Status run_simulate(const SimulateOptions& o, std::FILE* out) {
  Loaded loaded;
  std::string error;
  policy::Plan plan;
  std::vector<policy::ResolvedEntry> entries;
  if (o.files.size() > 1 || o.batch != 0 ? !load_at_batch(o.files, o.batch, o.policy, loaded, error)
                                         : !load(o.files[0], o.policy, loaded, error))
    return failure(kExitBadInput, error);
  // Without a budget or a plan: the infinite-memory figures, nothing moved.
  const bool unlimited = o.plan.empty() && !loaded.budget_given;
  if (unlimited) {
    loaded.request.budget_bytes = UINT64_MAX;
    plan.planner = "none";
  } else if (!obtain_plan(loaded, o.policy, o.plan, o.planner, plan, entries, error)) {
    return failure(kExitBadInput, error);
  }
  policy::SimOptions sim = policy::sim_options(loaded.request);
  sim.bounds = true;
  const policy::SimResult r = policy::simulate(loaded.workload, plan.mode, entries, sim);
  std::string text;
  if (o.json) {
    JsonWriter j;
    j.begin_object();
    write_run_json(j, loaded, plan, entries.size(), r);
    j.end_object();
    text = j.finish();
  } else {
    text = header_text(loaded, plan, entries.size()) + render_result_text(r, loaded.workload);
  }
  if (Status written = write_result(out, text); written.exit_code != kExitOk) return written;
  // A plan that does not fit: the report says by how much.
  return {r.fits ? kExitOk : kExitFailed, {}};
}

}  // namespace

Command add_simulate(CLI::App& app) {
  auto options = std::make_shared<SimulateOptions>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "Predict peak memory and iteration time of a trace under a swap plan.");
  sub->footer(
      "The plan comes from --plan (a file written by `cuswap plan`) or is made by --planner; "
      "with neither --plan nor --budget, nothing is moved: the infinite-memory figures. "
      "Exit codes: 0 the plan fits the budget, 1 it does not (the report says by how much and "
      "what must be resident), 2 bad usage or input (one line on stderr).");
  sub->add_option("file", options->files,
                  "The trace (any format `cuswap inspect` reads); with --batch, traces of one "
                  "model at two or more batch sizes (named …-b32…)")
      ->required();
  sub->add_option("--batch", options->batch,
                  "With two or more traces: the workload fitted from them at this batch size (as "
                  "cuswap plan --max-batch searches it)");
  auto* plan = sub->add_option("--plan", options->plan, "A plan file (JSON)");
  sub->add_option("--planner", options->planner,
                  "Make the plan with this planner: " + policy::planner_names())
      ->capture_default_str()
      ->excludes(plan);
  sub->add_flag("--json", options->json, "Print one JSON object");
  add_policy_options(sub, options->policy);
  return {sub, [options] { return run_simulate(*options, stdout); }};
}

}  // namespace cuswap::cli
