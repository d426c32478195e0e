// Wire-format scanning (proto_wire.h).
//
// Note [Telling the protos apart]: XSpace, StepStats and RunMetadata all
// hold a message in field 1. Its first field decides: XPlane starts with its
// id (field 1, varint) or its name (field 2, a string such as "/host:CPU");
// DeviceStepStats starts with its device (field 1, a string starting with
// '/'); RunMetadata's StepStats starts with a DeviceStepStats (field 1, a
// message). An XSpace may also start with hostnames (field 4).
#include "tracer/import/proto_wire.h"

#include <google/protobuf/descriptor.h>

#include <fmt/format.h>

namespace cuswap::trace::import {
namespace {

struct Field {
  uint32_t number = 0;
  uint8_t wire_type = 0;
  size_t offset = 0;  // of the tag
  std::string_view payload;  // wire type 2 only
};

bool read_varint(std::string_view b, size_t& pos, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= b.size()) return false;
    const auto byte = static_cast<uint8_t>(b[pos++]);
    out |= uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

// Reads one field at `pos`; on failure `err` says where and what.
bool next_field(std::string_view b, size_t& pos, Field& f, WireError& err) {
  f.offset = pos;
  uint64_t tag = 0;
  if (!read_varint(b, pos, tag)) {
    err = {true, f.offset, "a field tag (a varint)"};
    return false;
  }
  f.number = static_cast<uint32_t>(tag >> 3);
  f.wire_type = static_cast<uint8_t>(tag & 7);
  if (f.number == 0 || tag >> 3 > 0x1fffffff) {
    err = {true, f.offset, "a field tag with a field number from 1 to 536870911"};
    return false;
  }
  uint64_t value = 0;
  switch (f.wire_type) {
    case 0:
      if (!read_varint(b, pos, value)) {
        err = {true, pos, fmt::format("the varint value of field {}", f.number)};
        return false;
      }
      return true;
    case 1:
    case 5: {
      const size_t n = f.wire_type == 1 ? 8 : 4;
      if (b.size() - pos < n) {
        err = {true, pos, fmt::format("{} bytes of field {} (the data ends early)", n, f.number)};
        return false;
      }
      pos += n;
      return true;
    }
    case 2: {
      const size_t length_at = pos;
      if (!read_varint(b, pos, value)) {
        err = {true, length_at, fmt::format("the length of field {} (a varint)", f.number)};
        return false;
      }
      if (value > b.size() - pos) {
        err = {true, length_at,
               fmt::format("a length of field {} within the data ({} bytes declared, {} left)",
                           f.number, value, b.size() - pos)};
        return false;
      }
      f.payload = b.substr(pos, value);
      pos += value;
      return true;
    }
    default:
      err = {true, f.offset,
             fmt::format("wire type 0, 1, 2 or 5 for field {} (found {})", f.number, f.wire_type)};
      return false;
  }
}

bool first_field(std::string_view b, Field& f) {
  size_t pos = 0;
  WireError ignored;
  return !b.empty() && next_field(b, pos, f, ignored);
}

bool looks_like_device(std::string_view s) { return !s.empty() && s[0] == '/'; }

}  // namespace

WireError find_wire_error(std::string_view bytes) {
  size_t pos = 0;
  WireError err;
  Field f;
  while (pos < bytes.size())
    if (!next_field(bytes, pos, f, err)) return err;
  return {};
}

namespace {

// The wire type a field's declaration allows, or -1 for any (unknown fields).
int wire_type_of(const google::protobuf::FieldDescriptor& field) {
  using F = google::protobuf::FieldDescriptor;
  switch (field.type()) {
    case F::TYPE_DOUBLE: case F::TYPE_FIXED64: case F::TYPE_SFIXED64: return 1;
    case F::TYPE_FLOAT: case F::TYPE_FIXED32: case F::TYPE_SFIXED32: return 5;
    case F::TYPE_STRING: case F::TYPE_BYTES: case F::TYPE_MESSAGE: return 2;
    case F::TYPE_GROUP: return 3;
    default: return 0;  // varints
  }
}

WireError scan(std::string_view bytes, size_t base, const google::protobuf::Descriptor& message,
               int depth) {
  size_t pos = 0;
  WireError err;
  Field f;
  while (pos < bytes.size()) {
    if (!next_field(bytes, pos, f, err)) {
      err.offset += base;
      return err;
    }
    const google::protobuf::FieldDescriptor* field = message.FindFieldByNumber(static_cast<int>(f.number));
    if (!field) continue;  // unknown fields are kept, not checked
    const int expected = wire_type_of(*field);
    // Packed repeated scalars come as one length-delimited field.
    const bool packed = field->is_repeated() && f.wire_type == 2 && expected != 2;
    if (f.wire_type != expected && !packed) {
      return {true, base + f.offset,
              fmt::format("wire type {} for field {} ({}.{}), found {}", expected, f.number,
                          message.name(), field->name(), f.wire_type)};
    }
    if (field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE && depth < 64) {
      const size_t payload_at = static_cast<size_t>(f.payload.data() - bytes.data());
      WireError inner = scan(f.payload, base + payload_at, *field->message_type(), depth + 1);
      if (inner.found) return inner;
    }
  }
  return {};
}

}  // namespace

WireError find_nested_wire_error(std::string_view bytes,
                                 const google::protobuf::Descriptor& message) {
  return scan(bytes, 0, message, 0);
}

ProtoKind detect_proto_kind(std::string_view bytes) {
  size_t pos = 0;
  WireError err;
  Field f;
  while (pos < bytes.size() && next_field(bytes, pos, f, err)) {
    if (f.number == 4 && f.wire_type == 2) return ProtoKind::xspace;  // hostnames
    if (f.number != 1 || f.wire_type != 2) continue;
    Field inner;
    if (!first_field(f.payload, inner)) return ProtoKind::unknown;
    if (inner.number == 1 && inner.wire_type == 0) return ProtoKind::xspace;
    if (inner.wire_type != 2) return ProtoKind::unknown;
    if (inner.number == 2 || inner.number == 3)
      return looks_like_device(inner.payload) || inner.number == 3 ? ProtoKind::xspace
                                                                   : ProtoKind::step_stats;
    if (inner.number != 1) return ProtoKind::unknown;
    if (looks_like_device(inner.payload)) return ProtoKind::step_stats;
    Field innermost;
    if (first_field(inner.payload, innermost) && innermost.number == 1 &&
        innermost.wire_type == 2 && looks_like_device(innermost.payload))
      return ProtoKind::run_metadata;
    return ProtoKind::unknown;
  }
  return ProtoKind::unknown;
}

}  // namespace cuswap::trace::import
