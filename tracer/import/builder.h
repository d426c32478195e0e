// TraceBuilder: what every importer shares. Importers append ops, tensors and
// iteration spans in source order, with times in any origin and op indices
// in that order; finish() establishes the invariants of tracer/trace.h.
//
// Invariants after finish():
// - times are shifted so that the earliest op start, tensor allocation or
//   iteration start is 0 (persistent tensors stay at 0);
// - ops are sorted stably by start time, and every op index in a tensor is
//   remapped to the sorted position;
// - a tensor's accesses are sorted by their op's start time, without
//   duplicates, and include the producer;
// - tensors are sorted stably by allocation time;
// - iteration spans are clipped so they do not overlap; ops belong to the
//   iteration whose span holds their start, tensors the one that holds their
//   allocation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracer/trace.h"

namespace cuswap::trace::import {

class TraceBuilder {
 public:
  explicit TraceBuilder(Trace& trace) : trace_(trace) {}

  // Returns the op's index in source order (what tensors refer to).
  uint32_t add_op(Op op) {
    trace_.ops.push_back(std::move(op));
    return static_cast<uint32_t>(trace_.ops.size() - 1);
  }
  Op& op(uint32_t index) { return trace_.ops[index]; }
  size_t op_count() const { return trace_.ops.size(); }

  Tensor& add_tensor(Tensor tensor) {
    trace_.tensors.push_back(std::move(tensor));
    return trace_.tensors.back();
  }

  // An iteration from start_ns to end_ns, in the same time origin as ops.
  void add_iteration(int64_t start_ns, int64_t end_ns) { spans_.push_back({start_ns, end_ns}); }

  // An allocator's own figure; adding the same allocator again keeps the max.
  void report_allocator(const std::string& name, MemorySpace space, int device,
                        std::optional<uint64_t> peak_bytes);

  void note(std::string line) { trace_.notes.push_back(std::move(line)); }

  // Memory an allocator held before the trace and did not free in it
  // (weights, optimizer state): `held_bytes` (the allocator's own count
  // before its first event) less what the trace's persistent tensors of
  // that allocator give back, as one persistent tensor named `name`.
  // Returns its size (0: nothing added).
  uint64_t add_held_before(const std::string& allocator, int device, uint64_t held_bytes,
                           std::string name);

  // Sorts, remaps and shifts as the header says.
  void finish();

 private:
  struct Span {
    int64_t start_ns;
    int64_t end_ns;
  };
  Trace& trace_;
  std::vector<Span> spans_;
};

// Saturating conversions from the sources' units to nanoseconds.
int64_t micros_to_ns(double micros);
int64_t micros_to_ns(int64_t micros);
int64_t picos_to_ns(uint64_t picos);

}  // namespace cuswap::trace::import
