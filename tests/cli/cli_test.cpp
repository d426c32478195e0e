// The `cuswap` command line as a whole, run as a user would: the list of
// commands and `help`, the version line, usage errors (one line on stderr,
// exit 2), errors printed once by main (exit 1 when the output cannot be
// written), --json on every command that prints a result, and options that
// take lists without swallowing the file names after them.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "policy/plan.h"
#include "tests/support/process.h"
#include "tracer/cst_format.h"

#ifndef CUSWAP_CLI
#error "CUSWAP_CLI must name the cuswap executable"
#endif
#ifndef CUSWAP_TEST_DATA
#error "CUSWAP_TEST_DATA must name tests/data"
#endif
#ifndef CUSWAP_PROJECT_VERSION
#error "CUSWAP_PROJECT_VERSION must be the project's version"
#endif

namespace cuswap::cli::test {
namespace {

using Result = cuswap::testing::ProgramResult;

Result cuswap(std::vector<std::string> args) {
  args.insert(args.begin(), CUSWAP_CLI);
  return cuswap::testing::run_program(args);
}

// Runs cuswap through the shell, with stdout sent to `out`.
Result cuswap_to(const std::string& out, const std::string& args) {
  return cuswap::testing::run_program(
      {"/bin/sh", "-c", fmt::format("exec '{}' {} >'{}'", CUSWAP_CLI, args, out)});
}

const std::string kData = std::string(CUSWAP_TEST_DATA) + "/tf1/";
// The smallest committed trace, and the same model at a second batch size.
const std::string kTrace = kData + "lstm-l1-t32-b2.timeline.json.gz";
const std::string kTraceB4 = kData + "lstm-l1-t32-b4.timeline.json.gz";

const std::vector<std::string> kCommands = {"inspect", "plan",   "simulate", "compare", "export",
                                            "report",  "replay", "run",      "help"};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t lines(const std::string& text) {
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

// One line on stderr, the project's error form, exit 2.
void expect_usage_error(const Result& r, const std::string& part) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("cuswap: error: ", 0), 0u) << r.err;
  EXPECT_TRUE(contains(r.err, part)) << r.err;
}

bool parses(const std::string& json, simdjson::dom::parser& parser, simdjson::dom::element& doc) {
  return parser.parse(json).get(doc) == simdjson::SUCCESS && doc.is_object();
}

TEST(CliUsage, AnUnknownCommandIsNamedAndTheCommandsListed) {
  const Result r = cuswap({"frobnicate"});
  expect_usage_error(r, "\"frobnicate\" is not a cuswap command");
  for (const std::string& command : kCommands)
    EXPECT_TRUE(contains(r.err, command)) << command << ": " << r.err;
  // After cuswap's own options too.
  expect_usage_error(cuswap({"--version-typo", "frobnicate", kTrace}),
                     "\"frobnicate\" is not a cuswap command");
}

TEST(CliUsage, AnUnknownOptionIsNamed) {
  const Result r = cuswap({"inspect", kTrace, "--no-such-flag"});
  expect_usage_error(r, "--no-such-flag");
  EXPECT_EQ(r.err.rfind("cuswap: error: inspect: ", 0), 0u) << r.err;
  expect_usage_error(cuswap({"plan", kTrace, "--budget", "60%", "--top", "3"}), "--top");
  expect_usage_error(cuswap({"--bogus"}), "--bogus");
  expect_usage_error(cuswap({"inspect"}), "file is required");
  expect_usage_error(cuswap({"inspect", kTrace, "--top", "0"}), "--top");
  // 1.4 GiB is not whole bytes (1.5 GiB is): the line says why.
  expect_usage_error(cuswap({"simulate", kTrace, "--budget", "1.4GiB"}),
                     "got \"1.4GiB\": its fraction does not come to whole bytes");
  expect_usage_error(cuswap({"simulate", kTrace, "--budget", "1.4XiB"}), "got \"1.4XiB\"");
  EXPECT_FALSE(contains(cuswap({"simulate", kTrace, "--budget", "1.4XiB"}).err, "fraction"));
}

// `cuswap run` checks its own options before it starts anything.
TEST(CliUsage, RunSaysWhatIsWrongBeforeItStartsTheCommand) {
  const std::string never = "/nonexistent/never-started";
  expect_usage_error(cuswap({"run", "--budget", "12GB/", "--", never}),
                     "--budget 12GB/: not a size");
  expect_usage_error(cuswap({"run", "--plan", "/nonexistent/plan.json", "--", never}),
                     "/nonexistent/plan.json");
  expect_usage_error(cuswap({"run", "--plan", kTrace, "--", never}), "--plan: ");
  expect_usage_error(cuswap({"run", "--record", "/nonexistent/dir/run.cst", "--", never}),
                     "/nonexistent/dir is not a directory");
  expect_usage_error(cuswap({"run", "--record", "a,b.cst", "--", never}), "a path with a comma");
  expect_usage_error(cuswap({"run", "--budgte", "1G", never}), "unknown option --budgte");
  expect_usage_error(cuswap({"run"}), "no command");
  expect_usage_error(cuswap({"run", "--"}), "no command");
}

// `cuswap report` says what is wrong in one line and writes nothing.
TEST(CliUsage, ReportSaysWhatIsWrong) {
  const std::string page = std::filesystem::temp_directory_path() / "cuswap-cli-report.html";
  std::filesystem::remove(page);
  expect_usage_error(cuswap({"report", "-o", page}), "file is required");
  expect_usage_error(cuswap({"report", kTrace}), "--output is required");
  expect_usage_error(cuswap({"report", kTrace, "--planner", "seed", "-o", page}),
                     "--budget: a budget is required");
  expect_usage_error(cuswap({"report", kTrace, "--budget", "50%", "--planner", "nope", "-o", page}),
                     "--planner: expected one of");
  expect_usage_error(cuswap({"report", kTrace, kTraceB4, "--budget", "50%", "-o", page}),
                     "expected one trace file (or --max-batch), got 2");
  expect_usage_error(
      cuswap({"report", kTrace, kTraceB4, "--max-batch", "--budget", "50%", "-o", page}),
      "--budget: --max-batch needs a size");
  expect_usage_error(cuswap({"report", kData + "none.json", "-o", page}), "none.json");
  EXPECT_FALSE(std::filesystem::exists(page));
  const Result r = cuswap({"report", kTrace, "-o", "/nonexistent/dir/page.html"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "/nonexistent/dir/page.html")) << r.err;
}

// The page of every kind of input: one trace without a budget (nothing
// moves, no planners), with one, and traces at two batch sizes.
TEST(CliReport, ThePageHasTheSectionsItsInputAsksFor) {
  const Result bare = cuswap({"report", kTrace, "-o", "-"});
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_TRUE(contains(bare.out, "No budget was given")) << bare.out.substr(0, 2000);
  EXPECT_FALSE(contains(bare.out, "<section id=\"planners\">"));
  const Result planned = cuswap({"report", kTrace, "--budget", "60%", "-o", "-"});
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  for (const char* part :
       {"<section id=\"memory\">", "<section id=\"lanes\">", "<section id=\"planners\">",
        "<section id=\"tensors\">", "with cuswap&#39;s plan under the budget", "class=\"budget\""})
    EXPECT_TRUE(contains(planned.out, part)) << part;
  for (const char* planner : {"cuswap", "seed", "vdnn", "capuchin", "lru", "ondemand"})
    EXPECT_TRUE(contains(planned.out, fmt::format("<tr><td>{}</td>", planner))) << planner;
  const Result batches =
      cuswap({"report", kTrace, kTraceB4, "--max-batch", "--budget", "4MiB", "-o", "-"});
  ASSERT_EQ(batches.exit_code, 0) << batches.err;
  EXPECT_TRUE(contains(batches.out, "<section id=\"batches\">"));
  EXPECT_TRUE(contains(batches.out, "Fitted from traces at batch 2, 4"));
  EXPECT_TRUE(contains(batches.out, "<tr><td>no swapping</td>"));
}

TEST(CliUsage, NoCommandIsAnError) {
  const Result r = cuswap({});
  expect_usage_error(r, "expected a command");
  EXPECT_TRUE(contains(r.err, "inspect, plan")) << r.err;
}

TEST(CliUsage, HelpListsEachCommandOnOneLine) {
  const Result r = cuswap({"help"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const std::string& command : kCommands) {
    const std::regex line("\n  " + command + " +[A-Z][^\n]*\\.\n");
    EXPECT_TRUE(std::regex_search(r.out, line)) << command << "\n" << r.out;
  }
  // Nothing else is indented like a command: no description wraps.
  const std::regex indented("\n  \\S");
  const auto n = std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), indented),
                               std::sregex_iterator());
  EXPECT_EQ(size_t(n), kCommands.size()) << r.out;
}

TEST(CliUsage, HelpCommandIsTheCommandsHelp) {
  for (const char* command : {"inspect", "plan", "simulate", "compare", "export"}) {
    const Result help = cuswap({"help", command});
    const Result flag = cuswap({command, "--help"});
    EXPECT_EQ(help.exit_code, 0) << command << ": " << help.err;
    EXPECT_EQ(flag.exit_code, 0) << command << ": " << flag.err;
    EXPECT_TRUE(contains(help.out, std::string("Usage: cuswap ") + command)) << help.out;
    EXPECT_EQ(help.out, flag.out) << command;
  }
  const Result replay = cuswap({"help", "replay"});
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_TRUE(contains(replay.out, "cuswap-replay")) << replay.out;
}

TEST(CliUsage, HelpOfAnUnknownCommandIsTheSameError) {
  const Result help = cuswap({"help", "nosuch"});
  expect_usage_error(help, "\"nosuch\" is not a cuswap command");
  EXPECT_EQ(help.err, cuswap({"nosuch"}).err);
}

TEST(CliUsage, VersionNamesTheFileFormats) {
  const Result r = cuswap({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            fmt::format("cuswap {} (trace format {}.{}, plan format {})\n", CUSWAP_PROJECT_VERSION,
                        trace::cst::kFormatMajor, trace::cst::kFormatMinor, policy::kPlanVersion));
}

TEST(CliJson, EveryCommandThatPrintsAResultPrintsJson) {
  const std::vector<std::vector<std::string>> runs = {
      {"inspect", kTrace, "--json"},
      {"plan", kTrace, "--budget", "70%", "--json"},
      {"plan", "--max-batch", "--budget", "4MiB", kTrace, kTraceB4, "--json"},
      {"simulate", kTrace, "--json"},
      {"compare", kTrace, "--budget", "60%", "--json"},
  };
  for (const std::vector<std::string>& args : runs) {
    const Result r = cuswap(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << args[0] << ": " << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    EXPECT_TRUE(parses(r.out, parser, doc)) << args[0] << ": " << r.out;
  }
}

TEST(CliJson, PlanSummaryAsJson) {
  cuswap::testing::TempDir dir;
  const std::string plan = dir.path("plan.json");
  const Result r =
      cuswap({"plan", kTrace, "--budget", "70%", "--planner", "seed", "--json", "-o", plan});
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_TRUE(parses(r.out, parser, doc)) << r.out;
  EXPECT_EQ(std::string_view(doc["planner"]), "seed");
  EXPECT_EQ(std::string_view(doc["output"]), plan);
  EXPECT_EQ(std::string_view(doc["format"]), "tf1-timeline");
  EXPECT_EQ(r.exit_code, bool(doc["fits"]) ? 0 : 1);
  for (const char* key : {"peak_bytes", "iteration_ns", "infinite_memory_ns", "budget_bytes",
                          "entries", "groups", "out_bytes", "in_bytes", "time_scale", "link"}) {
    simdjson::dom::element value;
    EXPECT_EQ(doc[key].get(value), simdjson::SUCCESS) << key;
  }
  // The summary's figures are the plan file's.
  simdjson::dom::parser plan_parser;
  simdjson::dom::element plan_doc;
  ASSERT_EQ(plan_parser.load(plan).get(plan_doc), simdjson::SUCCESS);
  EXPECT_EQ(uint64_t(doc["peak_bytes"]), uint64_t(plan_doc["predicted"]["peak_bytes"]));
  EXPECT_EQ(uint64_t(doc["entries"]), simdjson::dom::array(plan_doc["entries"]).size());

  // Without -o nothing is written; with -o - the plan takes stdout and the
  // summary goes to stderr.
  const Result bare = cuswap({"plan", kTrace, "--budget", "70%", "--planner", "seed", "--json"});
  simdjson::dom::parser bare_parser;
  ASSERT_TRUE(parses(bare.out, bare_parser, doc)) << bare.out;
  EXPECT_TRUE(doc["output"].is_null());
  const Result piped =
      cuswap({"plan", kTrace, "--budget", "70%", "--planner", "seed", "--json", "-o", "-"});
  simdjson::dom::parser piped_parser;
  ASSERT_TRUE(parses(piped.out, piped_parser, doc)) << piped.out;
  EXPECT_EQ(uint64_t(doc["version"]), uint64_t(policy::kPlanVersion));
  EXPECT_TRUE(contains(piped.err, "\"output\": \"-\"")) << piped.err;
}

TEST(CliOptions, BatchesTakeOneCommaSeparatedValue) {
  // The sizes given are the ones used, not the names' (…-b2…, …-b4…).
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", "--max-batch", "--budget", "4MiB", "--batches", "8,16",
                                 kTrace, kTraceB4, "--json"},
        std::vector<std::string>{"plan", "--max-batch", "--budget", "4MiB", kTrace, "--batches",
                                 "8,16", kTraceB4, "--json"}}) {
    const Result r = cuswap(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_TRUE(parses(r.out, parser, doc)) << r.out;
    simdjson::dom::array batches = doc["batches"];
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(uint64_t(batches.at(0)), 8u);
    EXPECT_EQ(uint64_t(batches.at(1)), 16u);
  }
  // Separated by spaces, the second size is taken for a file and the
  // counts disagree: said in one line, not a file name read as a number.
  expect_usage_error(
      cuswap({"plan", "--max-batch", "--budget", "4MiB", "--batches", "2", "4", kTrace, kTraceB4}),
      "--batches: expected 3 sizes, one per file, got 1");
  EXPECT_TRUE(contains(cuswap({"plan", "--help"}).out, "--batches 2,4"));
}

TEST(CliErrors, AnOutputThatCannotBeWrittenExitsOne) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  for (const std::string& args :
       {fmt::format("inspect '{}'", kTrace), fmt::format("simulate '{}'", kTrace),
        fmt::format("compare '{}' --budget 60%", kTrace),
        fmt::format("plan '{}' --budget 70% --planner seed --json", kTrace),
        fmt::format("plan --max-batch --budget 4MiB '{}' '{}'", kTrace, kTraceB4)}) {
    const Result r = cuswap_to("/dev/full", args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.err;
    EXPECT_EQ(r.err, "cuswap: error: cannot write the output: No space left on device\n") << args;
  }
  const Result plan = cuswap({"plan", kTrace, "--budget", "70%", "-o", "/dev/full"});
  EXPECT_EQ(plan.exit_code, 1);
  EXPECT_EQ(plan.err, "cuswap: error: /dev/full: cannot write: No space left on device\n");
}

}  // namespace
}  // namespace cuswap::cli::test
