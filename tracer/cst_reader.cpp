// The .cst reader. The file is walked once, front to back: header, then
// record by record (checksum first, then payload), then the events are
// sorted by sequence number and checked against the end record's totals.
// Every check that fails names the byte offset where the file stopped
// making sense (Note [Error offsets]). Payloads are read through a Cursor
// (cst_cursor.h); each event type's payload has its decoder in
// cst_event_payload.cpp.
//
// Note [Error offsets]: a checksum mismatch names the start of the record
// (the bytes are wrong somewhere inside it, and the record is the unit the
// writer wrote); a file that ends early names the start of the unit it
// cuts (the fixed header at 0, the header body at 16, or a record) and says
// how much of it is there; anything wrong inside a record whose
// checksum matched (a writer bug, or a crafted file) names the first byte
// that cannot be decoded.
#include "tracer/cst_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <limits>

#include <fmt/format.h>

#include "tracer/cst_cursor.h"
#include "tracer/cst_event_payload.h"

namespace cuswap::trace {
namespace {

using cst::Cursor;
using cst::Failure;
using cst::RecordTag;

std::string_view tag_name(uint8_t tag) {
  switch (tag) {
    case static_cast<uint8_t>(RecordTag::names):
      return "names";
    case static_cast<uint8_t>(RecordTag::chunk):
      return "chunk";
    case static_cast<uint8_t>(RecordTag::end):
      return "end";
    default:
      return "unknown";
  }
}

class Parser {
 public:
  Parser(std::span<const uint8_t> bytes, const ReadOptions& options, CstTrace& out)
      : data_(bytes.data()), size_(bytes.size()), options_(options), out_(out) {}

  bool run() {
    out_ = CstTrace{};
    out_.file_bytes = size_;
    out_.kernel_names.emplace_back();
    out_.kernel_name_offsets.push_back(0);
    return header() && records() && finish();
  }

  const Failure& failure() const { return failure_; }

 private:
  bool fail(uint64_t offset, std::string what) {
    failure_ = {offset, std::move(what)};
    return false;
  }
  // The file's minor version is newer than ours: skip what we do not know.
  bool lenient() const {
    return out_.header.format_major == cst::kFormatMajor &&
           out_.header.format_minor > cst::kFormatMinor;
  }
  // Core event types the file's major version has.
  size_t event_types() const {
    return out_.header.format_major == cst::kOldestMajor ? kEventTypeCountV1 : kEventTypeCount;
  }

  bool header();
  bool records();
  bool names(Cursor& c, uint64_t record_offset);
  bool chunk(Cursor& c);
  bool event(Cursor& c, uint32_t thread, bool first, uint64_t& seq, uint64_t& time_ns);
  bool end(Cursor& c, uint64_t record_offset);
  bool finish();

  const uint8_t* data_;
  uint64_t size_;
  const ReadOptions& options_;
  CstTrace& out_;
  Failure failure_;
  uint64_t pos_ = 0;  // the record walker's position
  std::vector<uint64_t> counted_by_type_ = std::vector<uint64_t>(kEventTypeCount, 0);
};

bool Parser::header() {
  const size_t magic_bytes = std::min<uint64_t>(size_, cst::kMagic.size());
  for (size_t i = 0; i < magic_bytes; ++i)
    if (data_[i] != cst::kMagic[i])
      return fail(i, fmt::format("expected the .cst magic 89 43 53 54 0d 0a 1a 0a, found {:02x} "
                                 "(not a cuswap trace)",
                                 data_[i]));
  if (size_ < cst::kHeaderFixedBytes)
    return fail(0, fmt::format("expected the {}-byte file header, the file ends after {} bytes",
                               cst::kHeaderFixedBytes, size_));
  CstHeader& h = out_.header;
  h.format_major = cst::get_u16(data_ + 8);
  h.format_minor = cst::get_u16(data_ + 10);
  // The version is checked before the checksum: another major version may
  // lay its header out differently.
  if (h.format_major != cst::kFormatMajor && h.format_major != cst::kOldestMajor)
    return fail(8, fmt::format("expected format version {}.x to {}.x, found {}.{} ({})",
                               cst::kOldestMajor, cst::kFormatMajor, h.format_major, h.format_minor,
                               h.format_major > cst::kFormatMajor
                                   ? "written by a newer cuswap; update cuswap to read it"
                                   : "too old for this cuswap"));
  const uint64_t body_bytes = cst::get_u32(data_ + 12);
  const uint64_t body_end = cst::kHeaderFixedBytes + body_bytes;
  if (size_ < body_end + cst::kCrcBytes)
    return fail(cst::kHeaderFixedBytes,
                fmt::format("expected a header body of {} bytes and its checksum, the file ends "
                            "after {} bytes",
                            body_bytes, size_ - cst::kHeaderFixedBytes));
  const uint32_t stored = cst::get_u32(data_ + body_end);
  const auto computed = static_cast<uint32_t>(crc32_z(0, data_, body_end));
  if (options_.verify_checksums && stored != computed)
    return fail(0, fmt::format("header checksum mismatch (stored {:08x}, computed {:08x})", stored,
                               computed));
  Cursor c(data_, cst::kHeaderFixedBytes, body_end, failure_);
  uint64_t device_count = 0;
  if (!c.string(h.cuswap_version, "the cuswap version") ||
      !c.string(h.configuration, "the configuration") || !c.uvarint(h.pid, "the pid") ||
      !c.uvarint(h.start_unix_ns, "the start time") || !c.uvarint(device_count, "the device count"))
    return false;
  if (device_count > c.left())
    return c.fail(c.offset(), fmt::format("expected at most {} devices, found a count of {}",
                                          c.left(), device_count));
  for (uint64_t i = 0; i < device_count; ++i) {
    DeviceInfo d;
    if (!c.int32(d.ordinal, "a device ordinal") || !c.string(d.name, "a device name") ||
        !c.uvarint(d.total_bytes, "a device's memory size"))
      return false;
    h.devices.push_back(std::move(d));
  }
  if (!c.at_end() && !lenient())
    return c.fail(
        c.offset(),
        fmt::format("expected the end of the header body, found {} more bytes", c.left()));
  pos_ = body_end + cst::kCrcBytes;
  return true;
}

bool Parser::records() {
  for (;;) {
    const uint64_t at = pos_;
    const uint64_t left = size_ - at;
    std::string missing;
    if (left == 0)
      missing = "expected a record (the end record is missing), the file ends";
    else if (left < cst::kRecordHeaderBytes)
      missing = fmt::format("expected a {}-byte record header, the file ends after {} bytes",
                            cst::kRecordHeaderBytes, left);
    else if (const uint64_t need =
                 cst::kRecordHeaderBytes + uint64_t{cst::get_u32(data_ + at + 1)} + cst::kCrcBytes;
             left < need)
      missing = fmt::format("expected a {} record of {} bytes, the file ends after {} bytes",
                            tag_name(data_[at]), need, left);
    if (!missing.empty()) {
      // A recording that never finished stops here, at a record boundary
      // or inside the record it was writing.
      if (!options_.allow_incomplete) return fail(at, std::move(missing));
      out_.stopped_at = at;
      out_.stopped_reason = std::move(missing);
      return true;
    }

    const uint8_t tag = data_[at];
    const uint64_t payload = at + cst::kRecordHeaderBytes;
    const uint64_t payload_end = payload + cst::get_u32(data_ + at + 1);
    const uint32_t stored = cst::get_u32(data_ + payload_end);
    const auto computed = static_cast<uint32_t>(crc32_z(0, data_ + at, payload_end - at));
    if (options_.verify_checksums && stored != computed)
      return fail(at, fmt::format("{} record checksum mismatch (stored {:08x}, computed {:08x})",
                                  tag_name(tag), stored, computed));
    pos_ = payload_end + cst::kCrcBytes;

    Cursor c(data_, payload, payload_end, failure_);
    switch (tag) {
      case static_cast<uint8_t>(RecordTag::names):
        if (!names(c, at)) return false;
        break;
      case static_cast<uint8_t>(RecordTag::chunk):
        if (!chunk(c)) return false;
        break;
      case static_cast<uint8_t>(RecordTag::end):
        if (!end(c, at)) return false;
        if (pos_ != size_)
          return fail(pos_, fmt::format("expected the end of the file after the end record, "
                                        "found {} more bytes",
                                        size_ - pos_));
        return true;
      default:
        if (!lenient())
          return fail(
              at, fmt::format("expected a record tag (1 names, 2 chunk, 3 end), found {}", tag));
        ++out_.skipped_records;
    }
  }
}

bool Parser::names(Cursor& c, uint64_t record_offset) {
  uint64_t first = 0, count = 0;
  if (!c.uvarint(first, "the first kernel id")) return false;
  if (first != out_.kernel_names.size())
    return c.fail(record_offset + cst::kRecordHeaderBytes,
                  fmt::format("expected kernel names from id {}, found id {}",
                              out_.kernel_names.size(), first));
  if (!c.uvarint(count, "the kernel name count")) return false;
  if (count > c.left() || first + count > std::numeric_limits<uint32_t>::max())
    return c.fail(c.offset(),
                  fmt::format("expected at most {} names, found a count of {}", c.left(), count));
  for (uint64_t i = 0; i < count; ++i) {
    std::string name;
    if (!c.string(name, "a kernel name")) return false;
    out_.kernel_names.push_back(std::move(name));
    out_.kernel_name_offsets.push_back(record_offset);
  }
  if (!c.at_end())
    return c.fail(c.offset(), fmt::format("expected the end of the names record, found {} more "
                                          "bytes",
                                          c.left()));
  return true;
}

bool Parser::chunk(Cursor& c) {
  uint64_t thread = 0, count = 0;
  if (!c.uvarint(thread, "the thread id") || !c.uvarint(count, "the event count")) return false;
  if (thread > std::numeric_limits<uint32_t>::max())
    return c.fail(c.offset(), fmt::format("expected a 32-bit thread id, found {}", thread));
  // Every event takes at least 3 bytes: type, seq delta, time delta.
  if (count > c.left() / 3)
    return c.fail(c.offset(), fmt::format("expected at most {} events in {} bytes, found a count "
                                          "of {}",
                                          c.left() / 3, c.left(), count));
  ++out_.chunks;
  uint64_t seq = 0, time_ns = 0;
  for (uint64_t i = 0; i < count; ++i)
    if (!event(c, static_cast<uint32_t>(thread), i == 0, seq, time_ns)) return false;
  if (!c.at_end())
    return c.fail(c.offset(), fmt::format("expected the end of the chunk after {} events, found {} "
                                          "more bytes",
                                          count, c.left()));
  return true;
}

bool Parser::event(Cursor& c, uint32_t thread, bool first, uint64_t& seq, uint64_t& time_ns) {
  Event e;
  e.offset = c.offset();
  e.thread = thread;
  uint8_t type = 0;
  uint64_t seq_delta = 0;
  int64_t time_delta = 0;
  if (!c.byte(type, "an event type")) return false;
  const uint64_t seq_at = c.offset();
  if (!c.uvarint(seq_delta, "a sequence delta")) return false;
  if (!first && seq_delta == 0)
    return c.fail(seq_at, "expected a sequence delta of at least 1 within a chunk, found 0");
  if (seq_delta > std::numeric_limits<uint64_t>::max() - seq)
    return c.fail(seq_at, "expected a sequence number within 64 bits");
  seq += seq_delta;
  const uint64_t time_at = c.offset();
  if (!c.svarint(time_delta, "a time delta")) return false;
  if ((time_delta < 0 && static_cast<uint64_t>(-(time_delta + 1)) >= time_ns) ||
      (time_delta > 0 && static_cast<uint64_t>(time_delta) > ~time_ns))
    return c.fail(time_at, "expected a time within 0..2^64 ns");
  time_ns += static_cast<uint64_t>(time_delta);
  e.seq = seq;
  e.time_ns = time_ns;

  const cst::PayloadContext context{lenient(), event_types(), out_.kernel_names.size()};
  switch (cst::read_event_payload(c, type, context, e)) {
    case cst::PayloadKind::failed:
      return false;
    case cst::PayloadKind::skipped:
      ++out_.skipped_events;
      return true;
    case cst::PayloadKind::core:
      ++counted_by_type_[type - 1];
      break;
    case cst::PayloadKind::extension:
      break;  // extension events are counted only in the total
  }
  out_.events.push_back(std::move(e));
  return true;
}

bool Parser::end(Cursor& c, uint64_t record_offset) {
  CstEnd e;
  e.offset = record_offset;
  uint64_t types = 0, counters = 0;
  if (!c.uvarint(e.end_time_ns, "the end time") || !c.uvarint(e.chunks, "the chunk count") ||
      !c.uvarint(e.events, "the event count") || !c.uvarint(types, "the number of event types"))
    return false;
  if (types > c.left())
    return c.fail(c.offset(),
                  fmt::format("expected at most {} event types, found {}", c.left(), types));
  e.events_by_type.resize(types);
  for (uint64_t& n : e.events_by_type)
    if (!c.uvarint(n, "an event count")) return false;
  if (!c.uvarint(e.dropped_events, "the dropped event count") ||
      !c.uvarint(e.buffer_waits, "the buffer wait count") ||
      !c.uvarint(e.kernel_names, "the kernel name count") ||
      !c.uvarint(counters, "the counter count"))
    return false;
  if (counters > c.left())
    return c.fail(c.offset(),
                  fmt::format("expected at most {} counters, found {}", c.left(), counters));
  for (uint64_t i = 0; i < counters; ++i) {
    Counter counter;
    if (!c.string(counter.name, "a counter name") || !c.uvarint(counter.value, "a counter value"))
      return false;
    e.counters.push_back(std::move(counter));
  }
  if (!c.at_end() && !lenient())
    return c.fail(c.offset(),
                  fmt::format("expected the end of the end record, found {} more bytes", c.left()));
  out_.end = std::move(e);
  return true;
}

bool Parser::finish() {
  std::vector<Event>& events = out_.events;
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.seq < b.seq; });
  for (size_t i = 1; i < events.size(); ++i)
    if (events[i].seq == events[i - 1].seq) {
      const auto [first, second] = std::minmax(events[i - 1].offset, events[i].offset);
      return fail(second, fmt::format("expected a new sequence number, found {} again (first at "
                                      "offset {})",
                                      events[i].seq, first));
    }
  uint64_t ordinal = 0;
  for (Event& e : events)
    if (auto* it = std::get_if<IterationEvent>(&e.data)) it->ordinal = ordinal++;
  // A timing measures a launch or a prefetch; its target may be absent only
  // where events are missing (an unfinished recording).
  for (const Event& e : events) {
    const auto* t = std::get_if<TimingEvent>(&e.data);
    if (!t) continue;
    auto target = std::lower_bound(events.begin(), events.end(), t->target_seq,
                                   [](const Event& x, uint64_t seq) { return x.seq < seq; });
    if (target == events.end() || target->seq != t->target_seq) continue;
    if (target->type() != EventType::launch && target->type() != EventType::prefetch)
      return fail(e.offset, fmt::format("expected a timing of a launch or a prefetch, found one "
                                        "of a {} event (sequence number {})",
                                        to_string(target->type()), t->target_seq));
  }

  if (!out_.end) return true;
  // The end record's totals catch a chunk lost whole (a splice, a bad copy).
  const CstEnd& end = *out_.end;
  const uint64_t counted = events.size() + out_.skipped_events;
  std::string mismatch;
  if (end.chunks != out_.chunks)
    mismatch = fmt::format("{} chunks, the file holds {}", end.chunks, out_.chunks);
  else if (end.events != counted)
    mismatch = fmt::format("{} events, the file holds {}", end.events, counted);
  else if (end.kernel_names != out_.kernel_names.size() - 1)
    mismatch = fmt::format("{} kernel names, the file holds {}", end.kernel_names,
                           out_.kernel_names.size() - 1);
  for (size_t t = 0; mismatch.empty() && t < std::min(end.events_by_type.size(), kEventTypeCount);
       ++t)
    if (end.events_by_type[t] != counted_by_type_[t])
      mismatch = fmt::format("{} {} events, the file holds {}", end.events_by_type[t],
                             to_string(static_cast<EventType>(t + 1)), counted_by_type_[t]);
  if (!mismatch.empty())
    return fail(end.offset,
                "expected the end record's totals to match the file: it says " + mismatch);
  return true;
}

}  // namespace

bool parse_cst(std::span<const uint8_t> bytes, std::string_view name, const ReadOptions& options,
               CstTrace& out, std::string& error) noexcept {
  try {
    Parser parser(bytes, options, out);
    if (parser.run()) return true;
    error = fmt::format("{}: offset {}: {}", name, parser.failure().offset, parser.failure().what);
  } catch (const std::exception& e) {
    // Out of memory, in practice: a huge but plausible file.
    error = fmt::format("{}: cannot read: {}", name, e.what());
  }
  return false;
}

bool read_cst_file(const std::string& path, const ReadOptions& options, CstTrace& out,
                   std::string& error) noexcept {
  try {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      error = fmt::format("{}: cannot read: {}", path, std::strerror(errno));
      return false;
    }
    std::vector<uint8_t> bytes;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) bytes.reserve(static_cast<size_t>(st.st_size));
    uint8_t block[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, block, sizeof block);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        error = fmt::format("{}: cannot read: {}", path, std::strerror(errno));
        ::close(fd);
        return false;
      }
      bytes.insert(bytes.end(), block, block + n);
    }
    ::close(fd);
    return parse_cst(bytes, path, options, out, error);
  } catch (const std::exception& e) {
    error = fmt::format("{}: cannot read: {}", path, e.what());
    return false;
  }
}

}  // namespace cuswap::trace
