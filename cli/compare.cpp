// `cuswap compare`: every planner on one trace and budget, side by side.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/json_writer.h"
#include "cli/policy_common.h"

namespace cuswap::cli {

namespace {

struct CompareOptions {
  std::string file;
  bool json = false;
  PolicyArgs policy;
};

// --json: the trace and the bounds that every plan shares, then each
// planner's plan size and simulation (the keys of write_result_json).
std::string compare_json(const Loaded& l, const std::vector<policy::PlanOutcome>& outcomes) {
  const policy::SimResult& first = outcomes.front().result;
  JsonWriter j;
  j.begin_object();
  j.field("source", l.trace.source);
  j.field("format", trace::format_name(l.trace.format));
  j.field("budget_bytes", l.request.budget_bytes);
  j.field("link", l.request.link.name);
  j.field("time_scale", l.request.time_scale);
  j.field("infinite_memory_ns", first.infinite_memory_ns);
  j.field("infinite_memory_peak_bytes", first.infinite_memory_peak_bytes);
  j.field("lower_bound_ns", first.lower_bound_ns);
  j.field("time_bound_ns", first.time_bound_ns);
  j.key("planners");
  j.begin_array();
  for (const policy::PlanOutcome& o : outcomes) {
    j.begin_object();
    j.field("planner", o.plan.planner);
    j.field("entries", o.plan.entries.size());
    write_result_json(j, o.result, l.workload);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.finish();
}

Status run_compare(const CompareOptions& o, std::FILE* out) {
  Loaded loaded;
  std::string error;
  if (!load(o.file, o.policy, loaded, error)) return failure(kExitBadInput, error);
  if (!loaded.budget_given) return failure(kExitBadInput, "--budget: a budget is required");
  std::vector<policy::PlanOutcome> outcomes;
  for (const policy::Planner* p : policy::all_planners())
    outcomes.push_back(policy::plan_and_simulate(*p, loaded.workload, loaded.request));
  const policy::SimResult& first = outcomes.front().result;
  std::string text;
  if (o.json) {
    text = compare_json(loaded, outcomes);
  } else {
    text = fmt::format("{}: {} trace; budget {} ({} bytes); link {}; time scale {:g}\n",
                       loaded.trace.source, trace::format_name(loaded.trace.format),
                       human_bytes(loaded.request.budget_bytes), loaded.request.budget_bytes,
                       describe_link(loaded.request.link), loaded.request.time_scale);
    for (const std::string& note : loaded.workload.notes)
      text += fmt::format("note: {}\n", note);
    text += fmt::format("without swapping: peak {}, iteration {}\n",
                        human_bytes(first.infinite_memory_peak_bytes),
                        human_ns(first.infinite_memory_ns));
    text +=
        fmt::format("lower bound for any plan: {} ({:+.1f}%); time-only bound {}\n",
                    human_ns(first.lower_bound_ns),
                    100.0 * static_cast<double>(first.lower_bound_ns - first.infinite_memory_ns) /
                        static_cast<double>(std::max<int64_t>(1, first.infinite_memory_ns)),
                    human_ns(first.time_bound_ns));
    text += fmt::format("{:<10} {:>11} {:>13} {:>9} {:>12} {:>11} {:>11} {:>5}\n", "planner",
                        "peak", "iteration", "overhead", "stall", "out (D2H)", "in (H2D)", "fits");
    for (const policy::PlanOutcome& oc : outcomes) {
      const policy::SimResult& r = oc.result;
      text += fmt::format("{:<10} {:>11} {:>13} {:>8.1f}% {:>12} {:>11} {:>11} {:>5}\n",
                          oc.plan.planner, human_bytes(r.peak_bytes), human_ns(r.iteration_ns),
                          100 * r.overhead(), human_ns(r.stall_ns), human_bytes(r.d2h_bytes),
                          human_bytes(r.h2d_bytes), r.fits ? "yes" : "no");
    }
    if (first.shortfall) text += shortfall_text(*first.shortfall, loaded.workload) + "\n";
  }
  return write_result(out, text);
}

}  // namespace

Command add_compare(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* sub =
      app.add_subcommand("compare", "Every planner on one trace and budget, side by side.");
  sub->footer(
      "Columns: simulated peak, iteration time, overhead over infinite memory, time the compute "
      "engine waited, bytes copied each way, whether the peak fits the budget. Exit codes: 0 ok, "
      "1 the output cannot be written, 2 bad usage or input (one line on stderr).");
  sub->add_option("file", options->file, "The trace")->required();
  sub->add_flag("--json", options->json, "Print one JSON object");
  add_policy_options(sub, options->policy);
  return {sub, [options] { return run_compare(*options, stdout); }};
}

}  // namespace cuswap::cli
