#include "allocator/driver.h"

#include <type_traits>

namespace cuswap {

int Driver::load(void* handle, void* (*dlsym_fn)(void*, const char*)) {
  int resolved = 0;
  auto one = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym_fn(handle, name));
    resolved += slot != nullptr;
  };
#define CUSWAP_DRIVER_LOAD_HOOKED(name, params, args, handler) one(name, #name);
#define CUSWAP_DRIVER_LOAD_USED(name, params, args) one(name, #name);
  CUSWAP_DRIVER_HOOKED(CUSWAP_DRIVER_LOAD_HOOKED)
  CUSWAP_DRIVER_USED(CUSWAP_DRIVER_LOAD_USED)
#undef CUSWAP_DRIVER_LOAD_HOOKED
#undef CUSWAP_DRIVER_LOAD_USED
  return resolved;
}

}  // namespace cuswap
