// `cuswap plan`: make a swap plan for a trace and a budget, write it as
// JSON and print a one-screen summary (with --json, one JSON object); or,
// with --max-batch, answer the largest batch that fits from traces of one
// model at several batch sizes.
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/json_writer.h"
#include "cli/policy_common.h"
#include "policy/batch_scaling.h"

namespace cuswap::cli {

namespace {

struct PlanOptions {
  std::vector<std::string> files;
  std::string output;
  std::string planner{policy::kDefaultPlanner};
  bool planner_given = false;  // with --max-batch: that planner's row only
  bool max_batch = false;
  std::vector<uint32_t> batches;
  double max_overhead = 0.1;
  bool json = false;
  PolicyArgs policy;
};

// What a plan moves each iteration.
struct Moves {
  uint64_t out_bytes = 0, in_bytes = 0;
  size_t groups = 0;
};

Moves moves_of(const policy::Plan& plan) {
  Moves m;
  std::vector<uint32_t> groups;
  for (const policy::PlanEntry& e : plan.entries) {
    if (e.leaves) m.out_bytes += e.tensor.size_bytes;
    if (e.returns) m.in_bytes += e.tensor.size_bytes;
    groups.push_back(e.group);
  }
  std::sort(groups.begin(), groups.end());
  m.groups = size_t(std::unique(groups.begin(), groups.end()) - groups.begin());
  return m;
}

std::string summary(const Loaded& l, const policy::PlanOutcome& o) {
  const policy::Workload& w = l.workload;
  const policy::SimResult& r = o.result;
  std::string out =
      fmt::format("{}: {} trace, device {}, {} ops and {} tensors in the window\n", l.trace.source,
                  trace::format_name(l.trace.format), w.device, w.ops.size(), w.tensors.size());
  for (const std::string& note : w.notes)
    out += fmt::format("note: {}\n", note);
  out += fmt::format("planner: {} ({}), budget {} ({} bytes)\n", o.plan.planner,
                     policy::mode_name(o.plan.mode), human_bytes(l.request.budget_bytes),
                     l.request.budget_bytes);
  out += fmt::format("link: {}\n", describe_link(l.request.link));
  if (!l.asked_bytes.empty())
    out += fmt::format(
        "sizes: as the allocator charges them with swap_min {} (the plan names the sizes "
        "asked)\n",
        human_bytes(l.request.swap_min_bytes));
  out += fmt::format("peak without swapping: {}, iteration {}\n",
                     human_bytes(r.infinite_memory_peak_bytes), human_ns(r.infinite_memory_ns));
  const Moves m = moves_of(o.plan);
  out += fmt::format("tensors chosen: {} in {} groups, {} out and {} in per iteration\n",
                     o.plan.entries.size(), m.groups, human_bytes(m.out_bytes),
                     human_bytes(m.in_bytes));
  out += fmt::format(
      "predicted: peak {} ({}), iteration {} ({:+.1f}% over infinite memory), "
      "stall {}\n",
      human_bytes(r.peak_bytes), r.fits ? "fits" : "does not fit", human_ns(r.iteration_ns),
      100 * r.overhead(), human_ns(r.stall_ns));
  out += fmt::format(
      "simulated copies: {} out, {} in ({} on demand); lower bound for any plan {} (time-only "
      "{})\n",
      human_bytes(r.d2h_bytes), human_bytes(r.h2d_bytes), r.demand_fetches,
      human_ns(r.lower_bound_ns), human_ns(r.time_bound_ns));
  out += fmt::format("time scale: {:g}\n", r.time_scale);
  if (r.shortfall) out += shortfall_text(*r.shortfall, w) + "\n";
  return out;
}

// The summary as one JSON object: the keys of `simulate --json`, and what
// the plan moves and where it was written.
std::string summary_json(const Loaded& l, const policy::PlanOutcome& o, const std::string& output) {
  const Moves m = moves_of(o.plan);
  JsonWriter j;
  j.begin_object();
  write_run_json(j, l, o.plan, o.plan.entries.size(), o.result);
  j.field("groups", m.groups);
  j.field("out_bytes", m.out_bytes);
  j.field("in_bytes", m.in_bytes);
  j.key("output");
  if (output.empty())
    j.null();
  else
    j.value(output);
  j.end_object();
  return j.finish();
}

// `plan` naming its tensors by the sizes asked, which the runtime matches,
// where it was made at the sizes charged (--swap-min).
policy::Plan as_asked(const Loaded& l, const policy::Plan& plan) {
  if (l.asked_bytes.empty()) return plan;
  std::vector<policy::ResolvedEntry> entries;
  std::string error;
  if (!policy::resolve(plan, l.workload, entries, error)) return plan;  // planners' plans do
  policy::Plan asked = plan;
  for (size_t i = 0; i < entries.size(); ++i)
    asked.entries[i].tensor.size_bytes = l.asked_bytes[entries[i].tensor];
  return asked;
}

Status run_single(const PlanOptions& o, std::FILE* out, std::FILE* err) {
  if (o.files.size() != 1)
    return failure(
        kExitBadInput,
        fmt::format("plan: expected one trace file (or --max-batch), got {}", o.files.size()));
  Loaded loaded;
  std::string error;
  if (!load(o.files[0], o.policy, loaded, error)) return failure(kExitBadInput, error);
  if (!loaded.budget_given) return failure(kExitBadInput, "--budget: a budget is required");
  const policy::Planner* planner = policy::find_planner(o.planner);
  if (planner == nullptr)
    return failure(kExitBadInput, fmt::format("--planner: expected one of {}, got \"{}\"",
                                              policy::planner_names(), o.planner));
  const policy::PlanOutcome outcome =
      policy::plan_and_simulate(*planner, loaded.workload, loaded.request);
  if (!o.output.empty() &&
      !write_file(o.output, policy::write_plan_json(as_asked(loaded, outcome.plan)), error))
    return failure(kExitFailed, error);
  std::string text;
  if (o.json) {
    text = summary_json(loaded, outcome, o.output);
  } else {
    text = summary(loaded, outcome);
    if (!o.output.empty() && o.output != "-") text += fmt::format("wrote {}\n", o.output);
  }
  // With the plan on stdout, the summary goes to stderr.
  if (Status written = write_result(o.output == "-" ? err : out, text);
      written.exit_code != kExitOk)
    return written;
  if (!outcome.result.fits) {
    // The verdict, not an error: the summary says what does not fit.
    fmt::print(err, "cuswap: the budget of {} cannot be met by the {} plan\n",
               human_bytes(loaded.request.budget_bytes), o.planner);
    return {kExitFailed, {}};
  }
  return {};
}

// --max-batch --json: the question (budget, overhead, link, time scale, the
// traced batches) and one row per policy, each on one line.
std::string max_batch_json(const policy::BatchModel& model, const policy::PlanRequest& request,
                           double max_overhead, const std::vector<policy::MaxBatchRow>& rows) {
  JsonWriter j;
  j.begin_object();
  j.field("budget_bytes", request.budget_bytes);
  j.field("max_overhead", max_overhead);
  j.field("link", request.link.name);
  j.field("time_scale", request.time_scale);
  j.key("batches");
  j.begin_array(Layout::line);
  for (uint32_t b : model.batches)
    j.value(b);
  j.end_array();
  j.field("matched_tensors", model.matched_tensors);
  j.key("rows");
  j.begin_array();
  for (const policy::MaxBatchRow& row : rows) {
    j.begin_object(Layout::line);
    j.field("planner", row.planner);
    j.field("max_batch", row.max_batch);
    j.field("capped", row.capped);
    j.field("peak_bytes", row.peak_bytes);
    j.field("iteration_ns", row.iteration_ns);
    j.field("overhead", Fixed{row.overhead, 6});
    j.field("limit", row.limit);
    j.end_object();
  }
  j.end_array();
  j.end_object();
  return j.finish();
}

Status run_max_batch(const PlanOptions& o, std::FILE* out) {
  policy::BatchModel model;
  policy::PlanRequest request;
  std::string error;
  if (!load_batch_model(o.files, o.batches, o.policy, model, request, error))
    return failure(kExitBadInput, error);
  policy::MaxBatchOptions options;
  options.request = request;
  options.max_overhead = o.max_overhead;
  // Every planner, or the one asked for; `none` leaves the row without
  // swapping alone, which is all a search for the stock batch needs.
  std::vector<const policy::Planner*> planners;
  if (!o.planner_given) {
    const auto all = policy::all_planners();
    planners.assign(all.begin(), all.end());
  } else if (o.planner != "none") {
    const policy::Planner* p = policy::find_planner(o.planner);
    if (p == nullptr)
      return failure(kExitBadInput, fmt::format("--planner: expected none or one of {}, got \"{}\"",
                                                policy::planner_names(), o.planner));
    planners.push_back(p);
  }
  const std::vector<policy::MaxBatchRow> rows = policy::max_batch(model, options, planners);
  std::string text;
  if (o.json) {
    text = max_batch_json(model, request, o.max_overhead, rows);
  } else {
    text = fmt::format("budget {}, link {}, time scale {:g}, overhead at most {:.0f}%\n",
                       human_bytes(request.budget_bytes), request.link.name, request.time_scale,
                       100 * o.max_overhead);
    text += fmt::format("fitted from batches");
    for (uint32_t b : model.batches)
      text += fmt::format(" {}", b);
    text += fmt::format(" ({} tensors matched across them)\n", model.matched_tensors);
    text += fmt::format("{:<12} {:>10} {:>12} {:>14} {:>9}  {}\n", "policy", "max batch", "peak",
                        "iteration", "overhead", "limit");
    for (const policy::MaxBatchRow& row : rows)
      text += fmt::format(
          "{:<12} {:>10} {:>12} {:>14} {:>8.1f}%  {}\n",
          row.planner.empty() ? "no swapping" : row.planner,
          row.max_batch == 0 ? std::string("none")
                             : fmt::format("{}{}", row.max_batch, row.capped ? "+" : ""),
          human_bytes(row.peak_bytes), human_ns(row.iteration_ns), 100 * row.overhead, row.limit);
  }
  return write_result(out, text);
}

}  // namespace

Command add_plan(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  CLI::App* sub = app.add_subcommand("plan", "Make a swap plan for a trace and a memory budget.");
  sub->footer(
      "With --max-batch: the largest batch that fits the budget without swapping and with each "
      "planner at an overhead of at most --max-overhead, from traces of one model at two or more "
      "batch sizes (named …-b32… or given by --batches). Exit codes: 0 ok, 1 the budget cannot "
      "be met (the summary says by how much) or the output cannot be written, 2 bad usage or "
      "input (one line on stderr).");
  sub->add_option("file", options->files, "The trace (several with --max-batch)")->required();
  sub->add_option("-o,--output", options->output, "Write the plan JSON here (- for stdout)");
  sub->add_option("--planner", options->planner,
                  "Planner: " + policy::planner_names() +
                      " (with --max-batch: that planner's row only, or none for the row "
                      "without swapping alone; default every planner)")
      ->capture_default_str()
      ->each([options](const std::string&) { options->planner_given = true; });
  sub->add_flag("--max-batch", options->max_batch,
                "Answer the largest batch that fits, from traces at several batch sizes");
  // One argument per --batches, split at commas: sizes separated by spaces
  // would take the file names after them too.
  sub->add_option("--batches", options->batches,
                  "With --max-batch: each file's batch size, in order, separated by commas "
                  "(--batches 2,4)")
      ->type_name("N,...")
      ->allow_extra_args(false)
      ->delimiter(',');
  sub->add_option("--max-overhead", options->max_overhead,
                  "With --max-batch: the largest acceptable slowdown over infinite memory")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", options->json,
                "Print the summary (with --max-batch: the table) as one JSON object");
  add_policy_options(sub, options->policy);
  return {sub, [options] {
            return options->max_batch ? run_max_batch(*options, stdout)
                                      : run_single(*options, stdout, stderr);
          }};
}

}  // namespace cuswap::cli
