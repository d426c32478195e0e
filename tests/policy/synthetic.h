// Traces built in code for the policy tests, small enough that the right
// answer can be derived by hand: ops back to back on one device, tensors
// allocated at their producer's start and freed at their last op's end.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "policy/link.h"
#include "tracer/trace.h"

namespace cuswap::policy::test {

class TraceBuilder {
 public:
  // An op of `duration_ns` that starts when the previous one ends.
  uint32_t op(const std::string& name, int64_t duration_ns, const std::string& type = "") {
    trace::Op o;
    o.name = name;
    o.type = type.empty() ? name : type;
    o.start_ns = now_ns_;
    o.duration_ns = duration_ns;
    now_ns_ += duration_ns;
    trace_.ops.push_back(o);
    return static_cast<uint32_t>(trace_.ops.size() - 1);
  }
  // A tensor made by `producer`, touched by `uses` (producer included by
  // the builder), freed when op `free_after` ends (never when nullopt).
  uint32_t tensor(const std::string& name, uint64_t size_bytes, uint32_t producer,
                  std::vector<uint32_t> uses, std::optional<uint32_t> free_after) {
    trace::Tensor t;
    t.name = name;
    t.size_bytes = t.requested_bytes = size_bytes;
    t.producer = producer;
    t.alloc_ns = trace_.ops[producer].start_ns;
    uses.insert(uses.begin(), producer);
    t.accesses = uses;
    if (free_after)
      t.free_ns = trace_.ops[*free_after].start_ns + trace_.ops[*free_after].duration_ns;
    trace_.tensors.push_back(t);
    return static_cast<uint32_t>(trace_.tensors.size() - 1);
  }
  // A tensor resident before the trace (a weight).
  uint32_t weight(const std::string& name, uint64_t size_bytes, std::vector<uint32_t> uses) {
    trace::Tensor t;
    t.name = name;
    t.size_bytes = t.requested_bytes = size_bytes;
    t.persistent = true;
    t.accesses = uses;
    trace_.tensors.push_back(t);
    return static_cast<uint32_t>(trace_.tensors.size() - 1);
  }
  // Frees a tensor when op `after` ends.
  void free_at(uint32_t tensor, uint32_t after) {
    trace_.tensors[tensor].free_ns = trace_.ops[after].start_ns + trace_.ops[after].duration_ns;
  }
  trace::Trace take() {
    trace_.source = "synthetic";
    // Tensors are sorted by allocation time, as validate() asks.
    std::stable_sort(
        trace_.tensors.begin(), trace_.tensors.end(),
        [](const trace::Tensor& a, const trace::Tensor& b) { return a.alloc_ns < b.alloc_ns; });
    return std::move(trace_);
  }

 private:
  trace::Trace trace_;
  int64_t now_ns_ = 0;
};

// A link where a copy of n bytes takes n ns plus the latency.
inline Link test_link(int64_t latency_ns = 0, bool contention = false) {
  return Link{"test", 1e9, latency_ns, contention};
}

}  // namespace cuswap::policy::test
