// The `cuswap` binary, run as a user would, on the fixture trace (Note [The
// fixture] in support.h): text and JSON output, exit codes, error lines.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <regex>

#include "tests/tracer/support.h"

#ifndef CUSWAP_CLI
#error "CUSWAP_CLI must name the cuswap executable"
#endif

namespace cuswap::trace::test {
namespace {

using namespace fixture;

using Result = cuswap::testing::ProgramResult;

Result cuswap(std::vector<std::string> args) {
  args.insert(args.begin(), CUSWAP_CLI);
  return cuswap::testing::run_program(args);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t lines(const std::string& text) {
  return size_t(std::count(text.begin(), text.end(), '\n'));
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override { write_fixture(path_); }
  TempDir dir_;
  std::string path_ = dir_.path("fixture.cst");
};

TEST_F(Cli, InspectTextHasTheNumbers) {
  const Result r = cuswap({"inspect", path_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(contains(r.out, path_ + ": complete cuswap trace, format 2.1")) << r.out;
  EXPECT_TRUE(contains(r.out, "written by cuswap 0.1.0-test")) << r.out;
  EXPECT_TRUE(contains(r.out, "device 0: Test GPU, 8.0 GiB")) << r.out;
  EXPECT_TRUE(contains(r.out, "buffers: 8 allocated")) << r.out;
  EXPECT_TRUE(contains(r.out, "peak live: 96468992 bytes (92.0 MiB)")) << r.out;
  EXPECT_TRUE(contains(r.out, "live at end: 2 buffers, 71303168 bytes")) << r.out;
  EXPECT_TRUE(contains(r.out, "launches: 9 of 3 kernels (3 with unknown access")) << r.out;
  EXPECT_TRUE(contains(r.out, "iterations: 3\n")) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n +3  matmul\n)"))) << r.out;
  // The weights: buffer 1, 64 MiB, live at the end, used by three launches.
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex(R"(\n +1 +67108864 +64\.0 MiB .* live at end +3\n)")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(host_to_device +1 +8388608)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(device_to_host +3 +12582912)"))) << r.out;
  EXPECT_TRUE(contains(r.out, "cuLaunchKernel")) << r.out;
  EXPECT_TRUE(contains(r.out, "0 dropped events")) << r.out;
}

TEST_F(Cli, InspectJsonIsOneObjectWithTheNumbers) {
  const Result r = cuswap({"inspect", path_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(std::string_view(doc["format"]), "cst");
  EXPECT_EQ(std::string_view(doc["format_version"]), "2.1");
  EXPECT_EQ(uint64_t(doc["buffers"]), kBuffers);
  EXPECT_EQ(uint64_t(doc["peak_bytes"]), kPeakBytes);
  EXPECT_EQ(uint64_t(doc["launches"]), kLaunches);
  EXPECT_EQ(uint64_t(doc["iterations"]), kIterations);
  EXPECT_EQ(uint64_t(doc["events"]), kEvents);
  EXPECT_TRUE(bool(doc["complete"]));
  EXPECT_EQ(uint64_t(doc["live_at_end"]["bytes"]), kLiveBytesAtEnd);
  simdjson::dom::array iterations = doc["per_iteration"];
  ASSERT_EQ(iterations.size(), kIterations);
  for (simdjson::dom::element it : iterations) {
    EXPECT_EQ(uint64_t(it["launches"]), 3u);
    EXPECT_EQ(uint64_t(it["peak_bytes"]), kPeakBytes);
  }
  simdjson::dom::element weights = doc["top_buffers"].at(0);
  EXPECT_EQ(uint64_t(weights["id"]), 1u);
  EXPECT_TRUE(weights["free_time_ns"].is_null());
  EXPECT_TRUE(bool(weights["live_at_end"]));
  EXPECT_EQ(uint64_t(doc["copies"]["device_to_host"]["bytes"]), kDeviceToHostBytes);
  EXPECT_EQ(uint64_t(doc["sets"]["bytes"]), kSetBytes);
  EXPECT_EQ(uint64_t(doc["end"]["counters"]["cuMemAlloc_v2"]), 8u);
  EXPECT_EQ(std::string_view(doc["top_kernels"].at(0)["name"]), "matmul");
}

TEST_F(Cli, CorruptFileExitsTwoWithOneLineNamingTheOffset) {
  std::vector<uint8_t> bytes = read_bytes(path_);
  const size_t at = bytes.size() - 10;  // inside the end record
  bytes[at] ^= 0x40;
  const std::string bad = dir_.path("bad.cst");
  write_bytes(bad, bytes);
  CstTrace trace;
  std::string expected;
  ASSERT_FALSE(read_cst_file(bad, {}, trace, expected));

  for (const auto& args : {std::vector<std::string>{"inspect", bad},
                           std::vector<std::string>{"inspect", "--json", bad}}) {
    const Result r = cuswap(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err, "cuswap: error: " + expected + "\n");
    EXPECT_TRUE(std::regex_search(r.err, std::regex(bad + R"(: offset \d+: )"))) << r.err;
  }
}

TEST_F(Cli, TruncatedFileExitsTwoUnlessPartial) {
  std::vector<uint8_t> bytes = read_bytes(path_);
  bytes.resize(bytes.size() - 7);
  const std::string cut = dir_.path("cut.cst");
  write_bytes(cut, bytes);
  const Result strict = cuswap({"inspect", cut});
  EXPECT_EQ(strict.exit_code, 2);
  EXPECT_EQ(lines(strict.err), 1u) << strict.err;
  EXPECT_TRUE(contains(strict.err, cut + ": offset ")) << strict.err;

  const Result partial = cuswap({"inspect", "--partial", cut});
  EXPECT_EQ(partial.exit_code, 0) << partial.err;
  EXPECT_TRUE(contains(partial.out, "INCOMPLETE")) << partial.out;
  EXPECT_TRUE(contains(partial.out, "buffers: 8 allocated")) << partial.out;
  const Result json = cuswap({"inspect", "--partial", "--json", cut});
  EXPECT_EQ(json.exit_code, 0);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json.out).get(doc), simdjson::SUCCESS) << json.out;
  EXPECT_FALSE(bool(doc["complete"]));
  EXPECT_TRUE(doc["end"].is_null());
}

TEST_F(Cli, MissingFileExitsTwo) {
  const std::string missing = dir_.path("missing.cst");
  const Result r = cuswap({"inspect", missing});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "cuswap: error: " + missing + ": cannot read: No such file or directory\n");
}

TEST_F(Cli, HelpAndBadUsage) {
  const Result help = cuswap({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "inspect")) << help.out;
  const Result inspect_help = cuswap({"inspect", "--help"});
  EXPECT_EQ(inspect_help.exit_code, 0);
  EXPECT_TRUE(contains(inspect_help.out, "--json")) << inspect_help.out;
  EXPECT_TRUE(contains(inspect_help.out, "--partial")) << inspect_help.out;
  EXPECT_EQ(cuswap({}).exit_code, 2);
  EXPECT_EQ(cuswap({"inspect"}).exit_code, 2);
  EXPECT_EQ(cuswap({"inspect", path_, "--no-such-flag"}).exit_code, 2);
  EXPECT_EQ(cuswap({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(cuswap({"inspect", path_, "--top", "0"}).exit_code, 2);
  const Result version = cuswap({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_FALSE(version.out.empty());
}

TEST_F(Cli, JsonStaysValidForAnyKernelName) {
  const std::string odd = dir_.path("odd.cst");
  std::string error;
  auto r = Recorder::open(options_for(odd), error);
  ASSERT_TRUE(r) << error;
  const std::string names[] = {"quote\" backslash\\ tab\t newline\n", "bad utf-8 \xff\xfe end",
                               "caf\xc3\xa9", std::string("nul\0byte", 8)};
  for (const std::string& n : names)
    r->record_launch(r->kernel_id(n), 0, 0, {}, 0);
  r->close();
  const Result run = cuswap({"inspect", "--json", odd});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(run.out).get(doc), simdjson::SUCCESS) << run.out;
  std::set<std::string> seen;
  for (simdjson::dom::element k : doc["top_kernels"].get_array())
    seen.insert(std::string(std::string_view(k["name"])));
  EXPECT_TRUE(seen.count(names[0]));
  EXPECT_TRUE(seen.count("caf\xc3\xa9"));
  EXPECT_TRUE(seen.count(names[3]));
  EXPECT_TRUE(seen.count("bad utf-8 \xef\xbf\xbd\xef\xbf\xbd end"));
}

}  // namespace
}  // namespace cuswap::trace::test
