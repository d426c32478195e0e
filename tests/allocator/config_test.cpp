// Tests for the option side of common/config.h: warnings (one per
// malformed pair, naming key and offset), cuswap's option table, apply<>,
// describe()'s round trip, the environment, and that parsing never allocates.
//
// Allocation is counted by tests/support/allocation_counter.h.
#include "common/config.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/allocation_counter.h"

namespace cuswap::conf {
namespace {

constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t GiB = uint64_t{1} << 30;
constexpr uint64_t TiB = uint64_t{1} << 40;
constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// Collects warnings through a sink, as a test would install one.
struct Capture {
  std::vector<std::string> lines;
  Warner warner;

  Capture() {
    warner.sink = [](void* context, std::string_view line) {
      static_cast<Capture*>(context)->lines.emplace_back(line);
    };
    warner.context = this;
  }
};

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

std::string at_offset(size_t offset) {
  return "at offset " + std::to_string(offset);
}

// Options has no operator== (the header is shared); compare field by field.
void expect_same(const Options& a, const Options& b) {
  EXPECT_EQ(a.passthrough, b.passthrough);
  EXPECT_EQ(a.budget_bytes.all, b.budget_bytes.all);
  for (int device = 0; device < kMaxDevices; ++device) {
    EXPECT_EQ(a.budget_bytes.device[static_cast<size_t>(device)],
              b.budget_bytes.device[static_cast<size_t>(device)])
        << "device " << device;
  }
  EXPECT_EQ(a.swap_min_bytes, b.swap_min_bytes);
  EXPECT_EQ(a.record_path.view(), b.record_path.view());
  EXPECT_EQ(a.plan_path.view(), b.plan_path.view());
  EXPECT_EQ(a.online, b.online);
  EXPECT_EQ(a.planner.view(), b.planner.view());
  EXPECT_EQ(a.link.view(), b.link.view());
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.stats, b.stats);
}

void expect_defaults(const Options& options) {
  expect_same(options, Options{});
}

std::string describe_to_string(const Options& options) {
  std::array<char, 4096> buffer;
  const size_t needed = describe(options, buffer);
  EXPECT_LT(needed, buffer.size());
  return std::string(buffer.data(), std::min(needed, buffer.size()));
}

// ---------------------------------------------------------------------------
// Warnings

// Runs `body` with fd 2 redirected into a temporary file (a pipe could fill
// up and block) and returns what was written.
template <typename Body>
std::string capture_stderr(Body body) {
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  if (file == nullptr) return {};
  const int saved = dup(STDERR_FILENO);
  dup2(fileno(file), STDERR_FILENO);
  body();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string text;
  char chunk[4096];
  lseek(fileno(file), 0, SEEK_SET);
  for (ssize_t n; (n = read(fileno(file), chunk, sizeof chunk)) > 0;) {
    text.append(chunk, static_cast<size_t>(n));
  }
  std::fclose(file);
  return text;
}

TEST(Warner, DefaultSinkWritesOneLineToStderr) {
  const std::string prefix = "cuswap[" + std::to_string(getpid()) + "]: warning: ";
  const std::string text = capture_stderr([] {
    Warner warner;
    (void)parse_options("budgte:1G", warner);
    EXPECT_EQ(warner.count, 1);
  });
  EXPECT_EQ(text, prefix + "CUSWAP_CONF: unknown key 'budgte' at offset 0; ignored\n");
}

TEST(Warner, SinkGetsTheLineWithoutNewline) {
  Capture capture;
  (void)parse_options("budget:twelve", capture.warner);
  ASSERT_EQ(capture.lines.size(), 1u);
  const std::string prefix = "cuswap[" + std::to_string(getpid()) + "]: warning: CUSWAP_CONF: ";
  EXPECT_EQ(capture.lines[0],
            prefix +
                "bad value 'twelve' for 'budget' at offset 0 (expected a size "
                "like 12GiB, or per device like [0:12GiB,1:10GiB]); default kept");
  EXPECT_EQ(capture.warner.count, 1);
}

TEST(Warner, WarnNamesSourceAndOffset) {
  Capture capture;
  capture.warner.source = "SIMCUDA_CONF";
  capture.warner.warn(17, "something odd");
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], ": warning: SIMCUDA_CONF: something odd at offset 17"))
      << capture.lines[0];
  EXPECT_EQ(capture.warner.count, 1);
}

TEST(Warner, ControlBytesAreEscapedAndLongValuesCapped) {
  Capture capture;
  const std::string long_value(5000, 'v');
  (void)parse_options("budget:1\nG\x01,swap_min:" + long_value, capture.warner);
  ASSERT_EQ(capture.lines.size(), 2u);
  EXPECT_TRUE(contains(capture.lines[0], "'1\\x0aG\\x01'")) << capture.lines[0];
  EXPECT_FALSE(contains(capture.lines[0], "\n"));
  EXPECT_TRUE(contains(capture.lines[1], "'swap_min'")) << capture.lines[1];
  EXPECT_TRUE(contains(capture.lines[1], at_offset(12))) << capture.lines[1];
  EXPECT_TRUE(contains(capture.lines[1], "...'"));
  EXPECT_LT(capture.lines[1].size(), 512u);
}

TEST(Warner, OverlongLinesAreCutAndStillEndInANewline) {
  const std::string message(3000, 'm');
  const std::string text = capture_stderr([&] {
    Warner warner;
    warner.warn(0, message);
  });
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find('\n'), text.size() - 1);
  EXPECT_LE(text.size(), 512u);
}

// ---------------------------------------------------------------------------
// parse_options

TEST(ParseOptions, EmptyStringGivesDefaults) {
  Capture capture;
  const Options options = parse_options("", capture.warner);
  expect_defaults(options);
  EXPECT_FALSE(options.passthrough);
  EXPECT_FALSE(options.budget_bytes.all);
  EXPECT_EQ(options.swap_min_bytes, MiB);
  EXPECT_TRUE(options.record_path.empty());
  EXPECT_TRUE(options.plan_path.empty());
  EXPECT_EQ(options.log, LogLevel::warn);
  EXPECT_FALSE(options.stats);
  EXPECT_TRUE(capture.lines.empty());
}

TEST(ParseOptions, EveryKey) {
  Capture capture;
  const Options options = parse_options(
      " passthrough:yes , budget:[0:12GiB,1:10GiB], swap_min:2MiB,record:run.cst,"
      "plan: my plan.txt ,online:off,planner:vdnn,link:pcie3,log:DEBUG,stats:on",
      capture.warner);
  EXPECT_TRUE(capture.lines.empty()) << capture.lines[0];
  EXPECT_TRUE(options.passthrough);
  EXPECT_EQ(options.budget_bytes.device[0], 12 * GiB);
  EXPECT_EQ(options.budget_bytes.device[1], 10 * GiB);
  EXPECT_EQ(options.swap_min_bytes, 2 * MiB);
  EXPECT_EQ(options.record_path.view(), "run.cst");
  EXPECT_STREQ(options.record_path.c_str(), "run.cst");
  EXPECT_EQ(options.plan_path.view(), "my plan.txt");
  EXPECT_FALSE(options.online);
  EXPECT_EQ(options.planner.view(), "vdnn");
  EXPECT_EQ(options.link.view(), "pcie3");
  EXPECT_EQ(options.log, LogLevel::debug);
  EXPECT_TRUE(options.stats);
}

TEST(ParseOptions, NamesRefuseOddCharacters) {
  Capture capture;
  const Options options = parse_options("planner:../x,link:pcie4", capture.warner);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "bad value '../x' for 'planner'")) << capture.lines[0];
  EXPECT_TRUE(options.planner.empty());
  EXPECT_EQ(options.link.view(), "pcie4");
}

TEST(ParseOptions, EveryLogLevel) {
  const std::pair<const char*, LogLevel> levels[] = {{"log:error", LogLevel::error},
                                                     {"log:warn", LogLevel::warn},
                                                     {"log:Info", LogLevel::info},
                                                     {"log:debug", LogLevel::debug}};
  for (const auto& [text, level] : levels) {
    Capture capture;
    EXPECT_EQ(parse_options(text, capture.warner).log, level) << text;
    EXPECT_TRUE(capture.lines.empty());
  }
}

TEST(ParseOptions, UnknownKeyNamesKeyAndOffset) {
  Capture capture;
  const Options options = parse_options("stats, budgte:12GiB", capture.warner);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "unknown key 'budgte' at offset 7; ignored"))
      << capture.lines[0];
  EXPECT_TRUE(options.stats);
  EXPECT_FALSE(options.budget_bytes.all);
}

TEST(ParseOptions, KeysAreCaseSensitive) {
  Capture capture;
  const Options options = parse_options("Budget:1G,STATS", capture.warner);
  ASSERT_EQ(capture.lines.size(), 2u);
  EXPECT_TRUE(contains(capture.lines[0], "'Budget'"));
  EXPECT_TRUE(contains(capture.lines[1], "'STATS'"));
  expect_defaults(options);
}

TEST(ParseOptions, BareBooleanKeyIsTrue) {
  Capture capture;
  const Options options = parse_options("passthrough,stats", capture.warner);
  EXPECT_TRUE(capture.lines.empty());
  EXPECT_TRUE(options.passthrough);
  EXPECT_TRUE(options.stats);
}

TEST(ParseOptions, MissingValuesWarnOnceEachAndKeepDefaults) {
  for (const char* key : {"budget", "swap_min", "record", "plan", "log"}) {
    for (const std::string& text :
         {std::string(key), std::string(key) + ":", std::string(key) + ":  "}) {
      Capture capture;
      const Options options = parse_options("log:info," + text, capture.warner);
      ASSERT_EQ(capture.lines.size(), 1u) << text;
      EXPECT_TRUE(contains(capture.lines[0], "missing value for '" + std::string(key) + "'"))
          << capture.lines[0];
      EXPECT_TRUE(contains(capture.lines[0], at_offset(9))) << capture.lines[0];
      if (std::string_view(key) != "log") {
        Options expected;
        expected.log = LogLevel::info;
        expect_same(options, expected);
      }
    }
  }
}

TEST(ParseOptions, BooleanWithEmptyValueIsMissing) {
  Capture capture;
  const Options options = parse_options("stats:", capture.warner);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "missing value for 'stats' at offset 0"));
  EXPECT_FALSE(options.stats);
}

TEST(ParseOptions, BadValuesWarnOnceEachAndKeepDefaults) {
  const char* cases[][2] = {
      {"passthrough", "maybe"}, {"budget", "twelve"},   {"budget", "[0:1G,0:2G]"},
      {"budget", "[16:1G]"},    {"budget", "[]"},       {"budget", "1.5B"},
      {"swap_min", "-1"},       {"swap_min", "[0:1G]"}, {"record", "a[b]"},
      {"plan", "[x,y]"},        {"log", "verbose"},     {"log", "[warn]"},
      {"stats", "2"},
  };
  for (const auto& [key, value] : cases) {
    Capture capture;
    const std::string text = std::string("  ") + key + ":" + value;
    const Options options = parse_options(text, capture.warner);
    ASSERT_EQ(capture.lines.size(), 1u) << text;
    const std::string& line = capture.lines[0];
    EXPECT_TRUE(contains(line, "bad value '" + std::string(value) + "' for '" + key + "'")) << line;
    EXPECT_TRUE(contains(line, at_offset(2))) << line;
    EXPECT_TRUE(contains(line, "(expected ")) << line;
    EXPECT_TRUE(contains(line, "; default kept")) << line;
    expect_defaults(options);
  }
}

TEST(ParseOptions, OneWarningPerBadPairWithItsOwnOffset) {
  Capture capture;
  const std::string text = "budget:x, swap_min:y,foo:1,stats:maybe,log:info,:z,record";
  const Options options = parse_options(text, capture.warner);
  const std::pair<const char*, const char*> expected[] = {
      {"'budget'", "budget:x"}, {"'swap_min'", "swap_min:y"},
      {"'foo'", "foo:1"},       {"'stats'", "stats:maybe"},
      {"':z'", ":z"},           {"'record'", "record"}};
  ASSERT_EQ(capture.lines.size(), std::size(expected));
  EXPECT_EQ(capture.warner.count, static_cast<int>(std::size(expected)));
  for (size_t i = 0; i < std::size(expected); ++i) {
    const auto& [named, pair_text] = expected[i];
    EXPECT_TRUE(contains(capture.lines[i], named)) << capture.lines[i];
    EXPECT_TRUE(contains(capture.lines[i], at_offset(text.find(pair_text)))) << capture.lines[i];
  }
  EXPECT_EQ(options.log, LogLevel::info) << "good pairs between bad ones still apply";
}

TEST(ParseOptions, UnbalancedBracketIsOneWarningForTheRest) {
  Capture capture;
  const Options options = parse_options("stats,budget:[0:1G,1:2G,log:info", capture.warner);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "unbalanced bracket in 'budget:[0:1G,1:2G,log:info'"))
      << capture.lines[0];
  EXPECT_TRUE(contains(capture.lines[0], at_offset(6)));
  EXPECT_TRUE(options.stats);
  EXPECT_FALSE(options.budget_bytes.device[0]);
  EXPECT_EQ(options.log, LogLevel::warn) << "pairs after the bracket are not trusted";
}

TEST(ParseOptions, StrayBracketIsOneWarning) {
  Capture capture;
  const Options options = parse_options("log:info, record:a]b,stats", capture.warner);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "'record:a]b,stats'")) << capture.lines[0];
  EXPECT_TRUE(contains(capture.lines[0], at_offset(10)));
  EXPECT_EQ(options.log, LogLevel::info);
  EXPECT_TRUE(options.record_path.empty());
  EXPECT_FALSE(options.stats);
}

TEST(ParseOptions, MissingKey) {
  Capture capture;
  expect_defaults(parse_options("  :12GiB", capture.warner));
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "missing key before ':12GiB' at offset 2"))
      << capture.lines[0];
}

TEST(ParseOptions, LastDuplicateWins) {
  Capture capture;
  const Options options = parse_options(
      "stats:true,stats:false,budget:1G,budget:[0:2G],log:info,log:error", capture.warner);
  EXPECT_TRUE(capture.lines.empty());
  EXPECT_FALSE(options.stats);
  EXPECT_FALSE(options.budget_bytes.all) << "a later budget replaces all of the earlier one";
  EXPECT_EQ(options.budget_bytes.device[0], 2 * GiB);
  EXPECT_EQ(options.log, LogLevel::error);
}

TEST(ParseOptions, BadDuplicateKeepsTheEarlierValue) {
  Capture capture;
  const Options options = parse_options("swap_min:2M,swap_min:lots", capture.warner);
  EXPECT_EQ(options.swap_min_bytes, 2 * MiB);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "; earlier value kept")) << capture.lines[0];
  EXPECT_TRUE(contains(capture.lines[0], at_offset(12)));
}

TEST(ParseOptions, PathLimits) {
  Capture capture;
  const std::string longest(kMaxPathBytes - 1, 'p');
  EXPECT_EQ(parse_options("record:" + longest, capture.warner).record_path.view(), longest);
  EXPECT_TRUE(capture.lines.empty());

  const Options too_long = parse_options("record:" + longest + "p", capture.warner);
  EXPECT_TRUE(too_long.record_path.empty());
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "for 'record' at offset 0"));
}

TEST(ParseOptions, PathsThatCannotRoundTripAreRefused) {
  for (const char* text : {"record:[a,b]", "record:a[1]", "plan:[p]", "plan:x[y,z]w"}) {
    Capture capture;
    const Options options = parse_options(text, capture.warner);
    EXPECT_EQ(capture.lines.size(), 1u) << text;
    expect_defaults(options);
  }
  Capture capture;
  const std::string with_nul("plan:a\0b", 8);
  expect_defaults(parse_options(with_nul, capture.warner));
  EXPECT_EQ(capture.lines.size(), 1u);
}

// A generic table, as simcuda uses for SIMCUDA_CONF.
struct SimLike {
  double bandwidth_gbps = 52;
  uint64_t fail_count = 0;
  int items = 0;
};

const OptionSpec<SimLike> kSimSpecs[] = {
    {"h2d_gbps", "a number",
     [](SimLike& t, const Pair& p) {
       const auto value = parse_number(p.value);
       if (value) t.bandwidth_gbps = *value;
       return value.has_value();
     }},
    {"fail", "a list of names",
     [](SimLike& t, const Pair& p) {
       ListReader list(p.value);
       std::string_view item;
       uint64_t count = 0;
       while (list.next(item))
         ++count;
       if (!list.ok()) return false;
       t.fail_count = count;
       return true;
     }},
    {"undocumented", "", [](SimLike&, const Pair&) { return false; }},
};

TEST(Apply, GenericTable) {
  Capture capture;
  capture.warner.source = "SIMCUDA_CONF";
  SimLike target;
  const std::string_view text =
      "h2d_gbps:12.5,fail:[cuMemMap@3,cuMemCreate],fail:[a,,b],undocumented:1";
  apply(text, std::span<const OptionSpec<SimLike>>(kSimSpecs), target, capture.warner);
  EXPECT_EQ(target.bandwidth_gbps, 12.5);
  EXPECT_EQ(target.fail_count, 2u);
  ASSERT_EQ(capture.lines.size(), 2u);
  EXPECT_TRUE(contains(capture.lines[0], "SIMCUDA_CONF: bad value '[a,,b]' for 'fail' " +
                                             at_offset(text.find("fail:[a")) +
                                             " (expected a list of names); earlier value kept"))
      << capture.lines[0];
  EXPECT_TRUE(contains(capture.lines[1], "bad value '1' for 'undocumented' " +
                                             at_offset(text.find("undoc")) + "; default kept"))
      << capture.lines[1];
  EXPECT_FALSE(contains(capture.lines[1], "expected"));
}

// ---------------------------------------------------------------------------
// describe

TEST(Describe, Defaults) {
  EXPECT_EQ(describe_to_string(Options{}), "passthrough:false,swap_min:1MiB,log:warn,stats:false");
}

TEST(Describe, ExactUnits) {
  const std::pair<uint64_t, const char*> sizes[] = {
      {0, "0"},
      {1, "1"},
      {1000, "1000"},
      {KiB, "1KiB"},
      {1536, "1536"},
      {3 * MiB / 2, "1536KiB"},
      {3 * GiB / 2, "1536MiB"},
      {12 * GiB, "12GiB"},
      {3 * TiB, "3TiB"},
      {kMax, "18446744073709551615"},
      {kMax - TiB + 1, "16777215TiB"},
  };
  for (const auto& [bytes, text] : sizes) {
    Options options;
    options.swap_min_bytes = bytes;
    EXPECT_TRUE(contains(describe_to_string(options), std::string("swap_min:") + text + ","))
        << text;
  }
}

void expect_round_trip(const Options& options) {
  const std::string text = describe_to_string(options);
  Capture capture;
  const Options back = parse_options(text, capture.warner);
  EXPECT_TRUE(capture.lines.empty()) << text << ": " << capture.lines[0];
  SCOPED_TRACE(text);
  expect_same(back, options);
}

TEST(Describe, RoundTrips) {
  expect_round_trip(Options{});

  Options all_set;
  all_set.passthrough = true;
  all_set.budget_bytes.all = 12 * GiB;
  all_set.swap_min_bytes = 1536;
  ASSERT_TRUE(all_set.record_path.assign("/tmp/run 1.cst"));
  ASSERT_TRUE(all_set.plan_path.assign("C:/plans/p.json"));
  all_set.online = false;
  ASSERT_TRUE(all_set.planner.assign("seed"));
  ASSERT_TRUE(all_set.link.assign("nvlink-c2c"));
  all_set.log = LogLevel::debug;
  all_set.stats = true;
  expect_round_trip(all_set);
  EXPECT_EQ(describe_to_string(all_set),
            "passthrough:true,budget:12GiB,swap_min:1536,record:/tmp/run 1.cst,"
            "plan:C:/plans/p.json,online:false,planner:seed,link:nvlink-c2c,log:debug,stats:true");

  Options per_device;
  per_device.budget_bytes.device[0] = 12 * GiB;
  per_device.budget_bytes.device[1] = 3 * GiB / 2;
  per_device.budget_bytes.device[15] = kMax;
  per_device.log = LogLevel::error;
  expect_round_trip(per_device);
  EXPECT_TRUE(contains(describe_to_string(per_device),
                       "budget:[0:12GiB,1:1536MiB,15:18446744073709551615]"));

  Options odd;
  odd.swap_min_bytes = 0;
  odd.budget_bytes.all = 0;
  odd.log = LogLevel::info;
  expect_round_trip(odd);

  Options longest_path;
  ASSERT_TRUE(longest_path.record_path.assign(std::string(kMaxPathBytes - 1, 'r')));
  expect_round_trip(longest_path);
}

TEST(Describe, AllAndPerDeviceTogetherExpandToEveryDevice) {
  Options options;
  options.budget_bytes.all = 8 * GiB;
  options.budget_bytes.device[2] = 4 * GiB;
  const std::string text = describe_to_string(options);
  EXPECT_TRUE(contains(text, "budget:[0:8GiB,1:8GiB,2:4GiB,3:8GiB,")) << text;
  Capture capture;
  const Options back = parse_options(text, capture.warner);
  EXPECT_TRUE(capture.lines.empty());
  for (int device = 0; device < kMaxDevices; ++device) {
    EXPECT_EQ(back.budget_bytes.get(device, 1), options.budget_bytes.get(device, 1)) << device;
  }
}

TEST(Describe, TruncationNeverWritesAPartialPair) {
  Options options;
  options.passthrough = true;
  ASSERT_TRUE(options.record_path.assign("run.cst"));
  const std::string full = describe_to_string(options);
  ASSERT_EQ(full, "passthrough:true,swap_min:1MiB,record:run.cst,log:warn,stats:false");

  for (size_t size = 0; size <= full.size() + 1; ++size) {
    std::vector<char> buffer(size + 8, '#');
    const size_t needed = describe(options, std::span<char>(buffer.data(), size));
    EXPECT_EQ(needed, full.size()) << size;
    EXPECT_EQ(std::string(buffer.data() + size, 8), std::string(8, '#'))
        << "wrote past the span at size " << size;
    if (size == 0) continue;
    if (size >= full.size()) {
      EXPECT_EQ(std::string(buffer.data(), full.size()), full);
      if (size > full.size()) {
        EXPECT_EQ(buffer[full.size()], '\0');
      }
      continue;
    }
    // Whole pairs, then a NUL if a byte was left, then nothing touched.
    char* end = std::find(buffer.data(), buffer.data() + size, '\0');
    const std::string written(buffer.data(), end);
    EXPECT_EQ(full.compare(0, written.size(), written), 0) << written;
    EXPECT_TRUE(written.empty() || full[written.size()] == ',') << "between pairs: " << written;
    char* untouched = end == buffer.data() + size ? end : end + 1;
    EXPECT_TRUE(std::all_of(untouched, buffer.data() + size, [](char c) { return c == '#'; }))
        << "a pair that did not fit was partly written at size " << size;
  }
}

TEST(Describe, ATruncatedPrefixStillParses) {
  Options options;
  options.passthrough = true;
  options.budget_bytes.all = 2 * GiB;
  std::array<char, 30> buffer;
  const size_t needed = describe(options, buffer);
  EXPECT_GT(needed, buffer.size());
  Capture capture;
  const Options back = parse_options(buffer.data(), capture.warner);
  EXPECT_TRUE(capture.lines.empty());
  EXPECT_TRUE(back.passthrough);
  EXPECT_EQ(back.budget_bytes.all, 2 * GiB);
}

// ---------------------------------------------------------------------------
// The environment

TEST(Environment, ReadsCuswapConf) {
  ASSERT_EQ(setenv("CUSWAP_CONF", "budget:2GiB,stats,bogus", 1), 0);
  Capture capture;
  const Options options = options_from_environment(capture.warner);
  EXPECT_EQ(options.budget_bytes.all, 2 * GiB);
  EXPECT_TRUE(options.stats);
  ASSERT_EQ(capture.lines.size(), 1u);
  EXPECT_TRUE(contains(capture.lines[0], "CUSWAP_CONF: unknown key 'bogus' at offset 18"));

  ASSERT_EQ(unsetenv("CUSWAP_CONF"), 0);
  Capture none;
  expect_defaults(options_from_environment(none.warner));
  EXPECT_TRUE(none.lines.empty());
}

// ---------------------------------------------------------------------------
// FixedString

TEST(FixedString, AssignAndLimits) {
  FixedString text;
  EXPECT_TRUE(text.empty());
  EXPECT_STREQ(text.c_str(), "");
  ASSERT_TRUE(text.assign("first"));
  EXPECT_EQ(text.view(), "first");

  EXPECT_FALSE(text.assign(std::string(kMaxPathBytes, 'x'))) << "no room for the terminator";
  EXPECT_EQ(text.view(), "first") << "unchanged after a failed assign";
  EXPECT_STREQ(text.c_str(), "first");

  EXPECT_FALSE(text.assign(std::string_view("a\0b", 3)));
  EXPECT_EQ(text.view(), "first");

  const std::string longest(kMaxPathBytes - 1, 'y');
  ASSERT_TRUE(text.assign(longest));
  EXPECT_EQ(text.view(), longest);
  EXPECT_EQ(std::string(text.c_str()), longest);

  ASSERT_TRUE(text.assign("ab"));
  EXPECT_STREQ(text.c_str(), "ab") << "a shorter string is terminated over a longer one";
  ASSERT_TRUE(text.assign(""));
  EXPECT_TRUE(text.empty());
}

// ---------------------------------------------------------------------------
// No allocation

void discard(void*, std::string_view) {}

std::string long_mixed_configuration() {
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += "budget:[0:12GiB, 1:1.5GiB],swap_min:2MiB,record:/tmp/r.cst,plan:p,log:info,stats,";
    text += "budgte:1,budget:twelve,swap_min:,log:loud,stats:maybe,:x,record:[a],passthrough:2,";
    text += ",, budget : 8 G , plan:" + std::string(kMaxPathBytes, 'p') + ",";
  }
  text += "stats:off,budget:[0:1G,1:2G";
  return text;
}

TEST(NoAllocation, TheCounterSeesAllocations) {
  // Kept in a static so the compiler cannot elide the new/delete pair.
  static std::vector<std::string> kept;
  const uint64_t before = cuswap::testing::allocations_on_this_thread();
  kept.emplace_back(100, 'x');
  EXPECT_GE(cuswap::testing::allocations_on_this_thread() - before, 2u);
}

TEST(NoAllocation, ParseOptionsWithASinkThatWritesNowhere) {
  const std::string text = long_mixed_configuration();
  Warner warner;
  warner.sink = discard;
  const uint64_t before = cuswap::testing::allocations_on_this_thread();
  const Options options = parse_options(text, warner);
  const uint64_t allocations = cuswap::testing::allocations_on_this_thread() - before;
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(warner.count, 40 * 9 + 1);
  EXPECT_EQ(options.budget_bytes.all, 8 * GiB);
  EXPECT_FALSE(options.stats);
}

TEST(NoAllocation, ParseOptionsWithTheStderrSink) {
  const std::string text = long_mixed_configuration();
  Warner warner;
  uint64_t allocations = 1;
  const std::string written = capture_stderr([&] {
    const uint64_t before = cuswap::testing::allocations_on_this_thread();
    (void)parse_options(text, warner);
    allocations = cuswap::testing::allocations_on_this_thread() - before;
  });
  EXPECT_EQ(allocations, 0u);
  EXPECT_EQ(std::count(written.begin(), written.end(), '\n'), warner.count);
  EXPECT_EQ(written.rfind("cuswap[", 0), 0u);
}

TEST(NoAllocation, ParsersDescribeAndEnvironment) {
  ASSERT_EQ(setenv("CUSWAP_CONF", "budget:[0:1G],swap_min:3M,nope", 1), 0);
  Options options;
  options.budget_bytes.all = 8 * GiB;
  options.budget_bytes.device[3] = 3 * GiB;
  ASSERT_TRUE(options.record_path.assign("/tmp/trace.cst"));
  std::array<char, 2048> out;
  std::array<char, 16> small;
  Warner warner;
  warner.sink = discard;

  const uint64_t before = cuswap::testing::allocations_on_this_thread();
  bool all_parsed = parse_size("1.5GiB").has_value() && parse_uint("12").has_value() &&
                    parse_number("1.25e3").has_value() && parse_bool("enabled").has_value() &&
                    parse_per_device_size("[0:1G,1:2G]").has_value();
  all_parsed &= !parse_number("1e400") && !parse_size("16777216TiB");
  const size_t needed = describe(options, out);
  const size_t needed_small = describe(options, small);
  const Options from_environment = options_from_environment(warner);
  const uint64_t allocations = cuswap::testing::allocations_on_this_thread() - before;
  ASSERT_EQ(unsetenv("CUSWAP_CONF"), 0);

  EXPECT_EQ(allocations, 0u);
  EXPECT_TRUE(all_parsed);
  EXPECT_EQ(needed, needed_small);
  EXPECT_EQ(from_environment.swap_min_bytes, 3 * MiB);
  EXPECT_EQ(warner.count, 1);
}

}  // namespace
}  // namespace cuswap::conf
