// Note [Bounded input]: what is read and inflated is capped, and the first
// bytes must start a trace, whatever the file is.
#include <gtest/gtest.h>

#include <zlib.h>

#include <cstdio>
#include <string>

#include "tests/tracer/support.h"
#include "tracer/import/import.h"

namespace cuswap::trace::import {
namespace {

std::string gzip_of(const std::string& data) {
  uLongf size = compressBound(static_cast<uLong>(data.size())) + 32;
  std::string out(size, '\0');
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

// A valid PyTorch trace of one op, padded with whitespace to `padding`.
std::string padded_trace(size_t padding) {
  return R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1})" +
         std::string(padding, ' ') + "]}";
}

TEST(BoundedInput, RefusesADeviceOfZerosAtOnce) {
  Trace t;
  std::string error;
  EXPECT_FALSE(import_trace("/dev/zero", ImportOptions{}, t, error));
  EXPECT_EQ(error, "/dev/zero: offset 0: expected a trace (gzip, JSON, .cst or protobuf), found "
                   "byte 0x00");
}

TEST(BoundedInput, RefusesAFileLargerThanTheLimitBeforeReadingIt) {
  cuswap::testing::TempDir dir;
  const std::string path = dir.path("big.json");
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const std::string body = padded_trace(4000);
  std::fwrite(body.data(), 1, body.size(), f);
  std::fclose(f);
  ImportOptions options;
  options.max_input_bytes = 1024;
  Trace t;
  std::string error;
  EXPECT_FALSE(import_trace(path, options, t, error));
  EXPECT_NE(error.find("offset 1024: expected at most 1024 bytes, the file has " +
                       std::to_string(body.size())),
            std::string::npos)
      << error;
  options.max_input_bytes = 1 << 20;  // the same file within the limit
  EXPECT_TRUE(import_trace(path, options, t, error)) << error;
}

TEST(BoundedInput, StopsAGzipBombByItsRatio) {
  const std::string json = padded_trace(1 << 20);
  const std::string bomb = gzip_of(json);
  ASSERT_LT(bomb.size() * 200, json.size());
  ImportOptions options;
  options.inflation_floor_bytes = 64 << 10;
  Trace t;
  std::string error;
  EXPECT_FALSE(import_trace_bytes(bomb, "bomb.gz", options, t, error));
  EXPECT_NE(error.find("bomb.gz: offset "), std::string::npos) << error;
  EXPECT_NE(error.find("200x the compressed size"), std::string::npos) << error;
  // Without the ratio (the user gave a limit), the input limit alone holds.
  options.max_inflation_ratio = 0;
  EXPECT_TRUE(import_trace_bytes(bomb, "bomb.gz", options, t, error)) << error;
  options.max_input_bytes = 1 << 19;
  EXPECT_FALSE(import_trace_bytes(bomb, "bomb.gz", options, t, error));
  EXPECT_NE(error.find("expected at most 524288 bytes once inflated"), std::string::npos) << error;
}

}  // namespace
}  // namespace cuswap::trace::import
