// Iterations of a trace that marks none, found from its repeating op
// sequence (Note [Steps without marks]). Pure logic over the trace's ops.
//
// Note [Steps without marks]
// A profile captured without step marks (a PyTorch trace without
// ProfilerStep#N, a timeline of several session runs) still repeats: every
// training step runs the same ops in the same order. Read as one window it
// plans several steps as one, with the warm-up step inside. So, as the
// runtime does for launches (Note [Iteration detection]), the ops are read
// as a sequence of names (the planned device's compute ops, the ones the
// workload keeps) and the step is the shortest period P, of at least
// kMinStepOps ops, with which the sequence repeats from some point on to its
// end: op i is op i + P for every i from there. It must repeat for at least
// two whole periods and over at least half the ops, so that one step's
// inner repeats (a layer, an RNN's time steps) do not pass for steps: they
// stop where the step goes on to other work. The steps are the whole periods
// from where the repeat begins; the ops before it (warm-up, start-up work)
// and a last partial period belong to none. A trace that never repeats so
// stays one window.
#pragma once

#include <cstdint>
#include <vector>

#include "common/iteration_detector.h"
#include "tracer/trace.h"

namespace cuswap::policy {

// The shortest step, as the runtime's detector takes it.
inline constexpr uint64_t kMinStepOps = IterationDetector::kMinPeriod;

// The steps of `trace`'s ops on `device` (-1: every op; copies left out),
// as iterations over the trace's op indices and times; empty when its ops
// do not repeat so (Note [Steps without marks]).
std::vector<trace::Iteration> find_steps(const trace::Trace& trace, int device);

// The shortest period of `keys` by the rules of Note [Steps without
// marks], and where its repeat begins; {0, 0} when there is none.
struct Period {
  uint32_t ops = 0;
  uint32_t begins = 0;
};
Period repeating_period(const std::vector<uint64_t>& keys);

}  // namespace cuswap::policy
