// `cuswap report`: gathers what the page draws (cli/report.h) and writes it.
#include <algorithm>
#include <memory>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/report.h"
#include "tracer/cst_reader.h"

namespace cuswap::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string output;
  std::string plan;
  std::string planner;
  bool max_batch = false;
  std::vector<uint32_t> batches;
  double max_overhead = 0.1;
  PolicyArgs policy;
};

// The command line again, for the page's footer.
std::string command_line(const ReportOptions& o) {
  std::string out = "cuswap report";
  for (const std::string& f : o.files)
    out += " " + f;
  const auto add = [&](std::string_view flag, const std::string& value) {
    if (!value.empty()) out += fmt::format(" {} {}", flag, value);
  };
  add("--plan", o.plan);
  add("--planner", o.planner);
  add("--budget", o.policy.budget);
  add("--link", o.policy.link);
  if (o.policy.time_scale != 1.0) out += fmt::format(" --time-scale {:g}", o.policy.time_scale);
  if (o.policy.iteration >= 0) out += fmt::format(" --iteration {}", o.policy.iteration);
  if (o.max_batch) out += " --max-batch";
  return out + " -o " + o.output;
}

// The recording's chosen iteration on the recorder's clock (the host's):
// the launches, and every eviction, prefetch and wait cuswap made in it.
bool read_recording(const std::string& path, const PolicyArgs& args, uint32_t iteration,
                    Recording& out, std::string& error) {
  trace::CstTrace cst;
  trace::ReadOptions read;
  read.allow_incomplete = args.partial;
  if (!trace::read_cst_file(path, read, cst, error)) return false;
  out.configuration = cst.header.configuration;
  std::vector<int64_t> marks;
  for (const trace::Event& e : cst.events)
    if (e.type() == trace::EventType::iteration) marks.push_back(static_cast<int64_t>(e.time_ns));
  int64_t end = cst.end ? static_cast<int64_t>(cst.end->end_time_ns) : 0;
  for (const trace::Event& e : cst.events)
    end = std::max(end, static_cast<int64_t>(e.time_ns));
  out.start_ns = 0;
  out.end_ns = end + 1;
  if (iteration != trace::kNoIteration && iteration < marks.size()) {
    out.start_ns = marks[iteration];
    if (iteration + 1 < marks.size()) out.end_ns = marks[iteration + 1];
  }
  std::unordered_map<uint64_t, const trace::TimingEvent*> timings;
  for (const trace::Event& e : cst.events)
    if (const auto* t = std::get_if<trace::TimingEvent>(&e.data)) timings.emplace(t->target_seq, t);
  const auto in_window = [&](int64_t t) { return t >= out.start_ns && t < out.end_ns; };
  for (const trace::Event& e : cst.events) {
    const auto host = static_cast<int64_t>(e.time_ns);
    // Everything on the host's clock: a launch or a prefetch from when it
    // was queued, for as long as the device measured it.
    RecordedMove m;
    m.start_ns = m.end_ns = host;
    if (const auto it = timings.find(e.seq); it != timings.end())
      m.end_ns = host + static_cast<int64_t>(it->second->duration_ns);
    switch (e.type()) {
      case trace::EventType::launch: {
        if (!in_window(host)) continue;
        const auto& l = e.as<trace::LaunchEvent>();
        m.kind = RecordedMove::launch;
        m.what = std::string(cst.kernel_name(l.kernel_id));
        if (m.what.empty()) m.what = fmt::format("kernel#{}", l.kernel_id);
        ++out.launches;
        break;
      }
      case trace::EventType::eviction: {
        const auto& v = e.as<trace::EvictionEvent>();
        m.start_ns = static_cast<int64_t>(v.start_ns);
        m.end_ns = m.start_ns + static_cast<int64_t>(v.duration_ns);
        if (!in_window(m.start_ns)) continue;
        m.kind = RecordedMove::eviction;
        m.buffer = v.buffer_id;
        m.bytes = v.bytes;
        m.what = std::string(trace::to_string(v.reason));
        ++out.evictions;
        out.evicted_bytes += v.bytes;
        break;
      }
      case trace::EventType::prefetch: {
        if (!in_window(host)) continue;
        const auto& p = e.as<trace::PrefetchEvent>();
        m.kind = RecordedMove::prefetch;
        m.buffer = p.buffer_id;
        m.bytes = p.bytes;
        m.what = std::string(trace::to_string(p.reason));
        ++out.prefetches;
        out.prefetched_bytes += p.bytes;
        if (p.reason == trace::PrefetchReason::on_demand) ++out.on_demand;
        break;
      }
      case trace::EventType::wait: {
        if (!in_window(host)) continue;
        m.kind = RecordedMove::wait;
        m.start_ns = m.end_ns = host;
        m.buffer = e.as<trace::WaitEvent>().buffer_id;
        ++out.waits;
        break;
      }
      default:
        continue;
    }
    out.moves.push_back(std::move(m));
  }
  return true;
}

// Batch size against iteration time, per planner and without swapping, at
// the batches the search tried and around each maximum.
std::vector<BatchSeries> batch_series(const policy::BatchModel& model,
                                      const policy::MaxBatchOptions& options) {
  const std::vector<policy::MaxBatchRow> rows =
      policy::max_batch(model, options, policy::all_planners());
  uint32_t top = model.batches.back();
  for (const policy::MaxBatchRow& r : rows)
    if (!r.capped) top = std::max(top, r.max_batch);
  top = std::min(options.batch_cap, top + top / 4 + 1);
  std::set<uint32_t> grid(model.batches.begin(), model.batches.end());
  for (uint32_t i = 1; i <= 24; ++i)
    grid.insert(std::max<uint32_t>(1, top * i / 24));
  for (const policy::MaxBatchRow& r : rows)
    if (r.max_batch > 0 && r.max_batch <= top) {
      grid.insert(r.max_batch);
      if (r.max_batch < top) grid.insert(r.max_batch + 1);
    }
  std::vector<BatchSeries> out;
  for (const policy::MaxBatchRow& r : rows)
    out.push_back({r.planner, r.max_batch, r.capped, r.limit, {}});
  const std::span<const policy::Planner* const> planners = policy::all_planners();
  for (uint32_t batch : grid) {
    const policy::Workload w = policy::synthesize(model, batch);
    const std::vector<uint64_t> live = policy::live_bytes_per_op(w);
    const uint64_t peak = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
    const int64_t infinite = policy::infinite_memory_starts(w, options.request.time_scale).back();
    for (BatchSeries& s : out) {
      if (s.planner.empty()) {
        s.points.push_back({batch, infinite, infinite, peak, peak <= options.request.budget_bytes});
        continue;
      }
      const auto p = std::find_if(planners.begin(), planners.end(),
                                  [&](const policy::Planner* x) { return x->name() == s.planner; });
      if (p == planners.end()) continue;
      const policy::PlanOutcome o = policy::plan_and_simulate(**p, w, options.request);
      s.points.push_back({batch, o.result.iteration_ns, o.result.infinite_memory_ns,
                          o.result.peak_bytes, o.result.fits});
    }
  }
  return out;
}

Status run_report(const ReportOptions& o) {
  if (o.files.empty()) return failure(kExitBadInput, "report: expected a trace file");
  if (!o.max_batch && o.files.size() > 1)
    return failure(
        kExitBadInput,
        fmt::format("report: expected one trace file (or --max-batch), got {}", o.files.size()));
  ReportInput in;
  in.command = command_line(o);
  std::string error;
  policy::BatchModel model;
  policy::PlanRequest batch_request;
  if (o.max_batch && !load_batch_model(o.files, o.batches, o.policy, model, batch_request, error))
    return failure(kExitBadInput, error);
  // The page's other sections show the last file.
  Loaded loaded;
  if (!load(o.files.back(), o.policy, loaded, error)) return failure(kExitBadInput, error);
  in.loaded = &loaded;
  std::vector<policy::ResolvedEntry> entries;
  if (!o.plan.empty() || loaded.budget_given) {
    const std::string planner =
        o.planner.empty() ? std::string(policy::kDefaultPlanner) : o.planner;
    if (!obtain_plan(loaded, o.policy, o.plan, planner, in.plan, entries, error))
      return failure(kExitBadInput, error);
    in.has_plan = true;
    in.plan_from = o.plan;
  } else if (!o.planner.empty()) {
    return failure(kExitBadInput, "--budget: a budget is required to make a plan");
  }
  policy::SimOptions unlimited = policy::sim_options(loaded.request);
  unlimited.budget_bytes = UINT64_MAX;
  unlimited.record_timeline = true;
  in.unlimited = policy::simulate(loaded.workload, policy::PlanMode::scheduled, {}, unlimited);
  if (in.has_plan) {
    policy::SimOptions sim = policy::sim_options(loaded.request);
    sim.record_timeline = true;
    sim.bounds = true;
    in.planned = policy::simulate(loaded.workload, in.plan.mode, entries, sim);
    for (const policy::Planner* p : policy::all_planners())
      in.planners.push_back(policy::plan_and_simulate(*p, loaded.workload, loaded.request));
  }
  if (o.max_batch) {
    policy::MaxBatchOptions options;
    options.request = batch_request;
    options.max_overhead = o.max_overhead;
    in.batches = batch_series(model, options);
    in.traced_batches = model.batches;
    in.batch_budget_bytes = batch_request.budget_bytes;
    in.max_overhead = o.max_overhead;
  }
  if (loaded.trace.format == trace::TraceFormat::cst) {
    Recording rec;
    if (!read_recording(o.files.back(), o.policy, loaded.workload.iteration, rec, error))
      return failure(kExitBadInput, error);
    if (rec.evictions + rec.prefetches + rec.waits > 0) in.recording = std::move(rec);
  }
  if (!write_file(o.output, render_report(in), error)) return failure(kExitFailed, error);
  return {};
}

}  // namespace

Command add_report(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report", "Write one self-contained HTML page of a trace's iteration under a budget.");
  sub->footer(
      "The page (docs/report.md) opens from a file, with no network: device memory over the "
      "iteration with and without the plan against the budget, the compute and copy lanes, "
      "every planner side by side, with --max-batch batch size against iteration time, and for "
      "a .cst recording what cuswap moved. Without --budget nothing moves. Exit codes: 0 ok, 1 "
      "the output cannot be written, 2 bad usage or input.");
  sub->add_option("file", options->files, "The trace (several with --max-batch)")->required();
  sub->add_option("-o,--output", options->output, "Where to write the page (- for stdout)")
      ->required();
  auto* plan = sub->add_option("--plan", options->plan, "A plan file (JSON)");
  sub->add_option("--planner", options->planner,
                  "Make the plan with this planner (default cuswap; needs --budget): " +
                      policy::planner_names())
      ->excludes(plan);
  sub->add_flag("--max-batch", options->max_batch,
                "Traces at two or more batch sizes: add batch size against iteration time "
                "(needs --budget SIZE); the rest of the page shows the last file");
  sub->add_option("--batches", options->batches,
                  "With --max-batch: each file's batch size, in order, separated by commas "
                  "(default: from the file names, …-b32…)")
      ->delimiter(',');
  sub->add_option("--max-overhead", options->max_overhead,
                  "With --max-batch: the largest acceptable slowdown over memory to spare")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  add_policy_options(sub, options->policy);
  return {sub, [options] { return run_report(*options); }};
}

}  // namespace cuswap::cli
