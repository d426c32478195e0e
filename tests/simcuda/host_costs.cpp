// simcuda: host threads' clocks and what driver calls charge them (Note
// [Host time is per thread] in sim.h, Note [Host costs] in host_costs.h).
#include <algorithm>

#include "tests/simcuda/sim.h"

namespace simcuda {
namespace {

constexpr double kPageBytes = static_cast<double>(kGranularity);

// The calling thread's entry in State::host_clocks, invalidated by reset.
struct ThreadClock {
  uint64_t generation = 0;
  uint64_t* clock = nullptr;
};
thread_local ThreadClock tl_clock;

}  // namespace

uint64_t latest_host_clock() {
  uint64_t latest = 0;
  for (const auto& [thread, ns] : state().host_clocks)
    latest = std::max(latest, ns);
  return latest;
}

uint64_t& host_clock() {
  State& s = state();
  if (tl_clock.generation != s.generation || !tl_clock.clock) {
    auto [it, added] = s.host_clocks.try_emplace(std::this_thread::get_id(), 0);
    // A new thread starts now: where the latest thread is.
    if (added) it->second = latest_host_clock();
    tl_clock = {s.generation, &it->second};  // node addresses survive rehashing
  }
  return *tl_clock.clock;
}

void advance_host_clock(double us) {
  if (us > 0) host_clock() += ns_from_us(us);
}

void charge_call(double call_us, double page_us, uint64_t bytes) {
  if (!state().config->host_costs) return;
  advance_host_clock(call_us + page_us * static_cast<double>(bytes) / kPageBytes);
}

void count_host_sync() {
  ++state().host_syncs;
}

void count_vmm_call() {
  ++state().vmm_calls;
}

double enqueue_cost_us(OpKind kind) {
  const Config& c = *state().config;
  if (!c.host_costs) return c.costs.launch_latency_us;
  switch (kind) {
    case OpKind::kernel:
    case OpKind::copy:
    case OpKind::set:
      return c.costs.launch_latency_us;
    case OpKind::record:
      return c.costs.event_record_us;
    case OpKind::wait:
      return c.costs.stream_wait_us;
    case OpKind::free_async:
      return c.costs.free_async_us;
  }
  return c.costs.launch_latency_us;
}

}  // namespace simcuda

using namespace simcuda;

extern "C" {

SIMCUDA_API uint64_t simcuda_host_clock_ns(void) {
  std::lock_guard lock(state().mu);
  return host_clock();
}

SIMCUDA_API void simcuda_host_clock_join(uint64_t ns) {
  std::lock_guard lock(state().mu);
  uint64_t& clock = host_clock();
  clock = std::max(clock, ns);
}

}  // extern "C"
