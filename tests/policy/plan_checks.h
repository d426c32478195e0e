// Checks on a plan and its simulation that several policy tests make.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/link.h"
#include "policy/plan.h"
#include "policy/simulator.h"
#include "policy/workload.h"

namespace cuswap::policy::test {

// Every entry whose tensor left was away, on the simulated timeline (`r`
// with its timeline recorded), for at least its copy out and its copy back,
// and none was asked back while its copy out ran. Returns how many entries
// it checked.
inline size_t expect_time_away_covers_copies(const Workload& w, const Plan& plan,
                                             const SimResult& r, const Link& link,
                                             const std::string& name) {
  EXPECT_EQ(r.wasted_evictions, 0u) << name;
  std::vector<int64_t> start(w.ops.size()), end(w.ops.size());
  for (const OpSpan& s : r.ops)
    start[s.op] = s.start_ns, end[s.op] = s.end_ns;
  size_t checked = 0;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    if (r.entry_cancelled[i] != 0) continue;  // called off: nothing moved
    const PlanEntry& e = plan.entries[i];
    if (!e.leaves || !e.returns) continue;  // its other side is in another iteration
    const uint32_t after = e.evict_after.index, next = e.next_use.index;
    const int64_t away = next <= after ? r.iteration_ns - end[after] + start[next]
                                       : start[next] - end[after];
    EXPECT_GE(away, 2 * link.copy_ns(e.tensor.size_bytes))
        << name << ": entry " << i << " (" << e.tensor.name << ")";
    ++checked;
  }
  return checked;
}

}  // namespace cuswap::policy::test
