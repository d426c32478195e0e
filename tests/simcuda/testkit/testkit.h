// Kernels and helpers for programs that run on simcuda: tests, the demo and
// benchmarks. Each kernel declares what it touches (simcuda_access) and
// returns its virtual duration.
//
//   fill(dst, bytes, byte_value, duration_ns)        writes dst
//   copy(dst, src, bytes, duration_ns)               reads src, writes dst
//   check(src, bytes, byte_value, mismatches, ns)    reads src; counts bytes != value into
//                                                    *mismatches (a uint64 in device memory)
//   spin(real_us, duration_ns)                       burns real time, touches nothing
//   load_indirect(table, out)                        reads a pointer from table[0], then 8 bytes
//                                                    through it WITHOUT declaring them, into out
//   fill_struct({dst, bytes, value}, duration_ns)    `fill` with a by-value struct
//   fill_words(dst, bytes, seed, duration_ns)        writes word_pattern(seed, i) into the
//                                                    i-th 8-byte word of dst
//   check_words(src, bytes, seed, mismatches, ns)    reads src; counts bytes that differ from
//                                                    fill_words' into *mismatches
#pragma once

#include <cuda.h>

#include <cstdint>

#include "tests/simcuda/simcuda.h"

namespace simcuda::testkit {

struct FillArgs {
  CUdeviceptr dst;
  uint32_t bytes;
  uint32_t value;
};

struct Kernels {
  CUmodule module = nullptr;
  CUfunction fill = nullptr, copy = nullptr, check = nullptr, spin = nullptr,
             load_indirect = nullptr, fill_struct = nullptr, fill_words = nullptr,
             check_words = nullptr;
};

// Registers the kernels (once per process).
void register_kernels();
// Registers, loads a module in the current context and looks them up.
CUresult load_kernels(Kernels& out);

// Launch helpers (grid 1x1x1, block 1x1x1) on `stream`.
CUresult launch_fill(const Kernels& k, CUstream stream, CUdeviceptr dst, uint64_t bytes,
                     uint32_t value, uint64_t duration_ns = 1000);
CUresult launch_copy(const Kernels& k, CUstream stream, CUdeviceptr dst, CUdeviceptr src,
                     uint64_t bytes, uint64_t duration_ns = 1000);
CUresult launch_check(const Kernels& k, CUstream stream, CUdeviceptr src, uint64_t bytes,
                      uint32_t value, CUdeviceptr mismatches, uint64_t duration_ns = 1000);
CUresult launch_spin(const Kernels& k, CUstream stream, uint64_t real_us,
                     uint64_t duration_ns = 1000);

// Word i of a buffer filled by fill_words with `seed`. It differs from word
// to word and from seed to seed, so bytes copied to a wrong offset, or
// from another buffer, show wherever they land, not only at the edges.
uint64_t word_pattern(uint32_t seed, uint64_t index);
// How many of `bytes` bytes at `p` differ from fill_words' with `seed`.
uint64_t pattern_mismatches(const unsigned char* p, uint64_t bytes, uint32_t seed);
CUresult launch_fill_words(const Kernels& k, CUstream stream, CUdeviceptr dst, uint64_t bytes,
                           uint32_t seed, uint64_t duration_ns = 1000);
CUresult launch_check_words(const Kernels& k, CUstream stream, CUdeviceptr src, uint64_t bytes,
                            uint32_t seed, CUdeviceptr mismatches, uint64_t duration_ns = 1000);

const char* error_name(CUresult r);

}  // namespace simcuda::testkit
