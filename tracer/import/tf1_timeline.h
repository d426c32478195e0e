// The two halves of the TF1 timeline importer. tf1_timeline_events.cpp reads
// the Chrome-trace events into the raw records below; tf1_timeline.cpp joins
// kernels to their ops (Note [GPU timelines] there) and builds the ops and
// tensors. Nothing else includes this header.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <simdjson.h>

#include "tracer/import/json_util.h"
#include "tracer/import/tf_common.h"
#include "tracer/trace.h"

namespace cuswap::trace::import::tf1 {

// A tensor object: its `N` event, with the `O` snapshot's description.
struct RawTensor {
  std::string name;  // as the object is named: "node" or "node:i"
  int64_t alloc_ns = 0;
  int64_t pid = 0;
  uint64_t object_id = 0;
  bool described = false;
  TensorDescriptionText description;
  std::optional<int64_t> delete_ns;
};

// What a pid's events are (Note [GPU timelines]).
enum class Lane : uint8_t {
  executor,   // "/job:…/device:GPU:0", "/job:…/cpu:0": ops as the executor ran them
  stream,     // "/device:GPU:0/stream:N": kernels and copies as the device ran them
  aggregate,  // "/device:GPU:0/stream:all", "/device:GPU:0/memcpy": repeats of stream lanes
};

struct Device {
  std::string name;  // "/job:…/device:GPU:0"
  bool gpu = false;
  int ordinal = 0;
  Lane lane = Lane::executor;
  uint32_t stream = 0;  // "/device:GPU:0/stream:N"
};

// An X event, kept until every pid is known.
struct RawOp {
  Op op;
  int64_t pid = 0;
  std::vector<std::string> inputs;  // tensor keys ("node:i")
};

// Everything the events say, in source order.
struct TimelineEvents {
  std::unordered_map<int64_t, Device> devices;  // by pid, from the `M` process names
  std::vector<RawOp> raw_ops;
  std::vector<RawTensor> tensors;
  std::unordered_map<std::string, int64_t> deletes;  // name -> D time
  std::map<std::string, uint64_t> counter_peaks;     // the `C` counters' maxima
};

// Reads `events` (the traceEvents array at `path`); false, with the error
// set, at the first event that is not as expected.
[[nodiscard]] bool read_timeline_events(simdjson::dom::array events, const JsonPath& path,
                                        const JsonErrors& errors, TimelineEvents& out);

// "node" and "node:0" name the same tensor: the key is always "node:i".
std::string tensor_key(std::string_view name);

}  // namespace cuswap::trace::import::tf1
