// The workload through cuGetProcAddress, as the CUDA runtime finds the
// driver: dlopen, one dlsym of cuGetProcAddress_v2, then every entry point
// by base name. `procaddress per-thread` asks for the per-thread-stream
// flavours (_ptsz/_ptds), where stream 0 is the calling thread's stream.
#include <dlfcn.h>

#include <cstring>

#include "tests/hooks/programs/workload.h"

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

int main(int argc, char** argv) {
  bool per_thread = argc > 1 && std::strcmp(argv[1], "per-thread") == 0;
  cuuint64_t flags =
      per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT;
  void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle) return 2;
  auto get = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!get) return 2;
  // Asked for itself, cuGetProcAddress must give back the same entry point
  // the program already holds (cuswap's, when it is loaded).
  void* self = nullptr;
  CUdriverProcAddressQueryResult status{};
  get("cuGetProcAddress", &self, CUDA_VERSION, flags, &status);
  std::fprintf(stderr, "procaddress: self lookup %s\n",
               self == reinterpret_cast<void*>(get) ? "consistent" : "INCONSISTENT");
  workload::Api api;
  if (!workload::fill(api, [&](const char* base, const char*) {
        void* fn = nullptr;
        return get(base, &fn, CUDA_VERSION, flags, &status) == CUDA_SUCCESS ? fn : nullptr;
      }))
    return 2;
  api.iteration_begin = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cuswap_iteration_begin"));
  return workload::run(api, per_thread);
}
