// RTLD_NEXT lookups made through cuswap's dlsym override still resolve
// relative to the caller. Prints the value found; 1 is right.
#include <cstdio>

extern "C" int next_probe_value();

int main() {
  int value = next_probe_value();
  std::printf("next probe_value %d\n", value);
  return value == 1 ? 0 : 1;
}
