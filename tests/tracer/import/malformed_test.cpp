// Bad input to every importer: truncations at many offsets, bit flips,
// wrong types, missing keys, dangling references, broken gzip and protobuf.
// Each must give false and ONE line "NAME: offset N: expected …" (or a JSON
// pointer in place of the offset), never a crash; whatever still imports
// must keep the Trace invariants.
#include <gtest/gtest.h>

#include <regex>
#include <zlib.h>

#include "tests/tracer/import/fixtures.h"
#include "tracer/import/import.h"

namespace cuswap::trace::import_test {
namespace {

const std::regex kErrorLine(R"(^bad\.trace: (offset \d+|/[^ ]*): expected .+$)");

struct Outcome {
  bool ok;
  std::string error;
  std::string invariant;  // validate() when ok
};

Outcome import(std::string_view bytes) {
  Trace trace;
  std::string error;
  const bool ok = import_trace_bytes(bytes, "bad.trace", ImportOptions{}, trace, error);
  return {ok, error, ok ? validate(trace) : ""};
}

void expect_error_line(const Outcome& o, const std::string& context) {
  EXPECT_FALSE(o.ok) << context;
  EXPECT_TRUE(std::regex_match(o.error, kErrorLine)) << context << ": " << o.error;
  EXPECT_EQ(o.error.find('\n'), std::string::npos) << context;
}

void expect_error_or_valid(const Outcome& o, const std::string& context) {
  if (o.ok)
    EXPECT_EQ(o.invariant, "") << context;
  else
    EXPECT_TRUE(std::regex_match(o.error, kErrorLine)) << context << ": " << o.error;
}

std::string seed(const std::string& format) {
  const std::string dir = std::string(CUSWAP_IMPORT_CORPUS_DIR) + "/" + format;
  const std::string path = dir + (format.starts_with("tf1_step") || format == "tf2_xplane"
                                      ? "/seed.pb"
                                      : "/seed.json");
  return read_file(path);
}

std::string gzip_bytes(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

class EveryFormat : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryFormat, TheSeedImports) {
  const Outcome o = import(seed(GetParam()));
  EXPECT_TRUE(o.ok) << o.error;
  EXPECT_EQ(o.invariant, "");
}

TEST_P(EveryFormat, TruncationsFailWithOneLine) {
  const std::string bytes = seed(GetParam());
  ASSERT_GT(bytes.size(), 100u);
  const bool json = bytes[0] == '{' || bytes[0] == '[';
  size_t failures = 0, tries = 0;
  for (size_t cut = 0; cut < bytes.size(); cut += 1 + bytes.size() / 97) {
    const Outcome o = import(std::string_view(bytes).substr(0, cut));
    ++tries;
    failures += !o.ok;
    // A JSON document cut short is never JSON; a protobuf cut at a field
    // boundary is a valid, shorter message.
    if (json)
      expect_error_line(o, "cut at " + std::to_string(cut));
    else
      expect_error_or_valid(o, "cut at " + std::to_string(cut));
  }
  EXPECT_GT(failures, tries / 2);
}

TEST_P(EveryFormat, GzipTruncationsFailWithOneLine) {
  const std::string gz = gzip_bytes(seed(GetParam()));
  EXPECT_TRUE(import(gz).ok);
  for (size_t cut = 2; cut < gz.size(); cut += 1 + gz.size() / 31)
    expect_error_line(import(std::string_view(gz).substr(0, cut)), "gzip cut at " + std::to_string(cut));
}

TEST_P(EveryFormat, BitFlipsNeverCrash) {
  std::string bytes = seed(GetParam());
  size_t failures = 0;
  for (size_t at = 0; at < bytes.size(); at += 1 + bytes.size() / 211) {
    for (int bit : {0, 3, 7}) {
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
      const Outcome o = import(bytes);
      failures += !o.ok;
      expect_error_or_valid(o, "flip at " + std::to_string(at));
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << bit));
    }
  }
  EXPECT_GT(failures, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, EveryFormat,
                         ::testing::Values("tf1_timeline", "tf1_step_stats", "tf2_xplane",
                                           "tf2_memory_profile", "torch_profiler",
                                           "torch_snapshot"));

// Specific damage, with the message it must give.
struct Case {
  const char* label;
  std::string bytes;
  const char* message;  // the line, after "bad.trace: "
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

class Damage : public ::testing::TestWithParam<Case> {};

TEST_P(Damage, SaysWhereAndWhat) {
  const Outcome o = import(GetParam().bytes);
  expect_error_line(o, GetParam().label);
  EXPECT_EQ(o.error, std::string("bad.trace: ") + GetParam().message);
}

const Case kCases[] = {
    {"empty", "", "offset 0: expected a trace, found an empty file"},
    {"invalid_json", R"({"traceEvents": [1, })", "offset 20: expected a JSON value"},
    {"json_ends_early", R"({"traceEvents": [)", "offset 17: expected a JSON value (the document ends early)"},
    {"json_invalid_utf8", "{\"traceEvents\": [\"ab\xe2\x28\xa1\"]}",
     "offset 20: expected UTF-8 text, found byte 0xe2"},
    {"unknown_json", R"({"x": 1})",
     "/: expected a trace: an object with traceEvents (Chrome trace), memoryProfilePerAllocator "
     "(TensorFlow 2 memory profile) or segments/device_traces (PyTorch memory snapshot)"},
    {"trace_events_not_array", R"({"traceEvents": 3})", "/traceEvents: expected an array"},
    {"ts_wrong_type",
     R"({"traceEvents":[{"ph":"X","cat":"Op","name":"MatMul","pid":1,"ts":"soon","dur":1}]})",
     "/traceEvents/0/ts: expected a number"},
    {"tf1_dangling_snapshot",
     R"({"traceEvents":[{"ph":"X","cat":"Op","name":"A","pid":1,"ts":1,"dur":1},)"
     R"({"ph":"O","cat":"Tensor","name":"a","pid":2,"ts":1,"id":7,"args":{"snapshot":{"tensor_description":""}}}]})",
     "/traceEvents/1/id: expected the id of a tensor created by an earlier \"N\" event"},
    {"tf1_bad_description",
     R"({"traceEvents":[{"ph":"X","cat":"Op","name":"A","pid":1,"ts":1,"dur":1},)"
     R"({"ph":"N","cat":"Tensor","name":"a","pid":2,"ts":1,"id":0},)"
     R"({"ph":"O","cat":"Tensor","name":"a","pid":2,"ts":1,"id":0,"args":{"snapshot":{"tensor_description":"allocation_description { requested_bytes: x }"}}}]})",
     "/traceEvents/2/args/snapshot/tensor_description: expected a TensorDescription in text "
     "format: at character 42, an integer for the field \"requested_bytes\""},
    {"torch_memory_without_bytes",
     R"({"schemaVersion":1,"traceEvents":[{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":5,"args":{"Addr":1}}]})",
     "/traceEvents/0/args: expected an object with the key \"Bytes\""},
    {"torch_bytes_wrong_type",
     R"({"schemaVersion":1,"traceEvents":[{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":5,"args":{"Bytes":"many"}}]})",
     "/traceEvents/0/args/Bytes: expected an integer"},
    {"memory_profile_bad_activity",
     R"({"memoryProfilePerAllocator":{"GPU_0_bfc":{"memoryProfileSnapshots":[{"timeOffsetPs":"1","activityMetadata":{"memoryActivity":"RESERVE"}}]}}})",
     "/memoryProfilePerAllocator/GPU_0_bfc/memoryProfileSnapshots/0/activityMetadata/"
     "memoryActivity: expected \"ALLOCATION\" or \"DEALLOCATION\""},
    {"memory_profile_time_not_integer",
     R"({"memoryProfilePerAllocator":{"GPU_0_bfc":{"memoryProfileSnapshots":[{"timeOffsetPs":"1.5","activityMetadata":{}}]}}})",
     "/memoryProfilePerAllocator/GPU_0_bfc/memoryProfileSnapshots/0/timeOffsetPs: expected an "
     "integer (or a string holding one)"},
    {"snapshot_traces_not_lists", R"({"device_traces":[{"action":"alloc"}]})",
     "/device_traces/0: expected an array"},
    {"snapshot_alloc_without_size", R"({"device_traces":[[{"action":"alloc","addr":16}]]})",
     "/device_traces/0/0: expected an object with the key \"size\""},
    {"proto_length_past_end", std::string("\x0a\x7f\x08\x01", 4),
     "offset 1: expected a length of field 1 within the data (127 bytes declared, 2 left) (not "
     "a trace cuswap can read, or a damaged protobuf)"},
    {"proto_bad_wire_type", std::string("\x0f\x01", 2),
     "offset 0: expected wire type 0, 1, 2 or 5 for field 1 (found 7) (not a trace cuswap can "
     "read, or a damaged protobuf)"},
    {"proto_nested_damage", std::string("\x0a\x04\x08\x01\x12\x09", 6),
     "offset 5: expected a length of field 2 within the data (9 bytes declared, 0 left) (in an "
     "XSpace message)"},
    {"proto_unknown_message", std::string("\x08\x01", 2),
     "offset 0: expected a trace: .cst, JSON, or a TensorFlow XSpace, StepStats or RunMetadata "
     "protobuf"},
    {"gzip_garbage", std::string("\x1f\x8b\x08\x00garbage", 11),
     "offset 11: expected more gzip data (the file is truncated)"},
};

INSTANTIATE_TEST_SUITE_P(Cases, Damage, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           return std::string(param_info.param.label);
                         });

TEST(Malformed, NestedProtobufDamageIsOneLine) {
  // A StepStats whose node has a string field that claims more bytes than
  // its message holds: the top level is well formed, the nested one is not.
  const std::string node("\x0a\x05/cpu0\x12\x03\x0a\x09x", 12);
  const std::string bytes = std::string("\x0a") + static_cast<char>(node.size()) + node;
  const Outcome o = import(bytes);
  expect_error_line(o, "nested");
  EXPECT_NE(o.error.find("StepStats"), std::string::npos) << o.error;
}

TEST(Malformed, FileThatCannotBeRead) {
  Trace trace;
  std::string error;
  EXPECT_FALSE(import_trace("/nonexistent/dir/x.json", ImportOptions{}, trace, error));
  EXPECT_EQ(error, "/nonexistent/dir/x.json: cannot read: No such file or directory");
}

}  // namespace
}  // namespace cuswap::trace::import_test
