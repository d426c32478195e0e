// The functions that serve the hooks, one per handler named in
// CUSWAP_DRIVER_HOOKED (twins such as `_ptsz` share one). Each is called
// only when the call should be observed (Entry::active()), with the real
// driver function of the exact variant that was called; it calls it, then
// records what happened. Declarations are generated from the list, so a
// handler whose parameters drift from cuda.h fails to link.
#pragma once

#include "runtime/runtime.h"

#define CUSWAP_EXPAND(...) __VA_ARGS__

namespace cuswap::hooks {

#define CUSWAP_REAL_TYPE(name, params, args, handler) using Real_##name = CUresult(CUDAAPI*) params;
CUSWAP_DRIVER_HOOKED(CUSWAP_REAL_TYPE)
#undef CUSWAP_REAL_TYPE

#define CUSWAP_DECLARE_HANDLER(name, params, args, handler) \
  CUresult handle_##handler(Entry& entry, Real_##name real, CUSWAP_EXPAND params) noexcept;
CUSWAP_DRIVER_HOOKED(CUSWAP_DECLARE_HANDLER)
#undef CUSWAP_DECLARE_HANDLER

}  // namespace cuswap::hooks
