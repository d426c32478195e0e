// The bytes the replay writes into a tensor and checks when it is read
// back: shared by the simcuda kernels (host functions) and the GPU kernels
// (kernels.cu), so both touch the same bytes.
//
// Note [Sampled patterns]
// Writing and checking every byte of a large tensor on a CPU stand-in is
// slow, and not needed to catch a lost or stale buffer: a buffer that comes
// back from the host with the wrong bytes, or one whose copy was never made,
// is wrong at its ends and in its middle. So a kernel touches the first and
// the last 64 bytes and 8 words spread through, each byte a hash of the
// tensor's seed and its offset. The seed names who wrote the buffer (the
// tensor and the iteration), so a buffer that holds an older iteration's
// bytes fails too.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define CUSWAP_REPLAY_HD __host__ __device__ inline
#else
#define CUSWAP_REPLAY_HD inline
#endif

// A seed's top bit marks a slot the kernel writes; a seed of 0 an unused slot.
#define CUSWAP_REPLAY_WRITE (1ull << 63)

CUSWAP_REPLAY_HD uint64_t cuswap_replay_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The seed of a buffer written by `writer` (a tensor index) in `iteration`
// (UINT32_MAX: before the first): never 0, top bit clear.
CUSWAP_REPLAY_HD uint64_t cuswap_replay_seed(uint32_t writer, uint32_t iteration) {
  uint64_t s = cuswap_replay_mix((static_cast<uint64_t>(writer) << 32) | iteration);
  return (s & ~CUSWAP_REPLAY_WRITE) | 1;
}

CUSWAP_REPLAY_HD uint8_t cuswap_replay_byte(uint64_t seed, uint64_t offset) {
  return static_cast<uint8_t>(cuswap_replay_mix(seed ^ (offset * 0x100000001b3ull)) >> 56);
}

// The sampled ranges of a buffer of `size` bytes: up to 10 of them.
#define CUSWAP_REPLAY_RANGES 10
CUSWAP_REPLAY_HD int cuswap_replay_ranges(uint64_t size, uint64_t* begin, uint64_t* end) {
  int n = 0;
  begin[n] = 0;
  end[n++] = size < 64 ? size : 64;
  if (size > 64) {
    begin[n] = size - 64 > 64 ? size - 64 : 64;
    end[n++] = size;
  }
  for (uint64_t k = 1; size > 128 && k <= 8; ++k) {
    uint64_t at = (size * k / 9) & ~7ull;
    if (at >= 64 && at + 8 <= size - 64) {
      begin[n] = at;
      end[n++] = at + 8;
    }
  }
  return n;
}
