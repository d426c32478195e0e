#include "allocator/driver.h"

#include <type_traits>

namespace cuswap {

int Driver::load(SymbolResolver resolve, void* context) {
  int resolved = 0;
  auto one = [&](auto& slot, const char* name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(resolve(context, name));
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

int Driver::load_from_handle(void* handle, void* (*dlsym_fn)(void*, const char*)) {
  struct Lookup {
    void* handle;
    void* (*dlsym_fn)(void*, const char*);
  } lookup{handle, dlsym_fn};
  return load(
      [](void* context, const char* name) {
        auto* l = static_cast<Lookup*>(context);
        return l->dlsym_fn(l->handle, name);
      },
      &lookup);
}

}  // namespace cuswap
