// The Driver table: the real driver's entry points. Nothing in cuswap calls
// the CUDA driver any other way, so tests can point the table at simcuda
// without LD_PRELOAD, and the shim's own calls never re-enter its hooks.
#pragma once

#include "allocator/driver_api.h"

namespace cuswap {

struct Driver {
#define CUSWAP_DRIVER_MEMBER_HOOKED(name, params, args, handler) \
  CUresult(CUDAAPI* name) params = nullptr;
#define CUSWAP_DRIVER_MEMBER_USED(name, params, args) CUresult(CUDAAPI* name) params = nullptr;
  CUSWAP_DRIVER_HOOKED(CUSWAP_DRIVER_MEMBER_HOOKED)
  CUSWAP_DRIVER_USED(CUSWAP_DRIVER_MEMBER_USED)
#undef CUSWAP_DRIVER_MEMBER_HOOKED
#undef CUSWAP_DRIVER_MEMBER_USED

  // Fills every entry the driver loaded as `handle` (from dlopen) has,
  // looked up through `dlsym_fn` (the real dlsym: the shim overrides dlsym);
  // missing ones stay nullptr (an older driver, or simcuda, lacks some).
  // Returns the number resolved.
  int load(void* handle, void* (*dlsym_fn)(void*, const char*));
};

}  // namespace cuswap
