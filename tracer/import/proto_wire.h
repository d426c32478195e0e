// The protobuf wire format, read just far enough to tell an XSpace from a
// StepStats or a RunMetadata (they all start with a message in field 1) and
// to name the byte offset where a damaged message stops making sense, which
// protobuf's own parser does not say.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace google::protobuf {
class Descriptor;
}

namespace cuswap::trace::import {

enum class ProtoKind : uint8_t { unknown, xspace, step_stats, run_metadata };

struct WireError {
  bool found = false;
  size_t offset = 0;
  std::string expected;
};

// The first field, at the top level, that is not well formed.
WireError find_wire_error(std::string_view bytes);

// The same through nested messages, by the schema of `message`: the first
// field, at any depth, that is not well formed or has a wire type its
// declaration does not allow; offsets count from the start of `bytes`.
WireError find_nested_wire_error(std::string_view bytes,
                                 const google::protobuf::Descriptor& message);

// Decides from the first message in field 1 (see the .cpp for the rules).
ProtoKind detect_proto_kind(std::string_view bytes);

}  // namespace cuswap::trace::import
