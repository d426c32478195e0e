// Device memory: capacity, out-of-memory, pinned host memory, pointer
// attributes, stream-ordered allocation.
#include <vector>

#include "tests/simcuda/test/fixture.h"

namespace {

using Memory = SimTest;

TEST_F(Memory, CapacityAndOutOfMemory) {
  start("memory:64MiB");
  size_t free_bytes = 0, total = 0;
  ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
  EXPECT_EQ(total, 64 * kMiB);
  EXPECT_EQ(free_bytes, 64 * kMiB);

  CUdeviceptr a = alloc(32 * kMiB), b = alloc(16 * kMiB), c = 0;
  EXPECT_EQ(cuMemAlloc(&c, 32 * kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(c, 0u);
  ASSERT_CU(cuMemGetInfo(&free_bytes, &total));
  EXPECT_EQ(free_bytes, 16 * kMiB);
  EXPECT_EQ(cuMemAlloc(&c, 64 * kMiB + 1), CUDA_ERROR_OUT_OF_MEMORY);

  ASSERT_CU(cuMemFree(a));
  ASSERT_CU(cuMemAlloc(&c, 32 * kMiB));
  EXPECT_EQ(stats().peak_device_bytes, 48 * kMiB);
  ASSERT_CU(cuMemFree(b));
  ASSERT_CU(cuMemFree(c));
  EXPECT_EQ(stats().device_bytes_in_use, 0u);
}

TEST_F(Memory, ChargesLikeTheDriverRoundsAllocations) {
  start("memory:64MiB");
  CUdeviceptr small = alloc(100), large = alloc(3 * kMiB);
  EXPECT_EQ(stats().device_bytes_in_use, 512u + 4 * kMiB);
  EXPECT_EQ(small % 256, 0u) << "device pointers are at least 256-byte aligned";
  ASSERT_CU(cuMemFree(small));
  ASSERT_CU(cuMemFree(large));
}

TEST_F(Memory, BadArguments) {
  start("memory:64MiB");
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAlloc(nullptr, 16), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(0x1234), CUDA_ERROR_INVALID_VALUE);
  p = alloc(kMiB);
  EXPECT_EQ(cuMemFree(p + 16), CUDA_ERROR_INVALID_VALUE) << "only the base can be freed";
  ASSERT_CU(cuMemFree(p));
  EXPECT_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE) << "double free";
}

TEST_F(Memory, NeedsInitAndContext) {
  ASSERT_CU(simcuda_reset(""));
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
  ASSERT_CU(cuInit(0));
  EXPECT_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
  size_t f, t;
  EXPECT_EQ(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
}

TEST_F(Memory, PitchAndAddressRange) {
  start();
  CUdeviceptr p = 0;
  size_t pitch = 0;
  ASSERT_CU(cuMemAllocPitch(&p, &pitch, 1000, 10, 4));
  EXPECT_EQ(pitch, 1024u);
  EXPECT_EQ(cuMemAllocPitch(&p, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr base = 0;
  size_t size = 0;
  ASSERT_CU(cuMemGetAddressRange(&base, &size, p + 5000));
  EXPECT_EQ(base, p);
  EXPECT_EQ(size, 10240u);
  EXPECT_EQ(cuMemGetAddressRange(&base, &size, p + 10240), CUDA_ERROR_NOT_FOUND);
}

TEST_F(Memory, PinnedHostMemoryAndPointerAttributes) {
  start("memory:64MiB");
  void* host = nullptr;
  ASSERT_CU(cuMemHostAlloc(&host, 5000, CU_MEMHOSTALLOC_PORTABLE));
  EXPECT_EQ(stats().host_pinned_bytes, 8192u);
  EXPECT_EQ(stats().device_bytes_in_use, 0u) << "pinned memory is not device memory";
  CUdeviceptr dev = alloc(kMiB);

  unsigned type = 0;
  ASSERT_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  reinterpret_cast<CUdeviceptr>(host)));
  EXPECT_EQ(type, CU_MEMORYTYPE_HOST);
  ASSERT_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dev + 10));
  EXPECT_EQ(type, CU_MEMORYTYPE_DEVICE);
  CUdeviceptr start_addr = 0;
  size_t range = 0;
  ASSERT_CU(cuPointerGetAttribute(&start_addr, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dev + 10));
  ASSERT_CU(cuPointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, dev + 10));
  EXPECT_EQ(start_addr, dev);
  EXPECT_EQ(range, kMiB);
  CUcontext owner = nullptr;
  ASSERT_CU(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, dev));
  EXPECT_EQ(owner, ctx);
  unsigned long long id1 = 0, id2 = 0;
  ASSERT_CU(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, dev));
  ASSERT_CU(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                  reinterpret_cast<CUdeviceptr>(host)));
  EXPECT_NE(id1, id2);
  int stack_value = 0;
  EXPECT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  reinterpret_cast<CUdeviceptr>(&stack_value)),
            CUDA_ERROR_INVALID_VALUE)
      << "pageable memory is unknown to the driver";

  EXPECT_EQ(cuMemFreeHost(static_cast<char*>(host) + 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFreeHost(host));
  EXPECT_EQ(stats().host_pinned_bytes, 0u);
}

TEST_F(Memory, StreamOrderedAllocationAndPool) {
  start("memory:64MiB");
  CUstream s = make_stream();
  CUmemoryPool pool = nullptr;
  ASSERT_CU(cuDeviceGetDefaultMemPool(&pool, 0));
  cuuint64_t threshold = 64 * kMiB;
  ASSERT_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  cuuint64_t read_back = 0;
  ASSERT_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &read_back));
  EXPECT_EQ(read_back, threshold);

  CUdeviceptr a = 0, b = 0;
  ASSERT_CU(cuMemAllocAsync(&a, 32 * kMiB, s));
  ASSERT_CU(cuMemAllocFromPoolAsync(&b, 16 * kMiB, pool, s));
  cuuint64_t used = 0;
  ASSERT_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used));
  EXPECT_EQ(used, 48 * kMiB);
  CUdeviceptr c = 0;
  EXPECT_EQ(cuMemAllocAsync(&c, 32 * kMiB, s), CUDA_ERROR_OUT_OF_MEMORY);

  ASSERT_CU(simcuda::testkit::launch_fill(k, s, a, 32 * kMiB, 7));
  ASSERT_CU(cuMemFreeAsync(a, s));
  EXPECT_EQ(cuMemFreeAsync(a, s), CUDA_ERROR_INVALID_VALUE) << "already being freed";
  ASSERT_CU(cuStreamSynchronize(s));
  ASSERT_CU(cuMemAllocAsync(&c, 32 * kMiB, s)) << "the stream-ordered free returned the memory";
  ASSERT_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &used));
  EXPECT_EQ(used, 48 * kMiB);
  cuuint64_t zero = 0, bad = 1;
  ASSERT_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero));
  EXPECT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &bad),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemFree(b)) << "cuMemFree accepts pool memory";
  ASSERT_CU(cuMemFreeAsync(c, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  EXPECT_EQ(stats().device_bytes_in_use, 0u);
  EXPECT_EQ(stats().hazards, 0u);
}

TEST_F(Memory, TwoDevicesHaveTheirOwnCapacity) {
  start("devices:2,memory:[0:64MiB,1:32MiB]");
  int count = 0;
  ASSERT_CU(cuDeviceGetCount(&count));
  ASSERT_EQ(count, 2);
  size_t total0 = 0, total1 = 0;
  ASSERT_CU(cuDeviceTotalMem(&total0, 0));
  ASSERT_CU(cuDeviceTotalMem(&total1, 1));
  EXPECT_EQ(total0, 64 * kMiB);
  EXPECT_EQ(total1, 32 * kMiB);

  CUcontext ctx1 = nullptr;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx1, 1));
  ASSERT_CU(cuCtxSetCurrent(ctx1));
  CUdeviceptr p = 0;
  ASSERT_CU(cuMemAlloc(&p, 32 * kMiB));
  EXPECT_EQ(cuMemAlloc(&p, kMiB), CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_CU(cuCtxSetCurrent(ctx));
  ASSERT_CU(cuMemAlloc(&p, 32 * kMiB)) << "device 0 is untouched";
  simcuda_stats d0{}, d1{};
  ASSERT_CU(simcuda_get_device_stats(0, &d0));
  ASSERT_CU(simcuda_get_device_stats(1, &d1));
  EXPECT_EQ(d0.device_bytes_in_use, 32 * kMiB);
  EXPECT_EQ(d1.device_bytes_in_use, 32 * kMiB);
  EXPECT_EQ(simcuda_get_device_stats(2, &d1), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(Memory, PrimaryContextResetFreesItsMemory) {
  start("memory:64MiB");
  alloc(32 * kMiB);
  ASSERT_CU(cuDevicePrimaryCtxReset(0));
  EXPECT_EQ(stats().device_bytes_in_use, 0u);
}

}  // namespace
