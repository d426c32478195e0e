// The hand-checkable training step used by the planner tests: a forward
// pass f0..f3, a loss op L and a backward pass b3..b0, 1 ms each. Feature
// map x_i (1000 B) is made by f_i, read by f_{i+1} and by b_i, and freed
// when b_i ends. Live bytes per op: 1000 2000 3000 4000 4000 4000 3000
// 2000 1000; the loss point (first peak) is f3, so the forward feature
// maps with a backward gap are x0 (after f1, back for b0) and x1 (after
// f2, back for b1).
#pragma once

#include <fmt/format.h>

#include "tests/policy/synthetic.h"

namespace cuswap::policy::test {

// Names are made with fmt::format: GCC 12 at -O3 warns (-Wrestrict) about an
// overlap that cannot happen in "f" + std::to_string(i).
inline trace::Trace training_chain() {
  TraceBuilder b;
  const int64_t ms = 1'000'000;
  uint32_t f[4], back[4];
  for (int i = 0; i < 4; ++i)
    f[i] = b.op(fmt::format("f{}", i), ms, "Conv2D");
  b.op("L", ms, "Loss");
  for (int i = 3; i >= 0; --i)
    back[i] = b.op(fmt::format("b{}", i), ms, "Conv2DBackprop");
  for (int i = 0; i < 4; ++i) {
    std::vector<uint32_t> uses;
    if (i < 3) uses.push_back(f[i + 1]);
    if (i == 3) uses.push_back(4);
    uses.push_back(back[i]);
    b.tensor(fmt::format("x{}", i), 1000, f[i], uses, back[i]);
  }
  return b.take();
}

}  // namespace cuswap::policy::test
