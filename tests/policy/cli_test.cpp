// The policy subcommands of the `cuswap` binary, run as a user would, on a
// committed captured trace: JSON keys, exit codes, one-line errors.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/process.h"

#ifndef CUSWAP_CLI
#error "CUSWAP_CLI must name the cuswap executable"
#endif
#ifndef CUSWAP_TEST_DATA
#error "CUSWAP_TEST_DATA must name tests/data"
#endif

namespace cuswap::policy::test {
namespace {

using Result = cuswap::testing::ProgramResult;

Result cuswap(std::vector<std::string> args) {
  args.insert(args.begin(), CUSWAP_CLI);
  return cuswap::testing::run_program(args);
}

// The smallest committed trace: a one-layer LSTM language model, TF1 timeline.
const std::string kTrace = std::string(CUSWAP_TEST_DATA) + "/tf1/lstm-l1-t32-b2.timeline.json.gz";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t lines(const std::string& text) {
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class PolicyCli : public ::testing::Test {
 protected:
  cuswap::testing::TempDir dir_;
};

TEST_F(PolicyCli, SimulateJsonHasTheKeys) {
  const Result r = cuswap({"simulate", kTrace, "--planner", "cuswap", "--budget", "60%", "--json",
                           "--time-scale", "0.5"});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  for (const char* key :
       {"peak_bytes", "iteration_ns", "infinite_memory_ns", "lower_bound_ns", "stall_ns",
        "h2d_bytes", "d2h_bytes", "time_scale", "link", "fits", "budget_bytes", "planner"}) {
    simdjson::dom::element value;
    EXPECT_EQ(doc[key].get(value), simdjson::SUCCESS) << key;
  }
  EXPECT_EQ(double(doc["time_scale"]), 0.5);
  EXPECT_EQ(std::string_view(doc["link"]), "pcie5");
  EXPECT_EQ(std::string_view(doc["planner"]), "cuswap");
  const bool fits = bool(doc["fits"]);
  EXPECT_EQ(r.exit_code, fits ? 0 : 1);
  if (fits) {
    EXPECT_LE(uint64_t(doc["peak_bytes"]), uint64_t(doc["budget_bytes"]));
  }
  EXPECT_GE(int64_t(doc["iteration_ns"]), int64_t(doc["infinite_memory_ns"]));
}

TEST_F(PolicyCli, PlanThenSimulateAgree) {
  const std::string plan = dir_.path("plan.json");
  const Result p = cuswap({"plan", kTrace, "--budget", "70%", "--planner", "seed", "-o", plan});
  ASSERT_TRUE(p.exit_code == 0 || p.exit_code == 1) << p.err;
  EXPECT_TRUE(contains(p.out, "planner: seed")) << p.out;
  EXPECT_TRUE(contains(p.out, "tensors chosen:")) << p.out;
  EXPECT_TRUE(contains(p.out, "time scale: 1")) << p.out;
  EXPECT_LE(lines(p.out), 24u);
  simdjson::dom::parser parser;
  simdjson::dom::element plan_doc;
  const std::string plan_text = read(plan);
  ASSERT_EQ(parser.parse(plan_text).get(plan_doc), simdjson::SUCCESS) << plan_text;
  EXPECT_EQ(uint64_t(plan_doc["version"]), 1u);
  const uint64_t predicted_peak = uint64_t(plan_doc["predicted"]["peak_bytes"]);
  const int64_t predicted_ns = int64_t(plan_doc["predicted"]["iteration_ns"]);

  const Result s = cuswap({"simulate", kTrace, "--plan", plan, "--json"});
  EXPECT_EQ(s.exit_code, p.exit_code) << s.err;
  simdjson::dom::parser parser2;
  simdjson::dom::element doc;
  ASSERT_EQ(parser2.parse(s.out).get(doc), simdjson::SUCCESS) << s.out;
  EXPECT_EQ(uint64_t(doc["peak_bytes"]), predicted_peak);
  EXPECT_EQ(int64_t(doc["iteration_ns"]), predicted_ns);
  EXPECT_EQ(std::string_view(doc["planner"]), "seed");
}

// A plan for the allocator, made at the sizes it charges (--swap-min): the
// file names the sizes asked, which resolve against the trace as captured,
// and `simulate --plan` with the same option predicts what `plan` did.
TEST_F(PolicyCli, APlanAtChargedSizesNamesTheSizesAsked) {
  const std::string gpu = std::string(CUSWAP_TEST_DATA) + "/gpu/torch-resnet50-v100.trace.json.gz";
  const std::string plan = dir_.path("charged.json");
  const Result p = cuswap({"plan", gpu, "--budget", "60%", "--planner", "capuchin", "--swap-min",
                           "1MiB", "--link", "pcie3", "-o", plan});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(contains(p.out, "sizes: as the allocator charges them with swap_min 1.0 MiB"))
      << p.out;
  simdjson::dom::parser parser;
  simdjson::dom::element plan_doc;
  const std::string plan_text = read(plan);
  ASSERT_EQ(parser.parse(plan_text).get(plan_doc), simdjson::SUCCESS) << plan_text;
  simdjson::dom::array entries;
  ASSERT_EQ(plan_doc["entries"].get(entries), simdjson::SUCCESS);
  ASSERT_GT(entries.size(), 0u);
  size_t unrounded = 0;  // sizes asked that are not whole pages
  for (simdjson::dom::element e : entries)
    unrounded += uint64_t(e["tensor"]["size_bytes"]) % (uint64_t{2} << 20) != 0 ? 1 : 0;
  EXPECT_GT(unrounded, 0u) << plan_text;
  const int64_t predicted_ns = int64_t(plan_doc["predicted"]["iteration_ns"]);

  const Result charged = cuswap({"simulate", gpu, "--plan", plan, "--swap-min", "1MiB", "--json"});
  ASSERT_EQ(charged.exit_code, 0) << charged.err;
  simdjson::dom::parser parser2;
  simdjson::dom::element doc;
  ASSERT_EQ(parser2.parse(charged.out).get(doc), simdjson::SUCCESS) << charged.out;
  EXPECT_EQ(int64_t(doc["iteration_ns"]), predicted_ns);
  const Result asked = cuswap({"simulate", gpu, "--plan", plan, "--json"});
  EXPECT_NE(asked.exit_code, 2) << asked.err;  // the names resolve at the sizes asked

  const Result bad = cuswap({"plan", gpu, "--budget", "60%", "--swap-min", "lots"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(contains(bad.err, "--swap-min: expected a size such as 1MiB, got \"lots\""))
      << bad.err;
}

TEST_F(PolicyCli, CompareListsEveryPlanner) {
  const Result t = cuswap({"compare", kTrace, "--budget", "60%"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* name : {"cuswap", "seed", "vdnn", "capuchin", "lru", "ondemand"})
    EXPECT_TRUE(contains(t.out, std::string("\n") + name + " ")) << name << "\n" << t.out;
  EXPECT_TRUE(contains(t.out, "time scale 1")) << t.out;
  const Result j = cuswap({"compare", kTrace, "--budget", "60%", "--json", "--link", "pcie3"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(j.out).get(doc), simdjson::SUCCESS) << j.out;
  EXPECT_EQ(std::string_view(doc["link"]), "pcie3");
  simdjson::dom::array planners;
  ASSERT_EQ(doc["planners"].get(planners), simdjson::SUCCESS);
  EXPECT_EQ(planners.size(), 6u);
  for (simdjson::dom::element p : planners) {
    simdjson::dom::element v;
    EXPECT_EQ(p["iteration_ns"].get(v), simdjson::SUCCESS);
    EXPECT_EQ(p["fits"].get(v), simdjson::SUCCESS);
  }
}

TEST_F(PolicyCli, ExportIsPerfettoJson) {
  const std::string out = dir_.path("trace.json");
  const Result r =
      cuswap({"export", kTrace, "--planner", "cuswap", "--budget", "60%", "--perfetto", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read(out);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
  simdjson::dom::array events;
  ASSERT_EQ(doc["traceEvents"].get(events), simdjson::SUCCESS);
  std::set<std::string> phases;
  for (simdjson::dom::element e : events) {
    phases.insert(std::string(std::string_view(e["ph"])));
    simdjson::dom::element v;
    EXPECT_EQ(e["pid"].get(v), simdjson::SUCCESS);
  }
  EXPECT_TRUE(phases.count("X"));
  EXPECT_TRUE(phases.count("C"));
  EXPECT_TRUE(phases.count("M"));
  EXPECT_TRUE(contains(text, "\"compute\""));
  EXPECT_TRUE(contains(text, "\"H2D copies\""));
}

// The rows of a `plan --max-batch --json` that exited 0 (empty, with a
// failure recorded, otherwise); `parser` holds them.
simdjson::dom::array max_batch_rows(const Result& r, simdjson::dom::parser& parser) {
  simdjson::dom::element doc;
  simdjson::dom::array rows;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (parser.parse(r.out).get(doc) != simdjson::SUCCESS ||
      doc["rows"].get(rows) != simdjson::SUCCESS)
    ADD_FAILURE() << "no rows in: " << r.out;
  return rows;
}

TEST_F(PolicyCli, MaxBatchTable) {
  const std::string dir = std::string(CUSWAP_TEST_DATA) + "/tf1/";
  const std::vector<std::string> files = {dir + "lstm-l1-t32-b2.timeline.json.gz",
                                          dir + "lstm-l1-t32-b4.timeline.json.gz"};
  const Result j = cuswap({"plan", "--max-batch", "--budget", "4MiB", files[0], files[1], "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(j.out).get(doc), simdjson::SUCCESS) << j.out;
  EXPECT_EQ(uint64_t(doc["budget_bytes"]), 4u << 20);
  simdjson::dom::array rows;
  ASSERT_EQ(doc["rows"].get(rows), simdjson::SUCCESS);
  ASSERT_EQ(rows.size(), 7u);
  const uint64_t without = uint64_t(rows.at(0)["max_batch"]);
  EXPECT_EQ(std::string_view(rows.at(0)["planner"]), "");
  EXPECT_EQ(std::string_view(rows.at(1)["planner"]), "cuswap");
  // cuswap plans nothing where nothing needs to move, so it reaches at
  // least the batch that fits without swapping, within the budget.
  EXPECT_GE(uint64_t(rows.at(1)["max_batch"]), without);
  EXPECT_LE(uint64_t(rows.at(1)["peak_bytes"]), 4u << 20);
  EXPECT_LE(double(rows.at(1)["overhead"]), 0.1);
  // The batch sizes come from the names (…-b2…, …-b4…).
  simdjson::dom::array batches;
  ASSERT_EQ(doc["batches"].get(batches), simdjson::SUCCESS);
  EXPECT_EQ(uint64_t(batches.at(0)), 2u);
  EXPECT_EQ(uint64_t(batches.at(1)), 4u);
  const Result t = cuswap({"plan", "--max-batch", "--budget", "4MiB", files[0], files[1]});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_TRUE(contains(t.out, "no swapping")) << t.out;
  EXPECT_TRUE(contains(t.out, "fitted from batches 2 4")) << t.out;
  // --planner asks for one planner's row, `none` for the stock row alone;
  // the rows asked for are the same as in the whole table.
  simdjson::dom::parser one_parser, none_parser;
  const simdjson::dom::array one_rows =
      max_batch_rows(cuswap({"plan", "--max-batch", "--budget", "4MiB", "--planner", "cuswap",
                             files[0], files[1], "--json"}),
                     one_parser);
  ASSERT_EQ(one_rows.size(), 2u);
  EXPECT_EQ(std::string_view(one_rows.at(1)["planner"]), "cuswap");
  EXPECT_EQ(uint64_t(one_rows.at(0)["max_batch"]), without);
  EXPECT_EQ(uint64_t(one_rows.at(1)["max_batch"]), uint64_t(rows.at(1)["max_batch"]));
  const simdjson::dom::array none_rows =
      max_batch_rows(cuswap({"plan", "--max-batch", "--budget", "4MiB", "--planner", "none",
                             files[0], files[1], "--json"}),
                     none_parser);
  ASSERT_EQ(none_rows.size(), 1u);
  EXPECT_EQ(uint64_t(none_rows.at(0)["max_batch"]), without);
}

TEST_F(PolicyCli, SimulatesTheFittedWorkloadAtABatch) {
  // What plan --max-batch found, one batch at a time: the fitted workload's
  // peak grows with the batch, and a percentage budget is of that peak.
  const std::string dir = std::string(CUSWAP_TEST_DATA) + "/tf1/";
  const std::string b2 = dir + "lstm-l4-t32-b2.step_stats.pb.gz";
  const std::string b4 = dir + "lstm-l4-t32-b4.step_stats.pb.gz";
  uint64_t peaks[2] = {};
  for (int i = 0; i < 2; ++i) {
    const Result r = cuswap({"simulate", b2, b4, "--batch", i == 0 ? "4" : "64", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
    peaks[i] = uint64_t(doc["peak_bytes"]);
  }
  EXPECT_GT(peaks[1], 4 * peaks[0]);
  const Result half = cuswap({"simulate", b2, b4, "--batch", "64", "--budget", "50%", "--json"});
  ASSERT_EQ(half.exit_code, 0) << half.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(half.out).get(doc), simdjson::SUCCESS) << half.out;
  EXPECT_LE(uint64_t(doc["peak_bytes"]), peaks[1] / 2 + 1);
  EXPECT_TRUE(bool(doc["fits"]));
  const Result alone = cuswap({"simulate", b4, "--batch", "64"});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_TRUE(contains(alone.err, "--batch: needs traces of one model")) << alone.err;
}

TEST_F(PolicyCli, MaxBatchOverheadLimitStatesTheBound) {
  // On pcie3 with op times at 1%, the 4-layer LM's largest batch is set by
  // the overhead, and the row says how much of it any plan must pay.
  const std::string dir = std::string(CUSWAP_TEST_DATA) + "/tf1/";
  const Result r = cuswap({"plan", "--max-batch", "--budget", "600MiB", "--planner", "cuswap",
                           "--link", "pcie3", "--time-scale", "0.01",
                           dir + "lstm-l4-t32-b2.step_stats.pb.gz",
                           dir + "lstm-l4-t32-b4.step_stats.pb.gz"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "% (any plan's at least ")) << r.out;
}

TEST_F(PolicyCli, InfeasibleBudgetIsAReport) {
  // 1 KiB cannot hold what any op of the model needs at once.
  const Result r = cuswap({"plan", kTrace, "--budget", "1KiB", "-o", dir_.path("p.json")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.out, "the budget cannot be met: op ")) << r.out;
  EXPECT_TRUE(contains(r.out, "over the budget; its largest tensors: ")) << r.out;
  EXPECT_TRUE(contains(r.err, "cannot be met")) << r.err;
  const Result s = cuswap({"simulate", kTrace, "--budget", "1KiB", "--json"});
  EXPECT_EQ(s.exit_code, 1) << s.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(s.out).get(doc), simdjson::SUCCESS) << s.out;
  EXPECT_FALSE(bool(doc["fits"]));
  EXPECT_EQ(uint64_t(doc["shortfall"]["over_bytes"]),
            uint64_t(doc["shortfall"]["required_bytes"]) - 1024u);
}

TEST_F(PolicyCli, SimulateWithoutABudgetGivesTheInfiniteMemoryFigures) {
  const Result r = cuswap({"simulate", kTrace, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  EXPECT_EQ(uint64_t(doc["entries"]), 0u);
  EXPECT_GT(int64_t(doc["infinite_memory_ns"]), 0);
  EXPECT_EQ(int64_t(doc["iteration_ns"]), int64_t(doc["infinite_memory_ns"]));
  EXPECT_EQ(uint64_t(doc["peak_bytes"]), uint64_t(doc["infinite_memory_peak_bytes"]));
  EXPECT_EQ(uint64_t(doc["h2d_bytes"]) + uint64_t(doc["d2h_bytes"]), 0u);
}

TEST_F(PolicyCli, HelpEverywhere) {
  for (const char* sub : {"plan", "simulate", "compare", "export"}) {
    const Result r = cuswap({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_TRUE(contains(r.out, "--budget")) << sub;
  }
}

TEST_F(PolicyCli, BadInputIsOneLineAndExitTwo) {
  const std::string bad_plan = dir_.path("bad.json");
  std::ofstream(bad_plan) << "{\"version\": 1, \"planner\": 3}";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"simulate", kTrace, "--budget", "lots"}, "--budget"},
      {{"simulate", kTrace, "--budget", "1GiB", "--planner", "magic"}, "--planner"},
      {{"simulate", kTrace, "--budget", "1GiB", "--link", "carrier-pigeon"}, "--link"},
      {{"simulate", dir_.path("missing.json"), "--budget", "1GiB"}, "missing.json"},
      {{"simulate", kTrace, "--plan", bad_plan}, "bad.json: key planner: expected a string"},
      {{"plan", kTrace, "-o", dir_.path("p.json")}, "--budget"},
      {{"plan", "--max-batch", "--budget", "1GiB", kTrace, kTrace, "--batches", "2,2"},
       "two or more different batch sizes"},
      {{"plan", "--max-batch", "--budget", "1GiB", kTrace, kTrace, "--batches", "2,4", "--planner",
        "magic"},
       "--planner: expected none or one of"},
      {{"export", kTrace, "-o", dir_.path("x.json")}, "--perfetto"},
  };
  for (const auto& [args, expected] : cases) {
    const Result r = cuswap(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << expected << ": " << r.err;
    EXPECT_TRUE(contains(r.err, expected)) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
  }
}

}  // namespace
}  // namespace cuswap::policy::test
