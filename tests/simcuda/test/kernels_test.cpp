// Kernels: modules, parameter layout, launches, and faults that break the
// context for good.
#include <cstring>
#include <vector>

#include "tests/simcuda/test/fixture.h"

namespace {

using Kernels = SimTest;
using simcuda::testkit::launch_check_words;
using simcuda::testkit::launch_copy;
using simcuda::testkit::launch_fill;
using simcuda::testkit::launch_fill_words;
using simcuda::testkit::pattern_mismatches;

uint64_t k_noop(void**, simcuda_launch*) {
  return 100;
}

TEST_F(Kernels, ParameterLayoutFollowsNaturalAlignment) {
  start();
  const size_t sizes[] = {4, 8, 2, 12, 16, 1};
  ASSERT_CU(simcuda_register_kernel("layout", k_noop, sizes, 6));
  CUfunction f = nullptr;
  ASSERT_CU(cuModuleGetFunction(&f, k.module, "layout"));
  const size_t expected_offsets[] = {0, 8, 16, 20, 32, 48};
  for (size_t i = 0; i < 6; ++i) {
    size_t offset = 99, size = 99;
    ASSERT_CU(cuFuncGetParamInfo(f, i, &offset, &size));
    EXPECT_EQ(offset, expected_offsets[i]) << "parameter " << i;
    EXPECT_EQ(size, sizes[i]);
  }
  size_t offset = 0, size = 0;
  EXPECT_EQ(cuFuncGetParamInfo(f, 6, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  const char* name = nullptr;
  ASSERT_CU(cuFuncGetName(&name, f));
  EXPECT_STREQ(name, "layout");
}

TEST_F(Kernels, ModulesAndFunctions) {
  start();
  CUfunction f = nullptr;
  EXPECT_EQ(cuModuleGetFunction(&f, k.module, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuModuleLoadData(&k.module, nullptr), CUDA_ERROR_INVALID_VALUE);
  CUmodule other = nullptr;
  ASSERT_CU(cuModuleLoadData(&other, "any image"));
  ASSERT_CU(cuModuleGetFunction(&f, other, "fill"));
  ASSERT_CU(cuModuleUnload(other));
  size_t offset = 0, size = 0;
  EXPECT_EQ(cuFuncGetParamInfo(f, 0, &offset, &size), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuModuleGetFunction(&f, other, "fill"), CUDA_ERROR_INVALID_HANDLE);
  const size_t bad[] = {0};
  EXPECT_EQ(simcuda_register_kernel("bad", k_noop, bad, 1), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(Kernels, ParametersByPointerOrExtraBuffer) {
  start();
  CUdeviceptr p = alloc(8192);
  uint64_t bytes = 4096, ns = 1000;
  uint32_t value = 0x5a;
  void* params[] = {&p, &bytes, &value, &ns};
  ASSERT_CU(cuLaunchKernel(k.fill, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr));
  value = 0;  // arguments were copied at launch
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(mismatches(p, 4096, 0x5a), 0u);

  // The same launch through `extra`: offsets 0, 8, 16, 24.
  unsigned char buffer[32] = {};
  CUdeviceptr second = p + 4096;
  uint32_t other = 0x33;
  std::memcpy(buffer + 0, &second, 8);
  std::memcpy(buffer + 8, &bytes, 8);
  std::memcpy(buffer + 16, &other, 4);
  std::memcpy(buffer + 24, &ns, 8);
  size_t buffer_size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  ASSERT_CU(cuLaunchKernel(k.fill, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, extra));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(mismatches(second, 4096, 0x33), 0u);

  EXPECT_EQ(cuLaunchKernel(k.fill, 1, 1, 1, 1, 1, 1, 0, nullptr, params, extra),
            CUDA_ERROR_INVALID_VALUE);
  size_t short_size = 20;
  void* short_extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &short_size, CU_LAUNCH_PARAM_END};
  EXPECT_EQ(cuLaunchKernel(k.fill, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, short_extra),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(k.fill, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE)
      << "a kernel with parameters needs them";
  EXPECT_EQ(cuLaunchKernel(k.fill, 0, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(k.fill, 1, 1, 1, 1024, 2, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(&buffer), 1, 1, 1, 1, 1, 1, 0, nullptr,
                           params, nullptr),
            CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(Kernels, LaunchKernelExCooperativeAndByValueStructs) {
  start();
  CUdeviceptr p = alloc(4096);
  simcuda::testkit::FillArgs args{p, 1024, 0x77};
  uint64_t ns = 500;
  void* params[] = {&args, &ns};
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  ASSERT_CU(cuLaunchKernelEx(&config, k.fill_struct, params, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(mismatches(p, 1024, 0x77), 0u);
  args.value = 0x12;
  ASSERT_CU(cuLaunchCooperativeKernel(k.fill_struct, 1, 1, 1, 1, 1, 1, 0, nullptr, params));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(mismatches(p, 1024, 0x12), 0u);
  EXPECT_EQ(stats().kernels, 2u);
}

// fill_words gives each 8-byte word its own value: a copy moved by one
// word, or from the buffer of another seed, is wrong everywhere, not only
// at its edges; a tail shorter than a word is filled and checked too.
TEST_F(Kernels, WordPatternsShowBytesAtTheWrongOffset) {
  start();
  constexpr uint64_t kBytes = 4096 + 5;
  CUdeviceptr a = alloc(kBytes), b = alloc(kBytes), bad = alloc(8);
  ASSERT_CU(cuMemsetD8(bad, 0, 8));
  ASSERT_CU(launch_fill_words(k, nullptr, a, kBytes, 7));
  ASSERT_CU(launch_check_words(k, nullptr, a, kBytes, 7, bad));
  std::vector<unsigned char> host(kBytes);
  ASSERT_CU(cuMemcpyDtoH(host.data(), a, kBytes));
  EXPECT_EQ(pattern_mismatches(host.data(), kBytes, 7), 0u);
  EXPECT_GT(pattern_mismatches(host.data(), kBytes, 8), kBytes * 9 / 10) << "another seed";
  uint64_t seen = 1;
  ASSERT_CU(cuMemcpyDtoH(&seen, bad, 8));
  EXPECT_EQ(seen, 0u);
  // b = a moved by one word: nearly every byte differs.
  ASSERT_CU(launch_fill_words(k, nullptr, b, kBytes, 7));
  ASSERT_CU(launch_copy(k, nullptr, b + 8, a, kBytes - 8));
  ASSERT_CU(launch_check_words(k, nullptr, b, kBytes, 7, bad));
  ASSERT_CU(cuMemcpyDtoH(&seen, bad, 8));
  EXPECT_GT(seen, (kBytes - 8) * 9 / 10);
  EXPECT_NE(simcuda::testkit::word_pattern(7, 0), simcuda::testkit::word_pattern(7, 1));
}

TEST_F(Kernels, DeclaredAccessOutsideAllocationFaultsAndStaysBroken) {
  start();
  CUdeviceptr p = alloc(4096);
  CUstream s = make_stream();
  ASSERT_CU(launch_fill(k, s, p, 8192, 1));  // past the end
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(simcuda_last_fault_address(), p);
  EXPECT_EQ(stats().illegal_address_faults, 1u);
  // Sticky: every later call in the context fails the same way.
  CUdeviceptr q = 0;
  EXPECT_EQ(cuMemAlloc(&q, 16), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(launch_fill(k, s, p, 16, 1), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  // Resetting the primary context repairs it, as on a GPU.
  ASSERT_CU(cuDevicePrimaryCtxReset(0));
  EXPECT_CU(cuMemAlloc(&q, 16));
}

TEST_F(Kernels, WorkQueuedBeforeAFaultIsDropped) {
  start();
  CUdeviceptr p = alloc(4096), out = alloc(4096);
  CUstream s = make_stream();
  ASSERT_CU(launch_fill(k, s, p, 4096, 9));
  ASSERT_CU(cuMemsetD8(out, 0, 4096));
  ASSERT_CU(simcuda::testkit::launch_spin(k, s, 100'000));
  ASSERT_CU(launch_fill(k, s, 0x10, 16, 1));                     // not device memory
  ASSERT_CU(simcuda::testkit::launch_copy(k, s, out, p, 4096));  // enqueued before the fault runs
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  ASSERT_CU(cuDevicePrimaryCtxReset(0));
  EXPECT_EQ(stats().kernels, 2u) << "fill and spin ran; the copy after the fault did not";
}

TEST_F(Kernels, UndeclaredWildAccessIsCaughtNotFatal) {
  start();
  CUdeviceptr table = alloc(4096), out = alloc(4096);
  CUdeviceptr wild = 0x10;  // the zero page
  ASSERT_CU(cuMemcpyHtoD(table, &wild, sizeof wild));
  void* params[] = {&table, &out};
  ASSERT_CU(cuLaunchKernel(k.load_indirect, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(simcuda_last_fault_address(), wild);
  // The guard is ready for the next fault on the same worker.
  ASSERT_CU(cuDevicePrimaryCtxReset(0));
  table = alloc(4096);
  out = alloc(4096);
  ASSERT_CU(cuMemcpyHtoD(table, &wild, sizeof wild));
  ASSERT_CU(cuLaunchKernel(k.load_indirect, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(stats().illegal_address_faults, 2u);
}

TEST(KernelsDeathTest, FaultsOutsideKernelsStillCrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_CU(simcuda_reset(""));
  ASSERT_CU(cuInit(0));  // installs the fault handler
  EXPECT_DEATH(
      {
        volatile uintptr_t wild = 0x8;  // hidden from the optimiser
        *reinterpret_cast<volatile int*>(wild) = 1;
      },
      "");
}

}  // namespace
