// Finding the driver at run time (bench/replay/driver.h).
#include "bench/replay/driver.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace cuswap::bench {

#define CUSWAP_REPLAY_STR2(x) #x
#define CUSWAP_REPLAY_STR(x) CUSWAP_REPLAY_STR2(x)

const char* Driver::error_name(CUresult r) const {
  const char* name = nullptr;
  if (cuGetErrorName && cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return "an unknown CUresult";
}

bool open_driver(Driver& d, std::string& error) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    error = fmt::format("cannot load libcuda.so.1: {}", dlerror());
    return false;
  }
#define CUSWAP_REPLAY_RESOLVE(name)                                                 \
  d.name = reinterpret_cast<decltype(d.name)>(dlsym(lib, CUSWAP_REPLAY_STR(name))); \
  if (!d.name) {                                                                    \
    error = fmt::format("libcuda.so.1 has no {}", CUSWAP_REPLAY_STR(name));         \
    return false;                                                                   \
  }
  CUSWAP_REPLAY_DRIVER(CUSWAP_REPLAY_RESOLVE)
#undef CUSWAP_REPLAY_RESOLVE
  d.simcuda_register_kernel =
      reinterpret_cast<decltype(d.simcuda_register_kernel)>(dlsym(lib, "simcuda_register_kernel"));
  d.simcuda_get_stats =
      reinterpret_cast<decltype(d.simcuda_get_stats)>(dlsym(lib, "simcuda_get_stats"));
  d.simcuda_access = reinterpret_cast<decltype(d.simcuda_access)>(dlsym(lib, "simcuda_access"));
  d.simcuda_host_clock_ns =
      reinterpret_cast<decltype(d.simcuda_host_clock_ns)>(dlsym(lib, "simcuda_host_clock_ns"));
  d.simcuda_host_clock_join =
      reinterpret_cast<decltype(d.simcuda_host_clock_join)>(dlsym(lib, "simcuda_host_clock_join"));
  d.cuswap_iteration_begin =
      reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cuswap_iteration_begin"));
  d.cuswap_stats_json =
      reinterpret_cast<const char* (*)()>(dlsym(RTLD_DEFAULT, "cuswap_stats_json"));
  d.cuswap_torch_alloc =
      reinterpret_cast<decltype(d.cuswap_torch_alloc)>(dlsym(RTLD_DEFAULT, "cuswap_torch_alloc"));
  d.cuswap_torch_free =
      reinterpret_cast<decltype(d.cuswap_torch_free)>(dlsym(RTLD_DEFAULT, "cuswap_torch_free"));
  return true;
}

}  // namespace cuswap::bench
