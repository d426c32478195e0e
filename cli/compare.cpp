// `cuswap compare`: every planner on one trace and budget, side by side.
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/policy_common.h"

namespace cuswap::cli {

namespace {

struct CompareOptions {
  std::string file;
  bool json = false;
  PolicyArgs policy;
};

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
    text = fmt::format(
        "{{\n  \"source\": {},\n  \"format\": {},\n  \"budget_bytes\": {},\n  \"link\": {},\n"
        "  \"time_scale\": {},\n  \"infinite_memory_ns\": {},\n  \"infinite_memory_peak_bytes\": "
        "{},\n  \"lower_bound_ns\": {},\n  \"time_bound_ns\": {},\n  \"planners\": [\n",
        json_string(loaded.trace.source), json_string(trace::format_name(loaded.trace.format)),
        loaded.request.budget_bytes, json_string(loaded.request.link.name),
        loaded.request.time_scale, first.infinite_memory_ns, first.infinite_memory_peak_bytes,
        first.lower_bound_ns, first.time_bound_ns);
    for (size_t i = 0; i < outcomes.size(); ++i)
      text += fmt::format("    {{\n      \"planner\": {},\n      \"entries\": {},\n{}\n    }}{}\n",
                          json_string(outcomes[i].plan.planner), outcomes[i].plan.entries.size(),
                          render_result_json(outcomes[i].result, loaded.workload, "      "),
                          i + 1 < outcomes.size() ? "," : "");
    text += "  ]\n}\n";
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
