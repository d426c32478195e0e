// `cuswap inspect` on imported formats, run as a user would: every fixture
// with --json (the figures of expected.json), text output, and bad files
// (exit 2, one line naming the file and the offset).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>

#include "tests/support/process.h"
#include "tests/tracer/import/fixtures.h"

#ifndef CUSWAP_CLI
#error "CUSWAP_CLI must name the cuswap executable"
#endif

namespace cuswap::trace::import_test {
namespace {

using cuswap::testing::ProgramResult;

ProgramResult cuswap(std::vector<std::string> args) {
  args.insert(args.begin(), CUSWAP_CLI);
  return cuswap::testing::run_program(args);
}

class InspectJson : public ::testing::TestWithParam<Expected> {};

TEST_P(InspectJson, GivesTheSourcesFigures) {
  const Expected& e = GetParam();
  const ProgramResult r = cuswap({"inspect", "--json", e.path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(r.out).get(doc), simdjson::SUCCESS) << r.out;
  std::string_view format;
  uint64_t launches = 0, peak = 0, buffers = 0, iterations = 0;
  bool sampled = false;
  ASSERT_EQ(doc["format"].get(format), simdjson::SUCCESS);
  ASSERT_EQ(doc["launches"].get(launches), simdjson::SUCCESS);
  ASSERT_EQ(doc["peak_bytes"].get(peak), simdjson::SUCCESS);
  ASSERT_EQ(doc["buffers"].get(buffers), simdjson::SUCCESS);
  ASSERT_EQ(doc["iterations"].get(iterations), simdjson::SUCCESS);
  ASSERT_EQ(doc["sampled"].get(sampled), simdjson::SUCCESS);
  EXPECT_EQ(format, e.format);
  // GPU captures count device work too (golden_test.cpp says how).
  EXPECT_EQ(launches, e.ops + e.device_ops - e.aggregate_events - e.joinable_kernels);
  // Without a count of the source's own, the peak of its events' running sum.
  EXPECT_EQ(peak, e.reported_peak_bytes ? e.reported_peak_bytes : e.running_peak_bytes.value_or(0));
  EXPECT_EQ(sampled, e.format == "tf2-memory-profile");
  if (e.format == "tf1-timeline" || e.format == "tf1-step-stats") {
    EXPECT_EQ(buffers, e.tensors);
  }
  if (e.allocator.empty()) return;  // captured without memory events
  // The allocator the figures are about is listed as the device's, with
  // that peak.
  simdjson::dom::array allocators;
  ASSERT_EQ(doc["allocators"].get(allocators), simdjson::SUCCESS);
  bool found = false;
  for (simdjson::dom::element a : allocators) {
    std::string_view name, space;
    if (a["name"].get(name) != simdjson::SUCCESS || name != e.allocator) continue;
    found = true;
    ASSERT_EQ(a["space"].get(space), simdjson::SUCCESS);
    EXPECT_EQ(space, "device");
  }
  EXPECT_TRUE(found) << e.allocator;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InspectJson, ::testing::ValuesIn(load_expected()),
                         [](const ::testing::TestParamInfo<Expected>& param_info) {
                           return test_name(param_info.param.file);
                         });

TEST(InspectText, SaysSampledAndNamesTheDeviceStandIn) {
  for (const Expected& e : load_expected()) {
    if (e.format != "tf2-memory-profile") continue;
    const ProgramResult r = cuswap({"inspect", e.path});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("SAMPLED"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::to_string(e.reported_peak_bytes) + " bytes"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("captured without a GPU: " + e.allocator + " stands for device memory"),
              std::string::npos)
        << r.out;
    return;
  }
  FAIL() << "no memory profile among the fixtures";
}

TEST(InspectBadInput, TruncatedFileIsExitTwoWithOneLine) {
  cuswap::testing::TempDir dir;
  for (const Expected& e : load_expected()) {
    const std::string bytes = read_file(e.path);
    const std::string cut = dir.path("cut-" + test_name(e.file));
    std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    const ProgramResult r = cuswap({"inspect", "--json", cut});
    EXPECT_EQ(r.exit_code, 2) << e.file;
    EXPECT_EQ(r.out, "") << e.file;
    EXPECT_EQ(r.err.rfind("cuswap: error: " + cut + ": offset ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(InspectBadInput, WrongTypeNamesTheKey) {
  cuswap::testing::TempDir dir;
  const std::string path = dir.path("bad.json");
  std::ofstream(path) << R"({"traceEvents":[{"ph":"X","cat":"Op","name":"A","pid":"one","ts":1}]})";
  const ProgramResult r = cuswap({"inspect", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "cuswap: error: " + path + ": /traceEvents/0/pid: expected an integer\n");
}

}  // namespace
}  // namespace cuswap::trace::import_test
