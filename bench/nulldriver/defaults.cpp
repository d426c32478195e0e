// nulldriver: a libcuda.so.1 whose every function does nothing and succeeds,
// so a benchmark of cuswap's hooks measures the hooks and not the driver.
// These are the defaults, generated from cuswap's driver list; driver.cpp
// overrides the few that must answer something.
#include "allocator/driver_api.h"

namespace {
template <typename... Args>
CUresult succeed(Args&&...) {
  return CUDA_SUCCESS;
}
}  // namespace

extern "C" {
#define NULLDRIVER_DEFAULT(name, params, args, ...)    \
  __attribute__((weak)) CUresult CUDAAPI name params { \
    return succeed args;                               \
  }
CUSWAP_DRIVER_HOOKED(NULLDRIVER_DEFAULT)
CUSWAP_DRIVER_USED(NULLDRIVER_DEFAULT)
#undef NULLDRIVER_DEFAULT
}
