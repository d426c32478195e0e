// The Driver table: the real driver's entry points. Nothing in cuswap calls
// the CUDA driver any other way, so tests can point the table at simcuda
// without LD_PRELOAD, and the shim's own calls never re-enter its hooks.
#pragma once

#include "allocator/driver_api.h"

namespace cuswap {

// Looks a symbol up in the real driver; `context` is the resolver's own.
using SymbolResolver = void* (*)(void* context, const char* name);

struct Driver {
#define CUSWAP_DRIVER_MEMBER_HOOKED(name, params, args, handler) \
  CUresult(CUDAAPI* name) params = nullptr;
#define CUSWAP_DRIVER_MEMBER_USED(name, params, args) CUresult(CUDAAPI* name) params = nullptr;
  CUSWAP_DRIVER_HOOKED(CUSWAP_DRIVER_MEMBER_HOOKED)
  CUSWAP_DRIVER_USED(CUSWAP_DRIVER_MEMBER_USED)
#undef CUSWAP_DRIVER_MEMBER_HOOKED
#undef CUSWAP_DRIVER_MEMBER_USED

  // Fills every entry the driver has; missing ones stay nullptr (an older
  // driver, or simcuda, lacks some). Returns the number resolved.
  int load(SymbolResolver resolve, void* context);

  // The table for the library loaded as `handle` (from dlopen), through
  // `dlsym_fn` (the real dlsym: the shim overrides dlsym).
  int load_from_handle(void* handle, void* (*dlsym_fn)(void*, const char*));
};

}  // namespace cuswap
