// Shared parts of the policy subcommands (cli/policy_common.h).
#include "cli/policy_common.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "cli/input_limit.h"
#include "cli/json_writer.h"
#include "common/config.h"
#include "tracer/import/import.h"

namespace cuswap::cli {

namespace {

// `--budget TEXT` is no size: the line that says so.
std::string not_a_size(std::string_view text) {
  std::string line =
      fmt::format("--budget: expected a size such as 12GiB or 800MiB, got \"{}\"", text);
  // A size that parses without its fraction has a fraction that is not
  // whole bytes (1.4GiB); 1.5GiB is.
  const size_t dot = text.find('.');
  if (dot != std::string_view::npos) {
    size_t end = dot + 1;
    while (end < text.size() && text[end] >= '0' && text[end] <= '9')
      ++end;
    const std::string whole = std::string(text.substr(0, dot)) + std::string(text.substr(end));
    if (conf::parse_size(whole))
      line += ": its fraction does not come to whole bytes; give it in a smaller unit (MiB)";
  }
  return line;
}

}  // namespace

void add_policy_options(CLI::App* sub, PolicyArgs& args) {
  args.budget_option =
      sub->add_option("--budget", args.budget,
                      "Device memory budget: a size (12GiB, 1.5G, 800MiB; binary units) or a "
                      "percentage of the iteration's peak without swapping (60%)");
  std::string links;
  for (std::string_view name : policy::link_names())
    links += (links.empty() ? "" : ", ") + std::string(name);
  args.link_option =
      sub->add_option("--link", args.link, "Host link: " + links)->capture_default_str();
  args.time_scale_option =
      sub->add_option("--time-scale", args.time_scale,
                      "Multiply op durations by F (traces captured on a CPU are not GPU "
                      "timings; every report states the factor)")
          ->capture_default_str()
          ->check(CLI::PositiveNumber);
  sub->add_flag("--duplex-contention", args.duplex_contention,
                "Both copy directions share the link's bandwidth when they run at once");
  sub->add_option("--iteration", args.iteration,
                  "Which iteration of the trace to plan (default: the middle one)");
  sub->add_option("--device", args.device,
                  "Which device (default: the one with the most device memory)");
  sub->add_flag("--partial", args.partial, "Read a .cst trace whose recording never finished");
  sub->add_option("--swap-min", args.swap_min,
                  "Plan and simulate at the sizes the swapping allocator charges: whole 2 MiB "
                  "pages for a buffer of at least SIZE, 512-byte units of a slab that never moves below it "
                  "(give the shim's swap_min, 1MiB unless configured, for a plan it follows)");
  add_max_input_option(sub, args.max_input);
}

bool parse_request(const PolicyArgs& args, const policy::Workload& workload,
                   policy::PlanRequest& out, bool& budget_given, std::string& error) {
  const std::optional<policy::Link> link = policy::find_link(args.link);
  if (!link) {
    std::string names;
    for (std::string_view name : policy::link_names())
      names += (names.empty() ? "" : ", ") + std::string(name);
    error = fmt::format("--link: expected one of {}, got \"{}\"", names, args.link);
    return false;
  }
  out.link = *link;
  out.link.duplex_contention = args.duplex_contention;
  out.time_scale = args.time_scale;
  budget_given = !args.budget.empty();
  out.budget_bytes = UINT64_MAX;
  if (!budget_given) return true;
  if (args.budget.back() == '%') {
    const std::optional<double> percent =
        conf::parse_number(std::string_view(args.budget).substr(0, args.budget.size() - 1));
    if (!percent || *percent <= 0) {
      error = fmt::format("--budget: expected a positive percentage such as 60%, got \"{}\"",
                          args.budget);
      return false;
    }
    const std::vector<uint64_t> live = policy::live_bytes_per_op(workload);
    const uint64_t peak = live.empty() ? 0 : *std::max_element(live.begin(), live.end());
    out.budget_bytes =
        static_cast<uint64_t>(std::floor(static_cast<double>(peak) * *percent / 100));
    return true;
  }
  const std::optional<uint64_t> size = conf::parse_size(args.budget);
  if (!size || *size == 0) {
    error = not_a_size(args.budget);
    return false;
  }
  out.budget_bytes = *size;
  return true;
}

bool load(const std::string& file, const PolicyArgs& args, Loaded& out, std::string& error) {
  trace::ImportOptions import;
  import.allow_incomplete = args.partial;
  if (!apply_max_input(args.max_input, import, error)) return false;
  if (!trace::import_trace(file, import, out.trace, error)) return false;
  policy::WorkloadOptions options;
  options.device = args.device;
  options.iteration = args.iteration;
  if (!policy::build_workload(out.trace, options, out.workload, error)) return false;
  if (args.require_durations &&
      std::all_of(out.workload.ops.begin(), out.workload.ops.end(),
                  [](const policy::WorkOp& op) { return op.duration_ns == 0; })) {
    error = fmt::format(
        "{}: the trace has no op durations (all {} ops are 0 ns{}), so times cannot be "
        "simulated; record with format 2.0 or later and record_timing on",
        file, out.workload.ops.size(),
        out.trace.format == trace::TraceFormat::cst ? ": a .cst without timing events" : "");
    return false;
  }
  if (!args.swap_min.empty()) {
    const std::optional<uint64_t> swap_min = conf::parse_size(args.swap_min);
    if (!swap_min) {
      error = fmt::format("--swap-min: expected a size such as 1MiB, got \"{}\"", args.swap_min);
      return false;
    }
    out.asked_bytes.reserve(out.workload.tensors.size());
    for (const policy::WorkTensor& t : out.workload.tensors)
      out.asked_bytes.push_back(t.size_bytes);
    out.workload = policy::with_charged_sizes(out.workload, *swap_min);
    out.request.swap_min_bytes = *swap_min;
  }
  return parse_request(args, out.workload, out.request, out.budget_given, error);
}

bool obtain_plan(Loaded& loaded, const PolicyArgs& args, const std::string& plan_path,
                 const std::string& planner, policy::Plan& plan,
                 std::vector<policy::ResolvedEntry>& entries, std::string& error) {
  if (!plan_path.empty()) {
    if (!policy::read_plan_file(plan_path, plan, error)) return false;
    if (args.link_option->count() == 0) {
      const std::optional<policy::Link> link = policy::find_link(plan.link);
      if (!link) {
        error =
            fmt::format("{}: key link: expected a known link, got \"{}\"", plan_path, plan.link);
        return false;
      }
      loaded.request.link = *link;
      loaded.request.link.duplex_contention = args.duplex_contention;
    }
    if (args.time_scale_option->count() == 0) loaded.request.time_scale = plan.time_scale;
    if (!loaded.budget_given) {
      loaded.request.budget_bytes = plan.budget_bytes;
      loaded.budget_given = true;
    }
    // A plan names the sizes asked; the workload may be at the sizes charged.
    policy::Plan charged = plan;
    if (!loaded.asked_bytes.empty())
      for (policy::PlanEntry& e : charged.entries)
        e.tensor.size_bytes =
            policy::charged_bytes(e.tensor.size_bytes, loaded.request.swap_min_bytes);
    if (!policy::resolve(charged, loaded.workload, entries, error)) {
      error = fmt::format("{}: {}", plan_path, error);
      return false;
    }
    return true;
  }
  const policy::Planner* p = policy::find_planner(planner);
  if (p == nullptr) {
    error =
        fmt::format("--planner: expected one of {}, got \"{}\"", policy::planner_names(), planner);
    return false;
  }
  if (!loaded.budget_given) {
    error = "--budget: a budget is required to make a plan";
    return false;
  }
  plan = p->plan(loaded.workload, loaded.request);
  if (!policy::resolve(plan, loaded.workload, entries, error)) return false;
  return true;
}

namespace {

// "…-b32.…", "…_bs32…", "…batch32…": the batch size a file name states.
std::optional<uint32_t> batch_from_name(const std::string& path) {
  static const std::regex pattern(R"((?:^|[-_./])(?:b|bs|batch)[-_]?(\d+)(?:[-_.]|$))",
                                  std::regex::icase);
  const std::string name = path.substr(path.find_last_of('/') + 1);
  std::smatch m;
  if (!std::regex_search(name, m, pattern)) return std::nullopt;
  const unsigned long value = std::stoul(m[1].str());
  if (value == 0 || value > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(value);
}

}  // namespace

bool load_batch_model(const std::vector<std::string>& files, const std::vector<uint32_t>& batches,
                      const PolicyArgs& args, policy::BatchModel& model,
                      policy::PlanRequest& request, std::string& error, bool budget_required) {
  if ((budget_required && args.budget.empty()) ||
      (!args.budget.empty() && args.budget.back() == '%')) {
    error = "--budget: --max-batch needs a size";
    return false;
  }
  if (files.size() < 2) {
    error = "--max-batch: expected traces at two or more batch sizes";
    return false;
  }
  if (!batches.empty() && batches.size() != files.size()) {
    error = fmt::format("--batches: expected {} sizes, one per file, got {}", files.size(),
                        batches.size());
    return false;
  }
  std::vector<policy::BatchSample> samples;
  for (size_t i = 0; i < files.size(); ++i) {
    Loaded loaded;
    PolicyArgs one = args;
    one.budget.clear();  // a percentage would mean a different budget per file
    if (!load(files[i], one, loaded, error)) return false;
    request = loaded.request;
    const std::optional<uint32_t> batch =
        batches.empty() ? batch_from_name(files[i]) : std::optional<uint32_t>(batches[i]);
    if (!batch) {
      error = fmt::format("{}: no batch size in the file name (…-b32…); give --batches", files[i]);
      return false;
    }
    samples.push_back({*batch, std::move(loaded.workload)});
  }
  if (!args.budget.empty()) {
    const std::optional<uint64_t> budget = conf::parse_size(args.budget);
    if (!budget) {
      error = not_a_size(args.budget);
      return false;
    }
    request.budget_bytes = *budget;
  }
  return policy::fit_batch_model(std::move(samples), model, error);
}

bool load_at_batch(const std::vector<std::string>& files, uint32_t batch, const PolicyArgs& args,
                   Loaded& out, std::string& error) {
  if (files.size() > 1 && batch == 0) {
    error = "--batch: two or more traces give the workload fitted from them at a batch size";
    return false;
  }
  if (files.size() < 2) {
    error = "--batch: needs traces of one model at two or more batch sizes";
    return false;
  }
  PolicyArgs unbudgeted = args;
  unbudgeted.budget.clear();  // a percentage is of the fitted workload's peak: parsed below
  policy::BatchModel model;
  if (!load_batch_model(files, {}, unbudgeted, model, out.request, error,
                        /*budget_required=*/false) ||
      !load(files.back(), unbudgeted, out, error))  // the trace the fit is modelled on
    return false;
  out.workload = policy::synthesize(model, batch);
  out.workload.index();
  return parse_request(args, out.workload, out.request, out.budget_given, error);
}

std::string human_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits))
    value /= 1024, ++unit;
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string human_ns(int64_t ns) {
  const double abs_ns = std::fabs(static_cast<double>(ns));
  if (abs_ns >= 1e9) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
  if (abs_ns >= 1e6) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
  if (abs_ns >= 1e3) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  return fmt::format("{} ns", ns);
}

std::string describe_link(const policy::Link& link) {
  return fmt::format("{} ({:g} GB/s each way, {} latency per copy{})", link.name,
                     link.bandwidth_bytes_per_s / 1e9, human_ns(link.latency_ns),
                     link.duplex_contention ? ", directions share the bandwidth" : "");
}

std::string shortfall_text(const policy::Shortfall& s, const policy::Workload& w) {
  std::string largest;
  for (uint32_t t : s.largest) {
    const policy::WorkTensor& tensor = w.tensors[t];
    largest += fmt::format("{}{} ({})", largest.empty() ? "" : ", ",
                           tensor.name.empty() ? fmt::format("tensor #{}", t) : tensor.name,
                           human_bytes(tensor.size_bytes));
  }
  return fmt::format(
      "the budget cannot be met: op {} \"{}\" needs {} ({} bytes) on the device at once, {} ({} "
      "bytes) over the budget; its largest tensors: {}",
      s.op, w.ops[s.op].name, human_bytes(s.required_bytes), s.required_bytes,
      human_bytes(s.over_bytes), s.over_bytes, largest);
}

std::string render_result_text(const policy::SimResult& r, const policy::Workload& w) {
  std::string out;
  out += fmt::format(
      "peak device memory: {} ({} bytes){}\n", human_bytes(r.peak_bytes), r.peak_bytes,
      r.budget_bytes == UINT64_MAX ? std::string()
                                   : fmt::format(" of a {} budget: {}", human_bytes(r.budget_bytes),
                                                 r.fits ? "fits" : "does not fit"));
  out += fmt::format("iteration: {} ({:+.1f}% over infinite memory {}), stall {}\n",
                     human_ns(r.iteration_ns), 100 * r.overhead(), human_ns(r.infinite_memory_ns),
                     human_ns(r.stall_ns));
  out += fmt::format(
      "lower bound for any plan: {} (time-only bound {}: compute, or the bytes over the budget "
      "once across the link)\n",
      human_ns(r.lower_bound_ns), human_ns(r.time_bound_ns));
  out += fmt::format(
      "copies: {} out ({} evictions, {} forced; {} called off, {} of them planned and for "
      "nothing), {} in ({} prefetches, {} late; {} on demand)\n",
      human_bytes(r.d2h_bytes), r.evictions, r.forced_evictions, r.cancelled_evictions,
      r.wasted_evictions, human_bytes(r.h2d_bytes), r.prefetches, r.late_prefetches,
      r.demand_fetches);
  out += fmt::format("time scale: {:g} (op durations as captured x {:g})\n", r.time_scale,
                     r.time_scale);
  if (r.shortfall) out += shortfall_text(*r.shortfall, w) + "\n";
  return out;
}

void write_result_json(JsonWriter& j, const policy::SimResult& r, const policy::Workload& w) {
  j.field("link", r.link);
  j.field("time_scale", r.time_scale);
  j.key("budget_bytes");
  if (r.budget_bytes == UINT64_MAX)
    j.null();
  else
    j.value(r.budget_bytes);
  j.field("fits", r.fits);
  j.field("peak_bytes", r.peak_bytes);
  j.field("infinite_memory_peak_bytes", r.infinite_memory_peak_bytes);
  j.field("iteration_ns", r.iteration_ns);
  j.field("infinite_memory_ns", r.infinite_memory_ns);
  j.field("lower_bound_ns", r.lower_bound_ns);
  j.field("time_bound_ns", r.time_bound_ns);
  j.field("overhead", Fixed{r.overhead(), 6});
  j.field("stall_ns", r.stall_ns);
  j.field("h2d_bytes", r.h2d_bytes);
  j.field("d2h_bytes", r.d2h_bytes);
  j.field("evictions", r.evictions);
  j.field("forced_evictions", r.forced_evictions);
  j.field("prefetches", r.prefetches);
  j.field("late_prefetches", r.late_prefetches);
  j.field("demand_fetches", r.demand_fetches);
  j.field("cancelled_evictions", r.cancelled_evictions);
  j.field("wasted_evictions", r.wasted_evictions);
  j.key("shortfall");
  if (!r.shortfall) {
    j.null();
    return;
  }
  const policy::Shortfall& s = *r.shortfall;
  j.begin_object(Layout::line);
  j.field("op", s.op);
  j.field("op_name", w.ops[s.op].name);
  j.field("required_bytes", s.required_bytes);
  j.field("over_bytes", s.over_bytes);
  j.key("largest");
  j.begin_array();
  for (uint32_t t : s.largest) {
    j.begin_object();
    j.field("name", w.tensors[t].name);
    j.field("size_bytes", w.tensors[t].size_bytes);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void write_run_json(JsonWriter& j, const Loaded& l, const policy::Plan& plan, size_t entries,
                    const policy::SimResult& r) {
  const policy::Workload& w = l.workload;
  j.field("source", l.trace.source);
  j.field("format", trace::format_name(l.trace.format));
  j.field("device", w.device);
  j.key("iteration");
  if (w.iteration == trace::kNoIteration)
    j.null();
  else
    j.value(w.iteration);
  j.field("ops", w.ops.size());
  j.field("tensors", w.tensors.size());
  j.field("planner", plan.planner);
  j.field("mode", policy::mode_name(plan.mode));
  j.field("entries", entries);
  write_result_json(j, r, w);
  j.key("notes");
  j.begin_array(Layout::line);
  for (const std::string& note : w.notes)
    j.value(note);
  j.end_array();
}

bool write_out(std::FILE* out, const std::string& text) {
  return std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
}

bool write_file(const std::string& path, const std::string& text, std::string& error) {
  if (path == "-") {
    if (write_out(stdout, text)) return true;
    error = fmt::format("cannot write to stdout: {}", std::strerror(errno));
    return false;
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (file) file.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (file) file.flush();
  if (!file) {
    error = fmt::format("{}: cannot write: {}", path, std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace cuswap::cli
