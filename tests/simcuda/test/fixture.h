// A fresh simcuda for every test: reset with the test's configuration,
// initialised, primary context current, test kernels loaded.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/simcuda/simcuda.h"
#include "tests/simcuda/testkit/testkit.h"

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

constexpr size_t kMiB = 1u << 20;

class SimTest : public ::testing::Test {
 protected:
  // Each test starts simcuda with its own configuration.
  void start(const char* conf = "") {
    ASSERT_CU(simcuda_reset(conf));
    ASSERT_CU(cuInit(0));
    ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    ASSERT_CU(cuCtxSetCurrent(ctx));
    ASSERT_CU(simcuda::testkit::load_kernels(k));
  }
  void TearDown() override { EXPECT_CU(simcuda_reset("")); }

  simcuda_stats stats() {
    simcuda_stats s{};
    simcuda_get_stats(&s);
    return s;
  }
  CUstream make_stream(unsigned flags = CU_STREAM_NON_BLOCKING) {
    CUstream s = nullptr;
    EXPECT_CU(cuStreamCreate(&s, flags));
    return s;
  }
  CUevent make_event(unsigned flags = 0) {
    CUevent e = nullptr;
    EXPECT_CU(cuEventCreate(&e, flags));
    return e;
  }
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr p = 0;
    EXPECT_CU(cuMemAlloc(&p, bytes));
    return p;
  }
  // Number of bytes in [p, p+bytes) that differ from `value`, read back to the host.
  size_t mismatches(CUdeviceptr p, size_t bytes, unsigned char value) {
    std::string host(bytes, '\0');
    EXPECT_CU(cuMemcpyDtoH(host.data(), p, bytes));
    size_t bad = 0;
    for (char c : host)
      bad += static_cast<unsigned char>(c) != value;
    return bad;
  }

  CUcontext ctx = nullptr;
  simcuda::testkit::Kernels k;
};
