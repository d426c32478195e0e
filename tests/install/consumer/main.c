/* Links libcuswap.so and calls its C interface without a GPU: the version,
 * an iteration mark, the counters (none without a budget). Prints the
 * version; exits 1 when anything is not as cuswap.h says. */
#include <stdio.h>
#include <string.h>

#include <cuswap/cuswap.h>

int main(void) {
  const char* version = cuswap_version();
  cuswap_iteration_begin();
  const char* stats = cuswap_stats_json();
  if (version == NULL || strchr(version, '.') == NULL) {
    fprintf(stderr, "consumer: cuswap_version() gave no version\n");
    return 1;
  }
  if (stats == NULL || strcmp(stats, "{}") != 0) {
    fprintf(stderr, "consumer: cuswap_stats_json() without a budget gave %s\n",
            stats ? stats : "NULL");
    return 1;
  }
  printf("%s\n", version);
  return 0;
}
