#include "tests/simcuda/testkit/testkit.h"

#include <time.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace simcuda::testkit {
namespace {

uint64_t k_fill(void** params, simcuda_launch* launch) {
  auto dst = *static_cast<CUdeviceptr*>(params[0]);
  auto bytes = *static_cast<uint64_t*>(params[1]);
  auto value = *static_cast<uint32_t*>(params[2]);
  if (simcuda_access(launch, dst, bytes, SIMCUDA_WRITE)) return 0;
  std::memset(reinterpret_cast<void*>(dst), static_cast<int>(value & 0xff), bytes);
  return *static_cast<uint64_t*>(params[3]);
}

uint64_t k_copy(void** params, simcuda_launch* launch) {
  auto dst = *static_cast<CUdeviceptr*>(params[0]);
  auto src = *static_cast<CUdeviceptr*>(params[1]);
  auto bytes = *static_cast<uint64_t*>(params[2]);
  if (simcuda_access(launch, src, bytes, SIMCUDA_READ)) return 0;
  if (simcuda_access(launch, dst, bytes, SIMCUDA_WRITE)) return 0;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  return *static_cast<uint64_t*>(params[3]);
}

uint64_t k_check(void** params, simcuda_launch* launch) {
  auto src = *static_cast<CUdeviceptr*>(params[0]);
  auto bytes = *static_cast<uint64_t*>(params[1]);
  auto value = static_cast<unsigned char>(*static_cast<uint32_t*>(params[2]));
  auto out = *static_cast<CUdeviceptr*>(params[3]);
  if (simcuda_access(launch, src, bytes, SIMCUDA_READ)) return 0;
  if (simcuda_access(launch, out, sizeof(uint64_t), SIMCUDA_READ | SIMCUDA_WRITE)) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(src);
  uint64_t bad = 0;
  for (uint64_t i = 0; i < bytes; ++i)
    bad += p[i] != value;
  *reinterpret_cast<uint64_t*>(out) += bad;
  return *static_cast<uint64_t*>(params[4]);
}

uint64_t k_spin(void** params, simcuda_launch*) {
  auto real_us = *static_cast<uint64_t*>(params[0]);
  timespec ts{static_cast<time_t>(real_us / 1000000),
              static_cast<long>((real_us % 1000000) * 1000)};
  nanosleep(&ts, nullptr);
  return *static_cast<uint64_t*>(params[1]);
}

uint64_t k_load_indirect(void** params, simcuda_launch* launch) {
  auto table = *static_cast<CUdeviceptr*>(params[0]);
  auto out = *static_cast<CUdeviceptr*>(params[1]);
  if (simcuda_access(launch, table, sizeof(CUdeviceptr), SIMCUDA_READ)) return 0;
  if (simcuda_access(launch, out, sizeof(uint64_t), SIMCUDA_WRITE)) return 0;
  CUdeviceptr hidden = *reinterpret_cast<const CUdeviceptr*>(table);
  uint64_t value;
  std::memcpy(&value, reinterpret_cast<const void*>(hidden), sizeof value);  // undeclared
  std::memcpy(reinterpret_cast<void*>(out), &value, sizeof value);
  return 1000;
}

uint64_t k_fill_struct(void** params, simcuda_launch* launch) {
  FillArgs args;
  std::memcpy(&args, params[0], sizeof args);
  if (simcuda_access(launch, args.dst, args.bytes, SIMCUDA_WRITE)) return 0;
  std::memset(reinterpret_cast<void*>(args.dst), static_cast<int>(args.value & 0xff), args.bytes);
  return *static_cast<uint64_t*>(params[1]);
}

uint64_t k_fill_words(void** params, simcuda_launch* launch) {
  auto dst = *static_cast<CUdeviceptr*>(params[0]);
  auto bytes = *static_cast<uint64_t*>(params[1]);
  auto seed = *static_cast<uint32_t*>(params[2]);
  if (simcuda_access(launch, dst, bytes, SIMCUDA_WRITE)) return 0;
  auto* p = reinterpret_cast<unsigned char*>(dst);
  for (uint64_t offset = 0; offset < bytes; offset += 8) {
    const uint64_t word = word_pattern(seed, offset / 8);
    std::memcpy(p + offset, &word, std::min<uint64_t>(8, bytes - offset));
  }
  return *static_cast<uint64_t*>(params[3]);
}

uint64_t k_check_words(void** params, simcuda_launch* launch) {
  auto src = *static_cast<CUdeviceptr*>(params[0]);
  auto bytes = *static_cast<uint64_t*>(params[1]);
  auto seed = *static_cast<uint32_t*>(params[2]);
  auto out = *static_cast<CUdeviceptr*>(params[3]);
  if (simcuda_access(launch, src, bytes, SIMCUDA_READ)) return 0;
  if (simcuda_access(launch, out, sizeof(uint64_t), SIMCUDA_READ | SIMCUDA_WRITE)) return 0;
  *reinterpret_cast<uint64_t*>(out) +=
      pattern_mismatches(reinterpret_cast<const unsigned char*>(src), bytes, seed);
  return *static_cast<uint64_t*>(params[4]);
}

}  // namespace

uint64_t word_pattern(uint32_t seed, uint64_t index) {
  // splitmix64 of the seed and the index
  uint64_t z = (uint64_t{seed} << 40) + index + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t pattern_mismatches(const unsigned char* p, uint64_t bytes, uint32_t seed) {
  uint64_t bad = 0;
  for (uint64_t offset = 0; offset < bytes; offset += 8) {
    const uint64_t word = word_pattern(seed, offset / 8);
    unsigned char expected[8];
    std::memcpy(expected, &word, sizeof expected);
    const uint64_t n = std::min<uint64_t>(8, bytes - offset);
    for (uint64_t i = 0; i < n; ++i)
      bad += p[offset + i] != expected[i];
  }
  return bad;
}

void register_kernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    const size_t fill[] = {8, 8, 4, 8};
    const size_t copy[] = {8, 8, 8, 8};
    const size_t check[] = {8, 8, 4, 8, 8};
    const size_t spin[] = {8, 8};
    const size_t indirect[] = {8, 8};
    const size_t fill_struct[] = {sizeof(FillArgs), 8};
    simcuda_register_kernel("fill_words", k_fill_words, fill, 4);
    simcuda_register_kernel("check_words", k_check_words, check, 5);
    simcuda_register_kernel("fill", k_fill, fill, 4);
    simcuda_register_kernel("copy", k_copy, copy, 4);
    simcuda_register_kernel("check", k_check, check, 5);
    simcuda_register_kernel("spin", k_spin, spin, 2);
    simcuda_register_kernel("load_indirect", k_load_indirect, indirect, 2);
    simcuda_register_kernel("fill_struct", k_fill_struct, fill_struct, 2);
  });
}

CUresult load_kernels(Kernels& out) {
  register_kernels();
  static const char image[] = "simcuda test kernels";
  if (CUresult r = cuModuleLoadData(&out.module, image); r != CUDA_SUCCESS) return r;
  struct {
    CUfunction* fn;
    const char* name;
  } wanted[] = {{&out.fill, "fill"},
                {&out.copy, "copy"},
                {&out.check, "check"},
                {&out.spin, "spin"},
                {&out.load_indirect, "load_indirect"},
                {&out.fill_struct, "fill_struct"},
                {&out.fill_words, "fill_words"},
                {&out.check_words, "check_words"}};
  for (auto& w : wanted)
    if (CUresult r = cuModuleGetFunction(w.fn, out.module, w.name); r != CUDA_SUCCESS) return r;
  return CUDA_SUCCESS;
}

namespace {
CUresult launch1(CUfunction f, CUstream stream, void** params) {
  return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr);
}
}  // namespace

CUresult launch_fill(const Kernels& k, CUstream stream, CUdeviceptr dst, uint64_t bytes,
                     uint32_t value, uint64_t duration_ns) {
  void* params[] = {&dst, &bytes, &value, &duration_ns};
  return launch1(k.fill, stream, params);
}

CUresult launch_copy(const Kernels& k, CUstream stream, CUdeviceptr dst, CUdeviceptr src,
                     uint64_t bytes, uint64_t duration_ns) {
  void* params[] = {&dst, &src, &bytes, &duration_ns};
  return launch1(k.copy, stream, params);
}

CUresult launch_check(const Kernels& k, CUstream stream, CUdeviceptr src, uint64_t bytes,
                      uint32_t value, CUdeviceptr mismatches, uint64_t duration_ns) {
  void* params[] = {&src, &bytes, &value, &mismatches, &duration_ns};
  return launch1(k.check, stream, params);
}

CUresult launch_fill_words(const Kernels& k, CUstream stream, CUdeviceptr dst, uint64_t bytes,
                           uint32_t seed, uint64_t duration_ns) {
  void* params[] = {&dst, &bytes, &seed, &duration_ns};
  return launch1(k.fill_words, stream, params);
}

CUresult launch_check_words(const Kernels& k, CUstream stream, CUdeviceptr src, uint64_t bytes,
                            uint32_t seed, CUdeviceptr mismatches, uint64_t duration_ns) {
  void* params[] = {&src, &bytes, &seed, &mismatches, &duration_ns};
  return launch1(k.check_words, stream, params);
}

CUresult launch_spin(const Kernels& k, CUstream stream, uint64_t real_us, uint64_t duration_ns) {
  void* params[] = {&real_us, &duration_ns};
  return launch1(k.spin, stream, params);
}

const char* error_name(CUresult r) {
  const char* name = nullptr;
  return cuGetErrorName(r, &name) == CUDA_SUCCESS ? name : "(unknown CUresult)";
}

}  // namespace simcuda::testkit
