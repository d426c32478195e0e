// import_proto: binary protobuf traces. The message is told from its first
// fields (Note [Telling the protos apart], proto_wire.cpp), the wire format
// is checked so that damage is reported at its byte offset, then protobuf
// decodes it and the importer for its kind runs.
#include <climits>

#include <fmt/format.h>

#include "tracer/import/importers.h"
#include "tracer/import/proto_importers.h"
#include "tracer/import/proto_wire.h"

namespace cuswap::trace::import {

bool import_proto(std::string_view bytes, std::string_view name, const ImportOptions&,
                  Trace& out, std::string& error) {
  const WireError wire = find_wire_error(bytes);
  if (wire.found) {
    error = fmt::format("{}: offset {}: expected {} (not a trace cuswap can read, or a damaged "
                        "protobuf)", name, wire.offset, wire.expected);
    return false;
  }
  if (bytes.size() > INT_MAX) {
    error = fmt::format("{}: offset {}: expected a protobuf message under 2 GiB", name, INT_MAX);
    return false;
  }
  switch (detect_proto_kind(bytes)) {
    case ProtoKind::xspace: return import_xspace(bytes, name, out, error);
    case ProtoKind::step_stats: return import_step_stats(bytes, name, false, out, error);
    case ProtoKind::run_metadata: return import_step_stats(bytes, name, true, out, error);
    case ProtoKind::unknown: break;
  }
  error = fmt::format("{}: offset 0: expected a trace: .cst, JSON, or a TensorFlow XSpace, "
                      "StepStats or RunMetadata protobuf", name);
  return false;
}

}  // namespace cuswap::trace::import
