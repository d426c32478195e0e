// RTLD_NEXT probe, the library searched first: its lookup of the next
// probe_value must find probe_a's, not its own.
#include <dlfcn.h>

extern "C" __attribute__((visibility("default"))) int probe_value() {
  return 2;
}

extern "C" __attribute__((visibility("default"))) int next_probe_value() {
  auto next = reinterpret_cast<int (*)()>(dlsym(RTLD_NEXT, "probe_value"));
  return next ? next() : -1;
}
