// cuswap-replay --max-batch: at a fixed device memory, the largest batch
// scale each policy completes (and completes within 10% of the
// infinite-memory time), by real replays.
//
// Note [Replay batch search]
// Each replay costs seconds, so the search is short: scales 1/4, 1/2, 1, 2,
// 4, 8, 16 upwards until a policy fails, then two bisections between the
// last scale that passed and the first that failed. A run passes when it
// completes with no integrity error and no hazard. The infinite-memory time
// of each scale is measured once and shared by the policies. Runs are three
// iterations, online ones six (it follows its plan from the fourth).
#include <map>

#include <fmt/format.h>

#include "bench/replay/replay.h"
#include "cli/commands.h"

namespace cuswap::bench {

namespace {

constexpr double kScales[] = {0.25, 0.5, 1, 2, 4, 8, 16};
constexpr int kBisections = 2;
constexpr double kMaxOverhead = 0.10;

struct Trial {
  bool passed = false;
  std::optional<int64_t> ns;
};

struct Row {
  std::string policy;
  double max_scale = 0, max_scale_fast = 0;  // 0: not even the smallest
  std::optional<int64_t> ns_at_max;
  double overhead_at_max = 0;
  std::string limit;
};

// Note [Replay batch search] at one device memory and budget (set in
// `o_`): each policy's row, the infinite-memory time of each scale measured
// once and shared.
class Search {
 public:
  Search(const ReplayOptions& given, const ReplayOptions& o) : given_(given), o_(o) {}

  Row row(const std::string& policy) {
    Row row;
    row.policy = policy;
    double pass = 0, fail = 0;
    for (double scale : kScales) {
      std::string why;
      const Trial t = try_scale(policy, scale, why);
      if (!t.passed) {
        fail = scale;
        row.limit = fmt::format("at scale {}: {}", scale, why);
        break;
      }
      pass = scale;
      record(row, scale, t);
    }
    for (int i = 0; i < kBisections && fail > 0 && pass > 0; ++i) {
      const double mid = (pass + fail) / 2;
      std::string why;
      const Trial t = try_scale(policy, mid, why);
      if (t.passed) {
        pass = mid;
        record(row, mid, t);
      } else {
        fail = mid;
        row.limit = fmt::format("at scale {}: {}", mid, why);
      }
    }
    if (fail == 0)
      row.limit = fmt::format("still passing at scale {}", kScales[std::size(kScales) - 1]);
    return row;
  }

 private:
  // One replay of `policy` at `scale`; `why` says why it did not pass.
  Trial try_scale(const std::string& policy, double scale, std::string& why) {
    Trial t;
    Prepared p;
    PolicyRun run;
    if (!prepare(o_, scale, p, why) || !prepare_policy(p, policy, run, why)) return t;
    // Online planning takes over a few iterations in: its steady state
    // needs the default six.
    ReplayOptions runs = o_;
    if (policy == "online") runs.iterations = std::max<uint32_t>(given_.iterations, 6);
    const RunResult r = run_policy(runs, p, run);
    if (!infinite_.count(scale)) infinite_[scale] = median_steady_ns(run_infinite(o_, p));
    t.passed = r.completed && r.integrity_errors == 0 && r.hazards == 0;
    if (!t.passed)
      why = !r.error.empty()
                ? r.error
                : fmt::format("{} integrity errors, {} hazards", r.integrity_errors, r.hazards);
    t.ns = median_steady_ns(r);
    return t;
  }

  // A scale that passed: the row's largest, and its largest within
  // kMaxOverhead of infinite memory.
  void record(Row& row, double scale, const Trial& t) {
    const std::optional<int64_t> inf = infinite_[scale];
    const double overhead = t.ns && inf && *inf > 0
                                ? static_cast<double>(*t.ns - *inf) / static_cast<double>(*inf)
                                : 1e9;
    if (scale > row.max_scale) {
      row.max_scale = scale;
      row.ns_at_max = t.ns;
      row.overhead_at_max = overhead;
    }
    if (overhead <= kMaxOverhead && scale > row.max_scale_fast) row.max_scale_fast = scale;
  }

  const ReplayOptions& given_;
  const ReplayOptions& o_;
  std::map<double, std::optional<int64_t>> infinite_;
};

void print_json(const ReplayOptions& o, const Prepared& base, const std::vector<Row>& rows) {
  std::string text = fmt::format(
      "{{\n  \"trace\": {},\n  \"device_memory_bytes\": {},\n  \"budget_bytes\": {},\n"
      "  \"rows\": [",
      cli::json_string(o.trace), base.device_memory_bytes, base.budget_bytes);
  for (size_t i = 0; i < rows.size(); ++i)
    text += fmt::format(
        "{}\n    {{\"policy\": {}, \"max_batch_scale\": {}, \"max_batch_scale_within_10pct\": "
        "{}, "
        "\"iteration_ns\": {}, \"overhead\": {}, \"limit\": {}}}",
        i ? "," : "", cli::json_string(rows[i].policy), rows[i].max_scale, rows[i].max_scale_fast,
        rows[i].ns_at_max ? fmt::format("{}", *rows[i].ns_at_max) : "null",
        rows[i].ns_at_max ? fmt::format("{:.4f}", rows[i].overhead_at_max) : "null",
        cli::json_string(rows[i].limit));
  fmt::print("{}\n  ]\n}}\n", text);
}

void print_text(const ReplayOptions& o, const Prepared& base, const std::vector<Row>& rows) {
  fmt::print("{}: device memory {}, budget {}\n", o.trace,
             cli::human_bytes(base.device_memory_bytes), cli::human_bytes(base.budget_bytes));
  fmt::print("{:<10} {:>10} {:>14} {:>14} {:>9}  {}\n", "policy", "max scale", "within 10%",
             "iteration", "overhead", "limit");
  for (const Row& r : rows)
    fmt::print("{:<10} {:>10} {:>14} {:>14} {:>8.1f}%  {}\n", r.policy, r.max_scale,
               r.max_scale_fast, r.ns_at_max ? cli::human_ns(*r.ns_at_max) : "-",
               r.ns_at_max ? 100 * r.overhead_at_max : 0.0, r.limit);
}

}  // namespace

int run_max_batch(const ReplayOptions& given) {
  ReplayOptions o = given;
  if (o.iterations > 3) o.iterations = 3;
  // The device memory (and budget) are fixed at what scale 1 gives.
  Prepared base;
  std::string error;
  if (!prepare(o, 1.0, base, error)) {
    fmt::print(stderr, "cuswap-replay: error: {}\n", error);
    return cli::kExitBadInput;
  }
  o.device_memory = fmt::format("{}", base.device_memory_bytes);
  o.policy_args.budget = fmt::format("{}", base.budget_bytes);
  Search search(given, o);
  std::vector<Row> rows;
  for (const std::string policy : {"none", "reactive", "online", "cuswap"})
    rows.push_back(search.row(policy));
  if (o.json) {
    print_json(o, base, rows);
  } else {
    print_text(o, base, rows);
  }
  return cli::kExitOk;
}

}  // namespace cuswap::bench
