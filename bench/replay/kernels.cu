// The replay's kernels on a GPU (the simcuda ones are bench/replay/sim_kernels.cpp):
// the same sampled bytes (Note [Sampled patterns]), then a spin for the op's
// duration. bench/replay/CMakeLists.txt appends one extern "C" entry point
// per variant, each buffer its own parameter, and builds a fatbin with nvcc.
#include "bench/replay/pattern.h"

__device__ void replay_body(unsigned long long* counter, unsigned long long duration_ns,
                            const unsigned long long* w, unsigned slots) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long mismatches = 0;
  for (unsigned i = 0; i < slots; ++i) {
    unsigned char* ptr = reinterpret_cast<unsigned char*>(w[i]);
    const unsigned long long size = w[slots + i], seed = w[2 * slots + i];
    if (!ptr || !size || !seed) continue;
    const bool write = (seed & CUSWAP_REPLAY_WRITE) != 0;
    const unsigned long long key = seed & ~CUSWAP_REPLAY_WRITE;
    uint64_t begin[CUSWAP_REPLAY_RANGES], end[CUSWAP_REPLAY_RANGES];
    const int ranges = cuswap_replay_ranges(size, begin, end);
    for (int r = 0; r < ranges; ++r)
      for (uint64_t o = begin[r]; o < end[r]; ++o) {
        const unsigned char want = cuswap_replay_byte(key, o);
        if (write)
          ptr[o] = want;
        else
          mismatches += ptr[o] != want;
      }
  }
  if (mismatches) atomicAdd(counter, mismatches);
  for (;;) {
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start >= duration_ns) break;
  }
}
