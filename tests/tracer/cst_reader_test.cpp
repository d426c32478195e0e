// The reader on damaged real files: every prefix, every bit flip, wrong
// magic, other versions, spliced records. Each error must be one line
// naming the file and the right offset; nothing may crash.
#include <zlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include <fmt/format.h>

#include "tests/tracer/support.h"

namespace cuswap::trace::test {
namespace {

struct Record {
  uint64_t offset = 0;
  uint8_t tag = 0;
  uint64_t size = 0;  // header, payload and crc
};

// The records of a valid file, by walking its framing.
std::vector<Record> records_of(const std::vector<uint8_t>& f) {
  std::vector<Record> out;
  uint64_t at = cst::kHeaderFixedBytes + cst::get_u32(f.data() + 12) + cst::kCrcBytes;
  while (at < f.size()) {
    const uint64_t size =
        cst::kRecordHeaderBytes + cst::get_u32(f.data() + at + 1) + cst::kCrcBytes;
    out.push_back({at, f[at], size});
    at += size;
  }
  return out;
}

// Sized once and filled in place: growing it by insert() makes GCC 12 at -O3
// warn (-Warray-bounds) about a copy past the first five bytes that never
// happens.
std::vector<uint8_t> make_record(uint8_t tag, const std::vector<uint8_t>& payload) {
  const size_t crc_at = cst::kRecordHeaderBytes + payload.size();
  std::vector<uint8_t> r(crc_at + cst::kCrcBytes);
  r[0] = tag;
  cst::put_u32(r.data() + 1, uint32_t(payload.size()));
  std::copy(payload.begin(), payload.end(), r.begin() + cst::kRecordHeaderBytes);
  cst::put_u32(r.data() + crc_at, uint32_t(crc32_z(0, r.data(), crc_at)));
  return r;
}

void fix_header_crc(std::vector<uint8_t>& f) {
  const uint64_t body_end = cst::kHeaderFixedBytes + cst::get_u32(f.data() + 12);
  cst::put_u32(f.data() + body_end, uint32_t(crc32_z(0, f.data(), body_end)));
}

void put_uvarints(std::vector<uint8_t>& out, std::initializer_list<uint64_t> values) {
  for (uint64_t v : values) {
    uint8_t tmp[cst::kMaxVarintBytes];
    out.insert(out.end(), tmp, cst::put_uvarint(tmp, v));
  }
}

// The offset an error names, checking its form: `NAME: offset N: ...`, one line.
uint64_t offset_in(const std::string& error, const std::string& name = "f.cst") {
  static const std::regex form(R"(^(.*): offset (\d+): (.+)$)");
  std::smatch m;
  EXPECT_TRUE(std::regex_match(error, m, form)) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  if (m.size() != 4) return UINT64_MAX;
  EXPECT_EQ(m[1].str(), name);
  return std::stoull(m[2].str());
}

class Reader : public ::testing::Test {
 protected:
  void SetUp() override {
    write_fixture(dir_.path("f.cst"));
    file_ = read_bytes(dir_.path("f.cst"));
    ASSERT_FALSE(file_.empty());
    records_ = records_of(file_);
  }

  bool parse(const std::vector<uint8_t>& bytes, std::string& error, ReadOptions o = {}) {
    CstTrace trace;
    return parse_cst(bytes, "f.cst", o, trace, error);
  }

  // The error for `bytes`, which must fail.
  std::string error_for(const std::vector<uint8_t>& bytes, ReadOptions o = {}) {
    std::string error;
    EXPECT_FALSE(parse(bytes, error, o));
    return error;
  }

  const Record& first(uint8_t tag) const {
    for (const Record& r : records_)
      if (r.tag == tag) return r;
    throw std::runtime_error("no such record");
  }

  TempDir dir_;
  std::vector<uint8_t> file_;
  std::vector<Record> records_;
};

TEST_F(Reader, TheFixtureIsValidAndHasEveryKindOfRecord) {
  std::string error;
  CstTrace trace;
  ASSERT_TRUE(parse_cst(file_, "f.cst", {}, trace, error)) << error;
  EXPECT_EQ(trace.events.size(), fixture::kEvents);
  std::set<uint8_t> tags;
  for (const Record& r : records_)
    tags.insert(r.tag);
  EXPECT_EQ(tags, std::set<uint8_t>({1, 2, 3}));
  EXPECT_GT(trace.chunks, 2u);
  EXPECT_EQ(records_.back().tag, 3);
}

TEST_F(Reader, EveryPrefixIsAnErrorNamingWhereTheFileEnds) {
  for (size_t n = 0; n < file_.size(); ++n) {
    const std::vector<uint8_t> prefix(file_.begin(), file_.begin() + long(n));
    const std::string error = error_for(prefix);
    // The start of the unit the prefix cuts: the fixed header, the header
    // body, or the last record that starts within it.
    uint64_t cut = n < cst::kHeaderFixedBytes ? 0 : cst::kHeaderFixedBytes;
    for (const Record& r : records_)
      if (r.offset <= n) cut = r.offset;
    EXPECT_EQ(offset_in(error), cut) << "prefix " << n << ": " << error;
    EXPECT_NE(error.find("ends"), std::string::npos) << "prefix " << n << ": " << error;
  }
}

TEST_F(Reader, EveryPrefixPastTheHeaderReadsAsAnUnfinishedRecording) {
  std::string error;
  CstTrace full;
  ASSERT_TRUE(parse_cst(file_, "f.cst", {}, full, error)) << error;
  ReadOptions partial;
  partial.allow_incomplete = true;
  const uint64_t header_end = records_.front().offset;
  for (size_t n = 0; n < file_.size(); ++n) {
    const std::vector<uint8_t> prefix(file_.begin(), file_.begin() + long(n));
    CstTrace trace;
    const bool ok = parse_cst(prefix, "f.cst", partial, trace, error);
    ASSERT_EQ(ok, n >= header_end) << n << ": " << error;
    if (!ok) continue;
    EXPECT_FALSE(trace.complete());
    EXPECT_LE(trace.stopped_at, n);
    EXPECT_FALSE(trace.stopped_reason.empty());
    ASSERT_LE(trace.events.size(), full.events.size());
    for (const Event& e : trace.events) {
      ASSERT_LT(e.seq, full.events.size());
      EXPECT_TRUE(e.data == full.events[e.seq].data) << describe(e);
    }
  }
}

TEST_F(Reader, EveryBitFlipIsCaughtAtTheRecordItHits) {
  for (size_t at = 0; at < file_.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> bad = file_;
      bad[at] ^= uint8_t(1u << bit);
      const std::string error = error_for(bad);
      const uint64_t named = offset_in(error);
      if (at < 8) {
        EXPECT_EQ(named, at) << error;
        EXPECT_NE(error.find("magic"), std::string::npos) << error;
      } else if (at < 12) {
        EXPECT_TRUE(named == 8 || named == 0) << error;  // version, or the header's crc
      } else if (at < records_.front().offset) {
        EXPECT_LE(named, records_.front().offset) << error;
      } else {
        // The record containing the byte (unless its length field changed,
        // in which case the framing after it moves).
        const Record* hit = nullptr;
        for (const Record& r : records_)
          if (at >= r.offset && at < r.offset + r.size) hit = &r;
        ASSERT_TRUE(hit);
        const bool length_field = at > hit->offset && at < hit->offset + cst::kRecordHeaderBytes;
        if (!length_field) {
          EXPECT_EQ(named, hit->offset) << "flip at " << at << ": " << error;
          EXPECT_NE(error.find("checksum mismatch"), std::string::npos) << error;
        } else {
          EXPECT_GE(named, hit->offset) << error;
        }
      }
    }
  }
}

TEST_F(Reader, WrongMagic) {
  std::vector<uint8_t> bad = file_;
  bad[0] = '{';
  const std::string error = error_for(bad);
  EXPECT_EQ(offset_in(error), 0u);
  EXPECT_NE(error.find("not a cuswap trace"), std::string::npos) << error;
  EXPECT_EQ(offset_in(error_for({})), 0u);
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_EQ(offset_in(error_for(text)), 0u);
}

TEST_F(Reader, FutureMajorVersionIsRefusedAtItsOffset) {
  std::vector<uint8_t> future = file_;
  cst::put_u16(future.data() + 8, cst::kFormatMajor + 1);
  fix_header_crc(future);
  const std::string error = error_for(future);
  EXPECT_EQ(offset_in(error), 8u);
  EXPECT_NE(error.find(fmt::format("found {}.{}", cst::kFormatMajor + 1, cst::kFormatMinor)),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("newer"), std::string::npos) << error;
  cst::put_u16(future.data() + 8, 0);
  EXPECT_NE(error_for(future).find("too old"), std::string::npos);
}

TEST_F(Reader, NewerMinorVersionSkipsWhatItAdds) {
  // A record with a tag this reader does not know, and an extension event,
  // are skipped in a file of a newer minor version and refused otherwise.
  const Record& end = records_.back();
  CstTrace original;
  std::string error;
  ASSERT_TRUE(parse_cst(file_, "f.cst", {}, original, error)) << error;

  std::vector<uint8_t> chunk;  // thread 7, one extension event of 3 bytes, of a type not known
  put_uvarints(chunk, {7, 1});
  chunk.push_back(static_cast<uint8_t>(EventType::iteration_stats) + 1);
  put_uvarints(chunk, {1000, 0, 3});
  chunk.insert(chunk.end(), {0xaa, 0xbb, 0xcc});
  std::vector<uint8_t> end_payload;
  const CstEnd& e = *original.end;
  put_uvarints(end_payload, {e.end_time_ns, e.chunks + 1, e.events + 1, kEventTypeCount});
  for (uint64_t n : e.events_by_type)
    put_uvarints(end_payload, {n});
  put_uvarints(end_payload, {e.dropped_events, e.buffer_waits, e.kernel_names, 0});
  put_uvarints(end_payload, {42});  // a field a later minor version appends

  std::vector<uint8_t> newer(file_.begin(), file_.begin() + long(end.offset));
  const std::vector<uint8_t> unknown = make_record(0x40, {1, 2, 3});
  const std::vector<uint8_t> extension = make_record(2, chunk);
  const std::vector<uint8_t> new_end = make_record(3, end_payload);
  newer.insert(newer.end(), unknown.begin(), unknown.end());
  newer.insert(newer.end(), extension.begin(), extension.end());
  newer.insert(newer.end(), new_end.begin(), new_end.end());
  cst::put_u16(newer.data() + 10, cst::kFormatMinor + 1);
  fix_header_crc(newer);

  CstTrace trace;
  ASSERT_TRUE(parse_cst(newer, "f.cst", {}, trace, error)) << error;
  EXPECT_EQ(trace.skipped_records, 1u);
  EXPECT_EQ(trace.skipped_events, 1u);
  EXPECT_EQ(trace.events.size(), original.events.size());
  EXPECT_EQ(trace.header.format_minor, cst::kFormatMinor + 1);

  cst::put_u16(newer.data() + 10, cst::kFormatMinor);
  fix_header_crc(newer);
  error = error_for(newer);
  EXPECT_EQ(offset_in(error), end.offset) << error;
  EXPECT_NE(error.find("expected a record tag"), std::string::npos) << error;
}

TEST_F(Reader, BytesAfterTheEndRecord) {
  std::vector<uint8_t> longer = file_;
  longer.push_back(0);
  const std::string error = error_for(longer);
  EXPECT_EQ(offset_in(error), file_.size());
  EXPECT_NE(error.find("after the end record"), std::string::npos) << error;
}

TEST_F(Reader, AMissingChunkIsCaughtByTheEndRecord) {
  const Record& chunk = first(2);
  std::vector<uint8_t> spliced = file_;
  spliced.erase(spliced.begin() + long(chunk.offset),
                spliced.begin() + long(chunk.offset + chunk.size));
  const std::string error = error_for(spliced);
  EXPECT_EQ(offset_in(error), records_.back().offset - chunk.size) << error;
  EXPECT_NE(error.find("end record's totals"), std::string::npos) << error;
}

TEST_F(Reader, ARepeatedChunkIsCaughtBySequenceNumbers) {
  const Record& chunk = first(2);
  std::vector<uint8_t> spliced = file_;
  const std::vector<uint8_t> copy(file_.begin() + long(chunk.offset),
                                  file_.begin() + long(chunk.offset + chunk.size));
  spliced.insert(spliced.begin() + long(chunk.offset + chunk.size), copy.begin(), copy.end());
  const std::string error = error_for(spliced);
  // The copy's first event: the chunk's header is 5 bytes, then thread id
  // and count varints.
  EXPECT_GT(offset_in(error), chunk.offset + chunk.size) << error;
  EXPECT_LT(offset_in(error), chunk.offset + 2 * chunk.size) << error;
  EXPECT_NE(error.find("sequence number"), std::string::npos) << error;
}

TEST_F(Reader, AKernelIdUsedBeforeItsNameIsAnError) {
  // Without its names records, the first chunk with a launch names an id
  // that was never defined.
  std::vector<uint8_t> stripped(file_.begin(), file_.begin() + long(records_.front().offset));
  for (const Record& r : records_)
    if (r.tag != 1)
      stripped.insert(stripped.end(), file_.begin() + long(r.offset),
                      file_.begin() + long(r.offset + r.size));
  const std::string error = error_for(stripped);
  EXPECT_NE(error.find("kernel id defined earlier"), std::string::npos) << error;
}

TEST_F(Reader, MissingFileIsOneLineNamingIt) {
  CstTrace trace;
  std::string error;
  EXPECT_FALSE(read_cst_file(dir_.path("nope.cst"), {}, trace, error));
  EXPECT_EQ(error, dir_.path("nope.cst") + ": cannot read: No such file or directory");
  EXPECT_FALSE(read_cst_file(dir_.path(""), {}, trace, error));
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST_F(Reader, ChecksumsCanBeSkippedForFuzzing) {
  std::vector<uint8_t> bad = file_;
  const Record& chunk = first(2);
  bad[chunk.offset + chunk.size - 1] ^= 1;  // the crc itself
  ReadOptions unchecked;
  unchecked.verify_checksums = false;
  std::string error;
  EXPECT_TRUE(parse(bad, error, unchecked)) << error;
  EXPECT_FALSE(parse(bad, error));
}

}  // namespace
}  // namespace cuswap::trace::test

namespace cuswap::trace::test {
namespace {

// Files of format 1.0, written by the 1.0 writer (tests/tracer/data/README.md).
TEST(ReaderOfOlderVersions, ReadsTheOneZeroFixtureAsItWasWritten) {
  const CstTrace t = read_ok(std::string(CST_DATA_DIR) + "/v1-fixture.cst");
  EXPECT_EQ(t.header.format_major, 1);
  EXPECT_EQ(t.header.format_minor, 0);
  ASSERT_TRUE(t.complete());
  EXPECT_EQ(t.events.size(), fixture::kEvents);
  EXPECT_EQ(t.end->events_by_type.size(), kEventTypeCountV1);
  uint64_t launches = 0, iterations = 0;
  for (const Event& e : t.events) {
    launches += e.type() == EventType::launch;
    iterations += e.type() == EventType::iteration;
    EXPECT_LE(static_cast<size_t>(e.type()), kEventTypeCountV1) << describe(e);
  }
  EXPECT_EQ(launches, fixture::kLaunches);
  EXPECT_EQ(iterations, fixture::kIterations);
  const CstTrace two = read_ok(std::string(CST_DATA_DIR) + "/v1-two-threads.cst");
  EXPECT_EQ(two.header.format_major, 1);
  EXPECT_FALSE(two.events.empty());
}

TEST(ReaderOfOlderVersions, RefusesEventTypesTheOneZeroFormatDidNotHave) {
  // The v1 fixture with its first event's type byte turned into a 2.0 type:
  // corrupt in a 1.x file, whatever its checksum says.
  std::vector<uint8_t> f = read_bytes(std::string(CST_DATA_DIR) + "/v1-fixture.cst");
  CstTrace t;
  std::string error;
  ASSERT_TRUE(parse_cst(f, "v1.cst", {}, t, error)) << error;
  const uint64_t at = t.events.front().offset;
  f[at] = static_cast<uint8_t>(EventType::timing);
  ReadOptions lax;
  lax.verify_checksums = false;
  EXPECT_FALSE(parse_cst(f, "v1.cst", lax, t, error));
  EXPECT_EQ(offset_in(error, "v1.cst"), at) << error;
  EXPECT_NE(error.find("expected an event type (1..6), found 7"), std::string::npos) << error;
}

}  // namespace
}  // namespace cuswap::trace::test
