// RTLD_NEXT probe, the library searched second.
extern "C" __attribute__((visibility("default"))) int probe_value() {
  return 1;
}
