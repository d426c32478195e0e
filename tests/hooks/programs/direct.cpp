// The workload through symbols the program is linked against.
#include <dlfcn.h>

#include "tests/hooks/programs/workload.h"

int main() {
  workload::Api api;
  WORKLOAD_FUNCTIONS(WORKLOAD_DIRECT)
  api.iteration_begin = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "cuswap_iteration_begin"));
  return workload::run(api);
}
