// Batch scaling: from traces of one model at two or more batch sizes, a
// model of every tensor's size and every op's duration as a fixed part plus
// a part proportional to the batch (least-squares line), a workload
// synthesized at any batch from it, and the largest batch that fits a
// budget without swapping and with each planner.
//
// Invariants:
// - tensors are matched across traces by their producer (op name and its
//   ordinal among ops of that name) and their rank among that producer's
//   tensors, resident tensors by name; ops by (name, ordinal);
// - the synthesized workload has the structure of the largest batch's
//   trace; at a batch that was traced it reproduces matched sizes and
//   durations up to the fit's residual.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "policy/planner.h"
#include "policy/workload.h"

namespace cuswap::policy {

struct BatchSample {
  uint32_t batch = 0;
  Workload workload;
};

struct LinearFit {
  double fixed = 0;
  double per_batch = 0;
  double at(uint32_t batch) const { return fixed + per_batch * batch; }
};

struct BatchModel {
  std::vector<uint32_t> batches;        // ascending
  Workload reference;                   // the largest batch's workload
  std::vector<LinearFit> tensor_bytes;  // per reference tensor
  std::vector<LinearFit> op_ns;         // per reference op
  size_t matched_tensors = 0;           // reference tensors found in every sample
};

// false with one line when fewer than two distinct batch sizes are given.
[[nodiscard]] bool fit_batch_model(std::vector<BatchSample> samples, BatchModel& out,
                                   std::string& error);

// The workload at `batch`: sizes and durations from the fits (never below 0).
Workload synthesize(const BatchModel& model, uint32_t batch);

struct MaxBatchOptions {
  PlanRequest request;        // the budget, link and time scale
  double max_overhead = 0.1;  // iteration time at most (1 + this) x infinite memory
  uint32_t batch_cap = 1u << 16;
};

struct MaxBatchRow {
  std::string planner;      // "" for no swapping
  uint32_t max_batch = 0;   // 0: not even batch 1
  bool capped = false;      // still fitting at batch_cap
  uint64_t peak_bytes = 0;  // at max_batch
  int64_t iteration_ns = 0;
  double overhead = 0;
  std::string limit;  // what fails one batch above (or at batch 1, or the cap)
};

// One row without swapping, then one per planner: the largest batch that
// passes (Note [Batch search] in batch_scaling.cpp: every power of two and
// traced batch, then bisection above the largest that passed).
std::vector<MaxBatchRow> max_batch(const BatchModel& model, const MaxBatchOptions& options,
                                   std::span<const Planner* const> planners);

}  // namespace cuswap::policy
