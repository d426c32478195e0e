// The protobuf importers, over bytes whose wire format was checked and whose
// kind was decided by import_proto (proto_detect.cpp).
#pragma once

#include <string>
#include <string_view>

#include "tracer/trace.h"

namespace cuswap::trace::import {

// TensorFlow 1 StepStats, or a RunMetadata holding one (`run_metadata`).
[[nodiscard]] bool import_step_stats(std::string_view bytes, std::string_view name,
                                     bool run_metadata, Trace& out, std::string& error);
// TensorFlow 2 profiler XSpace (xplane.pb).
[[nodiscard]] bool import_xspace(std::string_view bytes, std::string_view name, Trace& out,
                                 std::string& error);

}  // namespace cuswap::trace::import
