// The replay's kernels as simcuda host functions (registered by name; the
// GPU kernels of the same names are in kernels.cu). Each declares every
// buffer it passes (simcuda_access, whole buffers, so the hazard detector
// sees the op's real footprint), writes or checks the sampled bytes (Note
// [Sampled patterns] in bench/replay/pattern.h), adds its mismatches to the
// counter and returns its duration in virtual ns.
#include "bench/replay/sim_kernels.h"

#include <vector>

#include "bench/replay/pattern.h"
#include "bench/replay/schedule.h"

namespace cuswap::bench {

namespace {

// simcuda_access, found with the driver (registration sets it, before any launch).
decltype(&::simcuda_access) g_access = nullptr;

template <uint32_t N>
uint64_t replay_kernel(void** params, simcuda_launch* launch) {
  const auto counter = *static_cast<CUdeviceptr*>(params[0]);
  const auto duration_ns = *static_cast<uint64_t*>(params[1]);
  uint64_t mismatches = 0;
  for (uint32_t i = 0; i < N; ++i) {
    const auto ptr = *static_cast<CUdeviceptr*>(params[2 + i]);
    const auto size = *static_cast<uint64_t*>(params[2 + N + i]);
    const auto seed = *static_cast<uint64_t*>(params[2 + 2 * N + i]);
    if (!ptr || !seed || !size) continue;
    const bool write = (seed & CUSWAP_REPLAY_WRITE) != 0;
    if (g_access(launch, ptr, size, write ? SIMCUDA_WRITE : SIMCUDA_READ)) return 0;
    const uint64_t key = seed & ~CUSWAP_REPLAY_WRITE;
    auto* bytes = reinterpret_cast<uint8_t*>(ptr);
    uint64_t begin[CUSWAP_REPLAY_RANGES], end[CUSWAP_REPLAY_RANGES];
    const int ranges = cuswap_replay_ranges(size, begin, end);
    for (int r = 0; r < ranges; ++r)
      for (uint64_t o = begin[r]; o < end[r]; ++o) {
        const uint8_t want = cuswap_replay_byte(key, o);
        if (write)
          bytes[o] = want;
        else
          mismatches += bytes[o] != want;
      }
  }
  if (g_access(launch, counter, sizeof(uint64_t), SIMCUDA_READ | SIMCUDA_WRITE)) return 0;
  *reinterpret_cast<uint64_t*>(counter) += mismatches;
  return duration_ns;
}

template <uint32_t N>
CUresult register_variant(const Driver& d, const char* name) {
  std::vector<size_t> sizes(2 + 3 * N, 8);
  return d.simcuda_register_kernel(name, replay_kernel<N>, sizes.data(),
                                   static_cast<unsigned>(sizes.size()));
}

}  // namespace

CUresult register_sim_kernels(const Driver& d) {
  static_assert(sizeof(kVariantSlots) / sizeof(kVariantSlots[0]) == 4);
  static_assert(kVariantSlots[0] == 4 && kVariantSlots[1] == 16 && kVariantSlots[2] == 64 &&
                kVariantSlots[3] == 160);
  if (!d.simcuda_access) return CUDA_ERROR_NOT_FOUND;
  g_access = d.simcuda_access;
  CUresult r = CUDA_SUCCESS;
  if ((r = register_variant<4>(d, "cuswap_replay_op4")) != CUDA_SUCCESS) return r;
  if ((r = register_variant<16>(d, "cuswap_replay_op16")) != CUDA_SUCCESS) return r;
  if ((r = register_variant<64>(d, "cuswap_replay_op64")) != CUDA_SUCCESS) return r;
  if ((r = register_variant<160>(d, "cuswap_replay_op160")) != CUDA_SUCCESS) return r;
  return register_variant<kMaxSlots>(d, kInitKernel);
}

}  // namespace cuswap::bench
