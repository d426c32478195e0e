// What `plan`, `simulate`, `compare` and `export` share: the trace, budget,
// link and time-scale options, loading a trace into a workload, and the
// formatting of sizes, times and simulation reports.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "policy/batch_scaling.h"
#include "policy/planner.h"
#include "policy/simulator.h"
#include "tracer/json_quote.h"
#include "tracer/trace.h"

namespace cuswap::cli {

class JsonWriter;
using trace::json_string;

struct PolicyArgs {
  std::string budget;  // SIZE or PERCENT% of the infinite-memory peak
  std::string link{policy::kDefaultLink};
  double time_scale = 1.0;
  bool duplex_contention = false;
  int64_t iteration = -1;
  int device = -2;
  bool partial = false;
  std::string max_input;  // --max-input SIZE, "" for the default
  std::string swap_min;   // --swap-min SIZE, "" for the sizes asked
  // Refuse a trace whose ops all last 0 ns (nothing to time a plan by).
  bool require_durations = true;
  CLI::Option* link_option = nullptr;
  CLI::Option* time_scale_option = nullptr;
  CLI::Option* budget_option = nullptr;
};

// Adds --budget, --link, --time-scale, --duplex-contention, --iteration,
// --device, --partial and --swap-min.
void add_policy_options(CLI::App* sub, PolicyArgs& args);

struct Loaded {
  trace::Trace trace;
  policy::Workload workload;
  policy::PlanRequest request;
  bool budget_given = false;
  // With --swap-min, the workload is at the sizes the allocator charges
  // (Note [Charged sizes]) and these are the sizes asked, per tensor.
  std::vector<uint64_t> asked_bytes;
};

// Imports `file`, builds the workload and parses the options; false with
// one line in `error`. Without --budget the request's budget is unlimited.
[[nodiscard]] bool load(const std::string& file, const PolicyArgs& args, Loaded& out,
                        std::string& error);
// Parses the options alone against an existing workload (for the peak of
// a PERCENT% budget).
[[nodiscard]] bool parse_request(const PolicyArgs& args, const policy::Workload& workload,
                                 policy::PlanRequest& out, bool& budget_given, std::string& error);

// The plan to simulate: read from `plan_path` (its link and time scale
// apply unless given on the command line; its budget unless --budget is)
// or made by the planner named `planner`. false with one line in `error`.
[[nodiscard]] bool obtain_plan(Loaded& loaded, const PolicyArgs& args, const std::string& plan_path,
                               const std::string& planner, policy::Plan& plan,
                               std::vector<policy::ResolvedEntry>& entries, std::string& error);

std::string human_bytes(uint64_t bytes);
std::string human_ns(int64_t ns);
std::string describe_link(const policy::Link& link);

// The report of one simulation as text lines, or as members of the JSON
// object open in `j`, with the keys docs/simulator.md lists.
std::string render_result_text(const policy::SimResult& r, const policy::Workload& workload);
void write_result_json(JsonWriter& j, const policy::SimResult& r, const policy::Workload& workload);
// The members that `simulate --json` and `plan --json` share, written into
// the object open in `j`: the trace and its window, the plan (its planner,
// mode and entries resolved in the workload), the simulation's keys and the
// workload's notes.
void write_run_json(JsonWriter& j, const Loaded& l, const policy::Plan& plan, size_t entries,
                    const policy::SimResult& r);
// "the budget cannot be met: op … needs … at once, … over; its largest tensors: …"
std::string shortfall_text(const policy::Shortfall& s, const policy::Workload& w);

// For --max-batch: the traces `files` of one model, each at the batch size
// `batches` gives (or, when it is empty, its file name states: "…-b32…"),
// fitted into one model (policy/batch_scaling.h); `request` is the options'
// link and time scale with the budget `args.budget`, which must be a size
// (or, unless `budget_required`, absent: no budget). false with one line in
// `error`.
[[nodiscard]] bool load_batch_model(const std::vector<std::string>& files,
                                    const std::vector<uint32_t>& batches, const PolicyArgs& args,
                                    policy::BatchModel& model, policy::PlanRequest& request,
                                    std::string& error, bool budget_required = true);
// The workload fitted from `files` (as load_batch_model, batch sizes from
// their names) at `batch`, with the options parsed against it (a PERCENT%
// budget is of its peak) and the last file as its trace. false with one
// line in `error`.
[[nodiscard]] bool load_at_batch(const std::vector<std::string>& files, uint32_t batch,
                                 const PolicyArgs& args, Loaded& out, std::string& error);

// Writes `text` to `path` ("-" for stdout); false with one line on failure.
[[nodiscard]] bool write_file(const std::string& path, const std::string& text, std::string& error);
[[nodiscard]] bool write_out(std::FILE* out, const std::string& text);

}  // namespace cuswap::cli
