// Initialisation, devices, contexts, configuration, fault injection, fork,
// copies and sets of every shape.
#include <sys/wait.h>
#include <unistd.h>

#include <numeric>
#include <vector>

#include "tests/simcuda/test/fixture.h"

namespace {

using Misc = SimTest;

TEST_F(Misc, InitialisationRules) {
  ASSERT_CU(simcuda_reset(""));
  int version = 0;
  ASSERT_CU(cuDriverGetVersion(&version)) << "answers before cuInit";
  EXPECT_EQ(version, CUDA_VERSION);
  int count = 0;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuInit(0));
  ASSERT_CU(cuInit(0)) << "again is fine";
  ASSERT_CU(cuDeviceGetCount(&count));
  EXPECT_EQ(count, 1);
}

TEST_F(Misc, DeviceQueries) {
  start("devices:2,memory:128MiB");
  CUdevice dev = -1;
  ASSERT_CU(cuDeviceGet(&dev, 1));
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
  char name[64];
  ASSERT_CU(cuDeviceGetName(name, sizeof name, 1));
  EXPECT_STREQ(name, "simcuda device 1");
  int value = 0;
  ASSERT_CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
  EXPECT_EQ(value, 1);
  ASSERT_CU(
      cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  EXPECT_EQ(value, 1);
  EXPECT_EQ(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
  size_t total = 0;
  ASSERT_CU(cuDeviceTotalMem(&total, 1));
  EXPECT_EQ(total, 128 * kMiB);
}

TEST_F(Misc, ContextStack) {
  start();
  CUcontext created = nullptr, current = nullptr;
  ASSERT_CU(cuCtxCreate(&created, nullptr, 0, 0));
  ASSERT_CU(cuCtxGetCurrent(&current));
  EXPECT_EQ(current, created) << "cuCtxCreate makes the new context current";
  CUcontext popped = nullptr;
  ASSERT_CU(cuCtxPopCurrent(&popped));
  EXPECT_EQ(popped, created);
  ASSERT_CU(cuCtxGetCurrent(&current));
  EXPECT_EQ(current, ctx);
  ASSERT_CU(cuCtxPushCurrent(created));
  CUdevice dev = -1;
  ASSERT_CU(cuCtxGetDevice(&dev));
  EXPECT_EQ(dev, 0);
  CUdeviceptr p = alloc(kMiB);  // owned by `created`
  ASSERT_CU(cuCtxDestroy(created));
  EXPECT_EQ(stats().device_bytes_in_use, 0u) << "destroying a context frees its memory";
  EXPECT_EQ(cuCtxSetCurrent(created), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxDestroy(created), CUDA_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuCtxDestroy(ctx), CUDA_ERROR_INVALID_CONTEXT) << "primary contexts are released";
  ASSERT_CU(cuCtxGetCurrent(&current));
  EXPECT_EQ(current, ctx);
  (void)p;
}

TEST_F(Misc, ConfigurationErrorsAreRefused) {
  EXPECT_EQ(simcuda_reset("memory:lots"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("devices:0"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("devices:17"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("h2d_gbps:0"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("fail:cuMemAlloc"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("fail:cuMemAlloc@0"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("fail:cu-Mem@1"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("colour:blue"), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(simcuda_reset("queue_depth:deep"), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(simcuda_reset("devices:3,memory:[0:1GiB,2:2GiB],h2d_gbps:25.5,host_vmm:off"));
  ASSERT_CU(cuInit(0));
  size_t total = 0;
  ASSERT_CU(cuDeviceTotalMem(&total, 2));
  EXPECT_EQ(total, 2ull << 30);
  ASSERT_CU(cuDeviceTotalMem(&total, 1));
  EXPECT_EQ(total, 1ull << 30) << "unnamed devices get the default";
}

TEST_F(Misc, FaultInjectionFailsTheNthCall) {
  start("memory:64MiB,fail:[cuMemAlloc_v2@2,cuMemCreate@1+,cuStreamCreate@1=46]");
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 16));
  EXPECT_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_CU(cuMemAlloc(&p, 16));
  EXPECT_EQ(stats().device_bytes_in_use, 1024u) << "the failed call allocated nothing";
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, 2 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(cuMemCreate(&h, 2 * kMiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY) << "and every later";
  CUstream s = nullptr;
  EXPECT_EQ(cuStreamCreate(&s, 0), CUDA_ERROR_DEVICE_UNAVAILABLE) << "an explicit code";
  EXPECT_CU(cuStreamCreate(&s, 0));
  EXPECT_EQ(stats().injected_failures, 4u);
}

TEST_F(Misc, FaultInjectionByBaseNameAndNaturalErrors) {
  start("fail:[cuMemcpyHtoD@1,cuLaunchKernel@1,cuEventRecord@1]");
  CUdeviceptr p = alloc(4096);
  char host[16] = {};
  EXPECT_EQ(cuMemcpyHtoD(p, host, 16), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(simcuda::testkit::launch_fill(k, nullptr, p, 16, 1),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(cuEventRecord(make_event(), nullptr), CUDA_ERROR_UNKNOWN);
  EXPECT_CU(cuMemcpyHtoD(p, host, 16));
  EXPECT_EQ(stats().kernels, 0u);
}

TEST_F(Misc, ForkedChildGetsNoDriver) {
  start();
  CUdeviceptr p = alloc(4096);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    CUdeviceptr q = 0;
    int count = 0;
    bool ok = cuMemAlloc(&q, 16) == CUDA_ERROR_NOT_INITIALIZED &&
              cuInit(0) == CUDA_ERROR_NOT_INITIALIZED &&
              cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_CU(cuMemsetD8(p, 3, 4096)) << "the parent carries on";
  EXPECT_EQ(mismatches(p, 4096, 3), 0u);
}

TEST_F(Misc, CopiesEveryWayAndCountsBytes) {
  start();
  const size_t n = 64 * 1024;
  std::vector<unsigned char> src(n), back(n);
  std::iota(src.begin(), src.end(), 0);
  CUdeviceptr a = alloc(n), b = alloc(n);
  CUstream s = make_stream();
  ASSERT_CU(cuMemcpyHtoDAsync(a, src.data(), n, s));
  ASSERT_CU(cuMemcpyDtoDAsync(b, a, n, s));
  ASSERT_CU(cuMemcpyDtoHAsync(back.data(), b, n, s));
  ASSERT_CU(cuStreamSynchronize(s));
  EXPECT_EQ(back, src);
  // Unified cuMemcpy infers the direction from the addresses.
  std::fill(back.begin(), back.end(), 0);
  ASSERT_CU(cuMemcpy(b, reinterpret_cast<CUdeviceptr>(src.data()), n));
  ASSERT_CU(cuMemcpy(reinterpret_cast<CUdeviceptr>(back.data()), b, n));
  EXPECT_EQ(back, src);
  simcuda_stats st = stats();
  EXPECT_EQ(st.h2d_bytes, 2 * n);
  EXPECT_EQ(st.d2h_bytes, 2 * n);
  EXPECT_EQ(st.d2d_bytes, n);
  EXPECT_EQ(st.copies, 5u);
  EXPECT_EQ(cuMemcpyHtoD(a, src.data(), n + 1), CUDA_ERROR_INVALID_VALUE) << "past the end";
  EXPECT_EQ(cuMemcpyDtoH(back.data(), 0x1000, 16), CUDA_ERROR_INVALID_VALUE) << "not device";
}

TEST_F(Misc, PeerCopiesBetweenDevices) {
  start("devices:2,memory:64MiB");
  CUcontext ctx1 = nullptr;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx1, 1));
  CUdeviceptr on0 = alloc(kMiB);
  ASSERT_CU(cuMemsetD8(on0, 0x42, kMiB));
  ASSERT_CU(cuCtxSetCurrent(ctx1));
  CUdeviceptr on1 = alloc(kMiB);
  ASSERT_CU(cuMemcpyPeer(on1, ctx1, on0, ctx, kMiB));
  EXPECT_EQ(mismatches(on1, kMiB, 0x42), 0u);
  simcuda_stats d1{};
  ASSERT_CU(simcuda_get_device_stats(1, &d1));
  EXPECT_EQ(d1.d2d_bytes, kMiB) << "counted on the device whose stream ran it";
  EXPECT_EQ(cuMemcpyPeer(on1, ctx1, on0, reinterpret_cast<CUcontext>(&d1), kMiB),
            CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(Misc, TwoAndThreeDimensionalCopies) {
  start();
  size_t pitch = 0;
  CUdeviceptr dev = 0;
  ASSERT_CU(cuMemAllocPitch(&dev, &pitch, 100, 8, 4));
  std::vector<unsigned char> host(100 * 8), back(100 * 8);
  std::iota(host.begin(), host.end(), 1);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = host.data();
  up.srcPitch = 100;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = dev;
  up.dstPitch = pitch;
  up.WidthInBytes = 100;
  up.Height = 8;
  ASSERT_CU(cuMemcpy2D(&up));
  CUDA_MEMCPY3D down{};
  down.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  down.srcDevice = dev;
  down.srcPitch = pitch;
  down.srcHeight = 4;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  down.dstPitch = 100;
  down.dstHeight = 4;
  down.WidthInBytes = 100;
  down.Height = 4;
  down.Depth = 2;
  ASSERT_CU(cuMemcpy3D(&down));
  EXPECT_EQ(back, host);
  up.srcPitch = 50;
  EXPECT_EQ(cuMemcpy2D(&up), CUDA_ERROR_INVALID_VALUE) << "pitch below width";
  up.srcPitch = 100;
  up.Height = 9;
  EXPECT_EQ(cuMemcpy2D(&up), CUDA_ERROR_INVALID_VALUE) << "past the allocation";
}

TEST_F(Misc, SetsOfEveryWidth) {
  start();
  CUdeviceptr p = alloc(4096);
  ASSERT_CU(cuMemsetD16(p, 0x1234, 8));
  uint16_t h16[8];
  ASSERT_CU(cuMemcpyDtoH(h16, p, sizeof h16));
  for (uint16_t v : h16)
    EXPECT_EQ(v, 0x1234);
  CUstream s = make_stream();
  ASSERT_CU(cuMemsetD32Async(p, 0xdeadbeef, 4, s));
  ASSERT_CU(cuStreamSynchronize(s));
  uint32_t h32[4];
  ASSERT_CU(cuMemcpyDtoH(h32, p, sizeof h32));
  for (uint32_t v : h32)
    EXPECT_EQ(v, 0xdeadbeefu);
  ASSERT_CU(cuMemsetD2D8(p, 64, 0xee, 16, 4));  // 4 rows of 16 bytes, pitch 64
  unsigned char rows[4 * 64];
  ASSERT_CU(cuMemcpyDtoH(rows, p, sizeof rows));
  EXPECT_EQ(rows[0], 0xee);
  EXPECT_EQ(rows[15], 0xee);
  EXPECT_EQ(rows[3 * 64 + 15], 0xee);
  EXPECT_NE(rows[16], 0xee) << "between rows is untouched";
  EXPECT_EQ(cuMemsetD32(p + 2, 0, 1), CUDA_ERROR_INVALID_VALUE) << "misaligned";
}

}  // namespace
