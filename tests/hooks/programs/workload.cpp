#include "tests/hooks/programs/workload.h"

#include <dlfcn.h>

namespace workload {
namespace {

constexpr size_t kMiB = 1u << 20;

struct Transcript {
  const Api& api;
  int failures = 0;

  const char* name(CUresult r) const {
    const char* text = nullptr;
    return api.cuGetErrorName(r, &text) == CUDA_SUCCESS && text ? text : "(unnamed)";
  }
  // Prints one call's result; `expected` is what the workload relies on.
  CUresult call(const char* what, CUresult r, CUresult expected = CUDA_SUCCESS) {
    std::printf("%s -> %s\n", what, name(r));
    if (r != expected) ++failures;
    return r;
  }
  void check(const char* what, bool ok) {
    std::printf("check %s: %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) ++failures;
  }
};

CUresult launch1(const Api& api, CUfunction f, CUstream s, void** params, void** extra = nullptr) {
  return api.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, extra);
}

}  // namespace

int run(const Api& api, bool per_thread_stream) {
  Transcript t{api};
  simcuda::testkit::register_kernels();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  t.call("cuInit", api.cuInit(0));
  t.call("cuDeviceGet", api.cuDeviceGet(&dev, 0));
  t.call("cuDevicePrimaryCtxRetain", api.cuDevicePrimaryCtxRetain(&ctx, dev));
  t.call("cuCtxSetCurrent", api.cuCtxSetCurrent(ctx));
  size_t free_before = 0, total = 0;
  t.call("cuMemGetInfo", api.cuMemGetInfo(&free_before, &total));
  std::printf("total %zu MiB\n", total / kMiB);

  // Allocations of every kind the shim records.
  CUstream s = nullptr;
  t.call("cuStreamCreate", api.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUstream work = per_thread_stream ? nullptr : s;  // stream 0 is per-thread in _ptsz mode
  CUdeviceptr a = 0, b = 0, c = 0, d = 0;
  size_t pitch = 0;
  t.call("cuMemAlloc(a, 1 MiB)", api.cuMemAlloc(&a, kMiB));
  t.call("cuMemAlloc(b, 1 MiB)", api.cuMemAlloc(&b, kMiB));
  t.call("cuMemAllocPitch(c, 1000 x 64)", api.cuMemAllocPitch(&c, &pitch, 1000, 64, 4));
  std::printf("pitch %zu\n", pitch);
  t.call("cuMemAllocAsync(d, 2 MiB)", api.cuMemAllocAsync(&d, 2 * kMiB, work));
  if (t.failures) {
    // Going on with a null pointer would fault asynchronously, and which
    // later call reports it would depend on timing.
    std::printf("stopping: an allocation failed\n");
    for (CUdeviceptr p : {a, b, c})
      if (p) t.call("cuMemFree", api.cuMemFree(p));
    if (d) t.call("cuMemFreeAsync(d)", api.cuMemFreeAsync(d, work));
    t.call("cuStreamSynchronize", api.cuStreamSynchronize(work));
    std::printf("failures %d\n", t.failures);
    return 1;
  }

  // Copies and sets.
  std::vector<unsigned char> pattern(kMiB);
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<unsigned char>(i % 251);
  t.call("cuMemcpyHtoD(a)", api.cuMemcpyHtoD(a, pattern.data(), kMiB));
  t.call("cuMemsetD8Async(b)", api.cuMemsetD8Async(b, 0, kMiB, work));
  t.call("cuMemsetD32(d)", api.cuMemsetD32(d, 0x01010101u, 2 * kMiB / 4));

  // Kernels: by kernelParams, by `extra`, with a pointer inside a struct.
  if (api.iteration_begin) api.iteration_begin();
  CUmodule module = nullptr;
  CUfunction copy = nullptr, fill = nullptr, fill_struct = nullptr;
  t.call("cuModuleLoadData", api.cuModuleLoadData(&module, "image"));
  t.call("cuModuleGetFunction(copy)", api.cuModuleGetFunction(&copy, module, "copy"));
  t.call("cuModuleGetFunction(fill)", api.cuModuleGetFunction(&fill, module, "fill"));
  t.call("cuModuleGetFunction(fill_struct)",
         api.cuModuleGetFunction(&fill_struct, module, "fill_struct"));
  uint64_t bytes = kMiB, ns = 1000;
  void* copy_params[] = {&b, &a, &bytes, &ns};
  t.call("cuLaunchKernel(copy b <- a)", launch1(api, copy, work, copy_params));

  unsigned char buffer[32] = {};
  uint64_t fill_bytes = pitch * 64;  // every row, padding included
  uint32_t value = 0x7e;
  std::memcpy(buffer + 0, &c, 8);
  std::memcpy(buffer + 8, &fill_bytes, 8);
  std::memcpy(buffer + 16, &value, 4);
  std::memcpy(buffer + 24, &ns, 8);
  size_t buffer_size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &buffer_size, CU_LAUNCH_PARAM_END};
  t.call("cuLaunchKernel(fill c, extra)", launch1(api, fill, work, nullptr, extra));

  simcuda::testkit::FillArgs args{d + kMiB, 4096, 0x33};
  void* struct_params[] = {&args, &ns};
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  config.hStream = work;
  t.call("cuLaunchKernelEx(fill_struct d+1MiB)",
         api.cuLaunchKernelEx(&config, fill_struct, struct_params, nullptr));

  std::vector<unsigned char> back(kMiB);
  t.call("cuMemcpyDtoHAsync(b)", api.cuMemcpyDtoHAsync(back.data(), b, kMiB, work));
  t.call("cuStreamSynchronize", api.cuStreamSynchronize(work));
  t.check("b == a", back == pattern);

  CUDA_MEMCPY2D rows{};
  rows.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  rows.srcDevice = c;
  rows.srcPitch = pitch;
  rows.dstMemoryType = CU_MEMORYTYPE_HOST;
  rows.dstHost = back.data();
  rows.dstPitch = 1000;
  rows.WidthInBytes = 1000;
  rows.Height = 64;
  t.call("cuMemcpy2D(c -> host)", api.cuMemcpy2D(&rows));
  bool rows_ok = true;
  for (size_t i = 0; i < 64000; ++i)
    rows_ok &= back[i] == 0x7e;
  t.check("c rows filled", rows_ok);
  t.call("cuMemcpyDtoD(a <- d)", api.cuMemcpyDtoD(a, d + kMiB, 4096));
  t.call("cuMemcpyDtoH(a)", api.cuMemcpyDtoH(back.data(), a, 4096));
  bool struct_ok = true;
  for (size_t i = 0; i < 4096; ++i)
    struct_ok &= back[i] == 0x33;
  t.check("struct launch wrote d", struct_ok);

  // Calls that must fail, and fail the same way with cuswap.
  CUdeviceptr none = 0;
  t.call("cuMemAlloc(0 bytes)", api.cuMemAlloc(&none, 0), CUDA_ERROR_INVALID_VALUE);
  t.call("cuMemFree(not a buffer)", api.cuMemFree(0x1000), CUDA_ERROR_INVALID_VALUE);
  t.call("cuMemcpyHtoD(past the end)", api.cuMemcpyHtoD(a, pattern.data(), kMiB + 1),
         CUDA_ERROR_INVALID_VALUE);
  t.call("cuMemAlloc(too much)", api.cuMemAlloc(&none, total + 1), CUDA_ERROR_OUT_OF_MEMORY);

  // The application's own virtual memory: recorded, not managed.
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle handle = 0;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  t.call("cuMemAddressReserve", api.cuMemAddressReserve(&va, 2 * kMiB, 0, 0, 0));
  t.call("cuMemCreate", api.cuMemCreate(&handle, 2 * kMiB, &prop, 0));
  t.call("cuMemMap", api.cuMemMap(va, 2 * kMiB, 0, handle, 0));
  t.call("cuMemSetAccess", api.cuMemSetAccess(va, 2 * kMiB, &access, 1));
  t.call("cuMemUnmap", api.cuMemUnmap(va, 2 * kMiB));
  t.call("cuMemRelease", api.cuMemRelease(handle));
  t.call("cuMemAddressFree", api.cuMemAddressFree(va, 2 * kMiB));

  t.call("cuMemFreeAsync(d)", api.cuMemFreeAsync(d, work));
  t.call("cuStreamSynchronize", api.cuStreamSynchronize(work));
  t.call("cuMemFree(a)", api.cuMemFree(a));
  t.call("cuMemFree(b)", api.cuMemFree(b));
  t.call("cuMemFree(c)", api.cuMemFree(c));
  size_t free_after = 0;
  t.call("cuMemGetInfo", api.cuMemGetInfo(&free_after, &total));
  t.check("all memory returned", free_after == free_before);
  std::printf("failures %d\n", t.failures);
  return t.failures == 0 ? 0 : 1;
}

}  // namespace workload
