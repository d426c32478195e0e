// Registers the replay's kernels with simcuda (bench/replay/sim_kernels.cpp).
#pragma once

#include "bench/replay/driver.h"

namespace cuswap::bench {

// Needs d.simcuda_register_kernel (simcuda only).
CUresult register_sim_kernels(const Driver& d);

}  // namespace cuswap::bench
