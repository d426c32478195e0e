// The workload through dlopen("libcuda.so.1") and dlsym on its handle, as
// TensorFlow finds the driver. A handle lookup searches only that library,
// so only cuswap's dlsym override can interpose here.
#include <dlfcn.h>

#include "tests/hooks/programs/workload.h"

int main() {
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  workload::Api api;
  if (!workload::fill(
          api, [handle](const char*, const char* exported) { return dlsym(handle, exported); }))
    return 2;
  api.iteration_begin = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cuswap_iteration_begin"));
  return workload::run(api);
}
