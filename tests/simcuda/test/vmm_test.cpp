// Virtual memory management: reservations that really fault, data that
// survives unmap/remap at the same address, host-located handles.
#include <vector>

#include "tests/simcuda/test/fixture.h"

namespace {

class Vmm : public SimTest {
 protected:
  CUmemAllocationProp prop(CUmemLocationType type = CU_MEM_LOCATION_TYPE_DEVICE, int id = 0) {
    CUmemAllocationProp p{};
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = type;
    p.location.id = id;
    return p;
  }
  CUmemGenericAllocationHandle create(size_t bytes,
                                      CUmemLocationType type = CU_MEM_LOCATION_TYPE_DEVICE) {
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp p = prop(type);
    EXPECT_CU(cuMemCreate(&h, bytes, &p, 0));
    return h;
  }
  void map_rw(CUdeviceptr va, size_t bytes, CUmemGenericAllocationHandle h) {
    ASSERT_CU(cuMemMap(va, bytes, 0, h, 0));
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = 0;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    ASSERT_CU(cuMemSetAccess(va, bytes, &access, 1));
  }
  size_t free_bytes() {
    size_t f = 0, t = 0;
    EXPECT_CU(cuMemGetInfo(&f, &t));
    return f;
  }
};

TEST_F(Vmm, GranularityAndArguments) {
  start("memory:64MiB");
  size_t g = 0;
  CUmemAllocationProp p = prop();
  ASSERT_CU(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  EXPECT_EQ(g, 2 * kMiB);
  CUdeviceptr va = 0;
  EXPECT_EQ(cuMemAddressReserve(&va, kMiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemAddressReserve(&va, 8 * kMiB, 0, 0, 0));
  EXPECT_EQ(va % (2 * kMiB), 0u);
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, kMiB, &p, 0), CUDA_ERROR_INVALID_VALUE) << "not a granule multiple";
  p.location.id = 3;
  EXPECT_EQ(cuMemCreate(&h, 2 * kMiB, &p, 0), CUDA_ERROR_INVALID_DEVICE);
  h = create(4 * kMiB);
  EXPECT_EQ(cuMemMap(va + kMiB, 2 * kMiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE) << "unaligned";
  EXPECT_EQ(cuMemMap(va + 6 * kMiB, 4 * kMiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE)
      << "past the reservation";
  map_rw(va, 4 * kMiB, h);
  EXPECT_EQ(cuMemMap(va + 2 * kMiB, 2 * kMiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE) << "overlap";
  EXPECT_EQ(cuMemUnmap(va, 2 * kMiB), CUDA_ERROR_INVALID_VALUE) << "part of a mapping";
  EXPECT_EQ(cuMemAddressFree(va, 8 * kMiB), CUDA_ERROR_INVALID_VALUE) << "still mapped";
  ASSERT_CU(cuMemUnmap(va, 4 * kMiB));
  ASSERT_CU(cuMemRelease(h));
  EXPECT_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(cuMemAddressFree(va, 8 * kMiB));
}

TEST_F(Vmm, CreateChargesTheDeviceUntilReleasedAndUnmapped) {
  start("memory:64MiB");
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 32 * kMiB, 0, 0, 0));
  CUmemGenericAllocationHandle h = create(32 * kMiB);
  EXPECT_EQ(free_bytes(), 32 * kMiB);
  CUmemGenericAllocationHandle too_much = 0;
  CUmemAllocationProp p = prop();
  EXPECT_EQ(cuMemCreate(&too_much, 34 * kMiB, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
  map_rw(va, 32 * kMiB, h);
  ASSERT_CU(cuMemRelease(h));
  EXPECT_EQ(free_bytes(), 32 * kMiB) << "released but still mapped";
  ASSERT_CU(cuMemUnmap(va, 32 * kMiB));
  EXPECT_EQ(free_bytes(), 64 * kMiB);
}

TEST_F(Vmm, HostLocatedHandlesDoNotCountAgainstTheDevice) {
  start("memory:64MiB");
  int supported = 0;
  ASSERT_CU(cuDeviceGetAttribute(
      &supported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  EXPECT_EQ(supported, 1);
  CUmemGenericAllocationHandle host = create(48 * kMiB, CU_MEM_LOCATION_TYPE_HOST_NUMA);
  CUmemGenericAllocationHandle host2 = create(48 * kMiB, CU_MEM_LOCATION_TYPE_HOST);
  EXPECT_EQ(free_bytes(), 64 * kMiB);
  EXPECT_EQ(stats().host_pinned_bytes, 96 * kMiB);
  CUmemGenericAllocationHandle dev = create(48 * kMiB);
  EXPECT_EQ(free_bytes(), 16 * kMiB);
  ASSERT_CU(cuMemRelease(host));
  ASSERT_CU(cuMemRelease(host2));
  ASSERT_CU(cuMemRelease(dev));
  EXPECT_EQ(free_bytes(), 64 * kMiB);
}

TEST_F(Vmm, HostLocatedHandlesUnsupportedWithoutHostVmm) {
  start("memory:64MiB,host_vmm:false");
  int supported = 1;
  ASSERT_CU(cuDeviceGetAttribute(
      &supported, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0));
  EXPECT_EQ(supported, 0);
  CUmemGenericAllocationHandle h = 0;
  CUmemAllocationProp p = prop(CU_MEM_LOCATION_TYPE_HOST_NUMA);
  EXPECT_EQ(cuMemCreate(&h, 2 * kMiB, &p, 0), CUDA_ERROR_NOT_SUPPORTED);
  size_t g = 0;
  EXPECT_EQ(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_ERROR_NOT_SUPPORTED);
}

// The eviction cycle cuswap performs: copy out, unmap, release, later map a
// new handle at the same address and copy back.
TEST_F(Vmm, DataSurvivesEvictionAndRemapAtTheSameAddress) {
  start("memory:64MiB");
  const size_t bytes = 8 * kMiB;
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, bytes, 0, 0, 0));
  CUmemGenericAllocationHandle h = create(bytes);
  map_rw(va, bytes, h);
  std::vector<unsigned char> pattern(bytes);
  for (size_t i = 0; i < bytes; ++i)
    pattern[i] = static_cast<unsigned char>(i * 131 + 7);
  ASSERT_CU(cuMemcpyHtoD(va, pattern.data(), bytes));

  void* stash = nullptr;
  ASSERT_CU(cuMemAllocHost(&stash, bytes));
  ASSERT_CU(cuMemcpyDtoH(stash, va, bytes));
  ASSERT_CU(cuMemUnmap(va, bytes));
  ASSERT_CU(cuMemRelease(h));
  EXPECT_EQ(free_bytes(), 64 * kMiB);
  EXPECT_EQ(cuMemcpyHtoD(va, pattern.data(), 16), CUDA_ERROR_INVALID_VALUE)
      << "a synchronous copy into an unmapped range is an error, not a crash";

  CUmemGenericAllocationHandle h2 = create(bytes);
  map_rw(va, bytes, h2);
  ASSERT_CU(cuMemcpyHtoD(va, stash, bytes));
  std::vector<unsigned char> back(bytes);
  ASSERT_CU(cuMemcpyDtoH(back.data(), va, bytes));
  EXPECT_EQ(back, pattern);
  EXPECT_EQ(stats().hazards, 0u);
}

// Copies between device memory and host-located memory cross the link:
// timed at the link's bandwidth on the copy engines, counted each way.
TEST_F(Vmm, DeviceCopiesToHostLocatedMemoryCrossTheLink) {
  start("memory:64MiB,h2d_gbps:10,d2h_gbps:5,d2d_gbps:1000,copy_latency_us:0");
  const size_t bytes = 8 * kMiB;
  CUdeviceptr dev = 0, host = 0;
  ASSERT_CU(cuMemAddressReserve(&dev, bytes, 0, 0, 0));
  ASSERT_CU(cuMemAddressReserve(&host, bytes, 0, 0, 0));
  CUmemGenericAllocationHandle hd = create(bytes);
  CUmemGenericAllocationHandle hh = create(bytes, CU_MEM_LOCATION_TYPE_HOST_NUMA);
  map_rw(dev, bytes, hd);
  map_rw(host, bytes, hh);
  const uint64_t t0 = stats().virtual_ns;
  ASSERT_CU(cuMemcpyDtoD(host, dev, bytes));  // out: 8 MiB at 5 GB/s
  const uint64_t t1 = stats().virtual_ns;
  ASSERT_CU(cuMemcpyDtoD(dev, host, bytes));  // back: at 10 GB/s
  const uint64_t t2 = stats().virtual_ns;
  EXPECT_NEAR(static_cast<double>(t1 - t0), bytes / 5.0, bytes / 5.0 * 0.05);
  EXPECT_NEAR(static_cast<double>(t2 - t1), bytes / 10.0, bytes / 10.0 * 0.05);
  EXPECT_EQ(stats().d2h_bytes, bytes);
  EXPECT_EQ(stats().h2d_bytes, bytes);
  EXPECT_EQ(stats().d2d_bytes, 0u);
  EXPECT_EQ(stats().hazards, 0u);
  for (CUdeviceptr va : {dev, host})
    ASSERT_CU(cuMemUnmap(va, bytes));
  ASSERT_CU(cuMemRelease(hd));
  ASSERT_CU(cuMemRelease(hh));
}

TEST_F(Vmm, AHandleKeepsItsBytesWhileUnmapped) {
  start("memory:64MiB");
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 4 * kMiB, 0, 0, 0));
  CUmemGenericAllocationHandle h = create(2 * kMiB);
  map_rw(va, 2 * kMiB, h);
  ASSERT_CU(cuMemsetD32(va, 0xabcdef01, 2 * kMiB / 4));
  ASSERT_CU(cuMemUnmap(va, 2 * kMiB));
  map_rw(va + 2 * kMiB, 2 * kMiB, h);  // the same memory elsewhere in the reservation
  uint32_t word = 0;
  ASSERT_CU(cuMemcpyDtoH(&word, va + 2 * kMiB + 1024, 4));
  EXPECT_EQ(word, 0xabcdef01u);
}

TEST_F(Vmm, KernelTouchingUnmappedOrInaccessibleMemoryFaults) {
  start("memory:64MiB");
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 4 * kMiB, 0, 0, 0));
  CUmemGenericAllocationHandle h = create(2 * kMiB);
  ASSERT_CU(cuMemMap(va, 2 * kMiB, 0, h, 0));  // mapped, but no access granted yet
  ASSERT_CU(simcuda::testkit::launch_fill(k, nullptr, va, 4096, 1));
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(simcuda_last_fault_address(), va);
  EXPECT_EQ(stats().illegal_address_faults, 1u);
}

TEST_F(Vmm, ReadOnlyAccessRejectsWrites) {
  start("memory:64MiB");
  CUdeviceptr va = 0;
  ASSERT_CU(cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0));
  CUmemGenericAllocationHandle h = create(2 * kMiB);
  ASSERT_CU(cuMemMap(va, 2 * kMiB, 0, h, 0));
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  ASSERT_CU(cuMemSetAccess(va, 2 * kMiB, &access, 1));
  unsigned long long flags = 0;
  ASSERT_CU(cuMemGetAccess(&flags, &access.location, va));
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READ);
  uint32_t word = 1;
  ASSERT_CU(cuMemcpyDtoH(&word, va, 4));
  EXPECT_EQ(word, 0u);
  EXPECT_EQ(cuMemcpyHtoD(va, &word, 4), CUDA_ERROR_INVALID_VALUE);
  ASSERT_CU(simcuda::testkit::launch_fill(k, nullptr, va, 64, 1));
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_F(Vmm, UndeclaredAccessToAnUnmappedRangeIsCaughtByTheGuard) {
  start("memory:64MiB");
  CUdeviceptr va = 0, table = alloc(4096), out = alloc(4096);
  ASSERT_CU(cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0));  // never mapped
  CUdeviceptr target = va + 64;
  ASSERT_CU(cuMemcpyHtoD(table, &target, sizeof target));
  void* params[] = {&table, &out};
  ASSERT_CU(cuLaunchKernel(k.load_indirect, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(simcuda_last_fault_address(), target);
}

TEST_F(Vmm, UndeclaredAccessToHostLocatedMemoryReadsTheRightBytes) {
  start("memory:64MiB");
  CUdeviceptr va = 0, table = alloc(4096), out = alloc(4096);
  ASSERT_CU(cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0));
  map_rw(va, 2 * kMiB, create(2 * kMiB, CU_MEM_LOCATION_TYPE_HOST_NUMA));
  uint64_t secret = 0x1122334455667788ull;
  ASSERT_CU(cuMemcpyHtoD(va + 4096, &secret, sizeof secret));
  CUdeviceptr target = va + 4096;
  ASSERT_CU(cuMemcpyHtoD(table, &target, sizeof target));
  void* params[] = {&table, &out};
  ASSERT_CU(cuLaunchKernel(k.load_indirect, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr));
  ASSERT_CU(cuCtxSynchronize());
  uint64_t got = 0;
  ASSERT_CU(cuMemcpyDtoH(&got, out, sizeof got));
  EXPECT_EQ(got, secret);
}

}  // namespace
