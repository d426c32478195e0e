// cuswap-driver-probe: what the driver under cuswap costs on this machine
// (docs/gpu-check.md). It measures pinned host<->device copy bandwidth, the
// cost of each virtual-memory call cuswap makes when it moves a buffer
// (cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease,
// cuMemAddressReserve, cuMemAddressFree) at two sizes, the map and
// set-access costs of one range made of 1, 8 and 32 handles, the calls that
// order work (cuEventRecord, cuEventQuery, cuStreamWaitEvent, synchronizes
// on finished work), pinning host memory per MiB, and whether cuMemUnmap
// waits for a kernel running on another stream. Its JSON carries the
// SIMCUDA_CONF that would make simcuda charge what this driver charges
// (tests/simcuda/README.md, Host time).
//
// Like the replay (bench/replay/driver.h) it dlopens libcuda.so.1 and links
// no libcuda, so the same binary runs on a GPU and on simcuda
// (LD_LIBRARY_PATH); simcuda's extras are found by name. On simcuda, copies
// and calls are timed on its virtual clock, the unmap check on the wall
// clock (its spin kernel really sleeps on a worker thread).
//
// Note [A standalone probe]: this file uses only the standard library,
// cuda.h and simcuda.h (declarations only), not fmt or CLI11, so that
// scripts/gpu-check.sh can still build it with a bare `g++` on a GPU
// machine that lacks the project's packages. Its report and renderings are
// a header (bench/driver_probe_report.h) for the same reason: the one
// command compiles this file alone.
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/driver_probe_report.h"
#include "tests/simcuda/simcuda.h"

namespace cuswap::probe {

namespace {

constexpr size_t kVmmSizes[] = {2 * kMiB, 64 * kMiB};
constexpr int kRangeHandles[] = {1, 8, 32};
constexpr uint64_t kSpinNs = 200'000'000;  // the kernel cuMemUnmap may wait for

// X(name as cuda.h spells it); the symbol is what the name expands to
// (cuMemAlloc -> cuMemAlloc_v2), the prototype the header's.
#define PROBE_DRIVER(X)                                                                            \
  X(cuInit)                                                                                        \
  X(cuGetErrorName) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetName)                        \
      X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc)             \
          X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemcpyHtoD) X(cuMemcpyDtoH)          \
              X(cuMemGetAllocationGranularity) X(cuMemAddressReserve) X(cuMemAddressFree)          \
                  X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap) X(cuMemSetAccess)       \
                      X(cuStreamCreate) X(cuStreamQuery) X(cuStreamSynchronize) X(cuStreamDestroy) \
                          X(cuModuleLoadData) X(cuModuleGetFunction) X(cuLaunchKernel)             \
                              X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery)  \
                                  X(cuEventSynchronize) X(cuStreamWaitEvent)

#define PROBE_STR2(x) #x
#define PROBE_STR(x) PROBE_STR2(x)

struct Driver {
#define PROBE_MEMBER(name) decltype(&::name) name = nullptr;
  PROBE_DRIVER(PROBE_MEMBER)
#undef PROBE_MEMBER
  decltype(&::simcuda_get_stats) simcuda_get_stats = nullptr;
  decltype(&::simcuda_register_kernel) simcuda_register_kernel = nullptr;
  decltype(&::simcuda_host_clock_ns) simcuda_host_clock_ns = nullptr;
  bool simulated() const {
    return simcuda_get_stats != nullptr;
  }
};

// A spin kernel: returns once %globaltimer has advanced by its argument (ns).
// PTX for sm_70, which every later GPU JIT-compiles at cuModuleLoadData.
constexpr const char kSpinPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry cuswap_probe_spin(.param .u64 duration_ns)
{
  .reg .pred %p;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [duration_ns];
  mov.u64 %rd2, %globaltimer;
SPIN:
  mov.u64 %rd3, %globaltimer;
  sub.u64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p, %rd4, %rd1;
  @%p bra SPIN;
  ret;
}
)";

// simcuda's spin kernel: sleeps for real (so the unmap check sees a busy
// stream on the wall clock) and takes as long in virtual time.
uint64_t sim_spin(void** params, simcuda_launch*) {
  const uint64_t duration_ns = *static_cast<uint64_t*>(params[0]);
  std::this_thread::sleep_for(std::chrono::nanoseconds(duration_ns));
  return duration_ns;
}

class Probe {
 public:
  explicit Probe(Report& r) : r_(r) {}

  // False with one line in the report's error.
  bool run() {
    if (!open() || !start()) return false;
    if (!bandwidth()) return false;
    for (size_t size : kVmmSizes)
      if (!vmm_costs(size)) return false;
    for (int handles : kRangeHandles)
      if (!range_cost(handles)) return false;
    return ordering_costs() && pin_costs() && unmap_wait();
  }

 private:
  bool fail(const std::string& what) {
    if (r_.error.empty()) r_.error = what;
    return false;
  }
  bool check(CUresult result, const char* what) {
    if (result == CUDA_SUCCESS) return true;
    const char* name = nullptr;
    if (!d_.cuGetErrorName || d_.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
      name = "an unknown CUresult";
    return fail(std::string(what) + " failed: " + name);
  }

  // The probe's clock: simcuda's virtual time, else the wall clock.
  uint64_t now_ns() const {
    if (d_.simcuda_host_clock_ns) return d_.simcuda_host_clock_ns();
    if (d_.simcuda_get_stats) {
      simcuda_stats s{};
      d_.simcuda_get_stats(&s);
      return s.virtual_ns;
    }
    return wall_ns();
  }
  static uint64_t wall_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
  }

  bool open() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) return fail(std::string("cannot load libcuda.so.1: ") + dlerror());
#define PROBE_RESOLVE(name)                                                   \
  d_.name = reinterpret_cast<decltype(d_.name)>(dlsym(lib, PROBE_STR(name))); \
  if (!d_.name) return fail("libcuda.so.1 has no " PROBE_STR(name));
    PROBE_DRIVER(PROBE_RESOLVE)
#undef PROBE_RESOLVE
    d_.simcuda_get_stats =
        reinterpret_cast<decltype(d_.simcuda_get_stats)>(dlsym(lib, "simcuda_get_stats"));
    d_.simcuda_register_kernel = reinterpret_cast<decltype(d_.simcuda_register_kernel)>(
        dlsym(lib, "simcuda_register_kernel"));
    d_.simcuda_host_clock_ns =
        reinterpret_cast<decltype(d_.simcuda_host_clock_ns)>(dlsym(lib, "simcuda_host_clock_ns"));
    if (d_.simulated()) {
      r_.driver = "simcuda";
      r_.clock = "virtual";
    }
    return true;
  }

  bool start() {
    CUcontext ctx = nullptr;
    char name[256] = {};
    if (!check(d_.cuInit(0), "cuInit") || !check(d_.cuDeviceGet(&dev_, 0), "cuDeviceGet") ||
        !check(d_.cuDriverGetVersion(&r_.driver_version), "cuDriverGetVersion") ||
        !check(d_.cuDeviceGetName(name, sizeof name - 1, dev_), "cuDeviceGetName") ||
        !check(d_.cuDevicePrimaryCtxRetain(&ctx, dev_), "cuDevicePrimaryCtxRetain") ||
        !check(d_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
      return false;
    r_.device = name;
    return true;
  }

  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
  }

  // Synchronous copies of pinned memory: each returns when the bytes are there.
  bool bandwidth() {
    void* host = nullptr;
    CUdeviceptr dev = 0;
    if (!check(d_.cuMemHostAlloc(&host, kCopyBytes, 0), "cuMemHostAlloc")) return false;
    std::memset(host, 0x5a, kCopyBytes);
    bool ok = check(d_.cuMemAlloc(&dev, kCopyBytes), "cuMemAlloc");
    std::vector<double> h2d_ns, d2h_ns;
    for (int i = -1; ok && i < kCopyRepeats; ++i) {  // i == -1: warm-up
      const uint64_t t0 = now_ns();
      ok = check(d_.cuMemcpyHtoD(dev, host, kCopyBytes), "cuMemcpyHtoD");
      const uint64_t t1 = now_ns();
      ok = ok && check(d_.cuMemcpyDtoH(host, dev, kCopyBytes), "cuMemcpyDtoH");
      const uint64_t t2 = now_ns();
      if (i >= 0) {
        h2d_ns.push_back(static_cast<double>(t1 - t0));
        d2h_ns.push_back(static_cast<double>(t2 - t1));
      }
    }
    if (dev) ok = check(d_.cuMemFree(dev), "cuMemFree") && ok;
    ok = check(d_.cuMemFreeHost(host), "cuMemFreeHost") && ok;
    if (!ok) return false;
    const double h2d = median(h2d_ns), d2h = median(d2h_ns);
    if (h2d <= 0 || d2h <= 0) return fail("a 64 MiB copy took no time on the probe's clock");
    r_.h2d_bytes_per_s = static_cast<double>(kCopyBytes) / h2d * 1e9;
    r_.d2h_bytes_per_s = static_cast<double>(kCopyBytes) / d2h * 1e9;
    return true;
  }

  CUmemAllocationProp device_prop() const {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev_;
    return prop;
  }
  CUmemAccessDesc read_write() const {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = dev_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return access;
  }

  // One reservation; each repeat creates, maps, enables, unmaps and
  // releases one physical allocation of `size_bytes`, timing each call.
  bool vmm_costs(size_t size_bytes) {
    const CUmemAllocationProp prop = device_prop();
    const CUmemAccessDesc access = read_write();
    size_t granularity = 0;
    if (!check(
            d_.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity"))
      return false;
    const size_t size = (size_bytes + granularity - 1) / granularity * granularity;
    std::vector<double> reserve, address_free;
    for (int i = -1; i < kVmmRepeats; ++i) {
      CUdeviceptr range = 0;
      const uint64_t t0 = now_ns();
      if (!check(d_.cuMemAddressReserve(&range, size, 0, 0, 0), "cuMemAddressReserve"))
        return false;
      const uint64_t t1 = now_ns();
      if (!check(d_.cuMemAddressFree(range, size), "cuMemAddressFree")) return false;
      const uint64_t t2 = now_ns();
      if (i < 0) continue;
      reserve.push_back(static_cast<double>(t1 - t0) / 1e3);
      address_free.push_back(static_cast<double>(t2 - t1) / 1e3);
    }
    CUdeviceptr va = 0;
    if (!check(d_.cuMemAddressReserve(&va, size, 0, 0, 0), "cuMemAddressReserve")) return false;
    std::vector<double> create, map, set_access, unmap, release;
    bool ok = true;
    for (int i = -1; ok && i < kVmmRepeats; ++i) {  // i == -1: warm-up
      CUmemGenericAllocationHandle handle = 0;
      const uint64_t t0 = now_ns();
      if (!check(d_.cuMemCreate(&handle, size, &prop, 0), "cuMemCreate")) {
        ok = false;
        break;
      }
      const uint64_t t1 = now_ns();
      ok = check(d_.cuMemMap(va, size, 0, handle, 0), "cuMemMap");
      const uint64_t t2 = now_ns();
      ok = ok && check(d_.cuMemSetAccess(va, size, &access, 1), "cuMemSetAccess");
      const uint64_t t3 = now_ns();
      ok = ok && check(d_.cuMemUnmap(va, size), "cuMemUnmap");
      const uint64_t t4 = now_ns();
      ok = check(d_.cuMemRelease(handle), "cuMemRelease") && ok;
      const uint64_t t5 = now_ns();
      if (i < 0) continue;
      create.push_back(static_cast<double>(t1 - t0) / 1e3);
      map.push_back(static_cast<double>(t2 - t1) / 1e3);
      set_access.push_back(static_cast<double>(t3 - t2) / 1e3);
      unmap.push_back(static_cast<double>(t4 - t3) / 1e3);
      release.push_back(static_cast<double>(t5 - t4) / 1e3);
    }
    ok = check(d_.cuMemAddressFree(va, size), "cuMemAddressFree") && ok;
    if (!ok) return false;
    r_.vmm.push_back({size_bytes, median(create), median(map), median(set_access), median(unmap),
                      median(release), median(reserve), median(address_free)});
    return true;
  }

  // A range of `handles` pages, each its own 2 MiB handle, as an allocator
  // that maps a buffer page by page builds it (median of kVmmRepeats).
  bool range_cost(int handles) {
    const CUmemAllocationProp prop = device_prop();
    const CUmemAccessDesc access = read_write();
    const size_t page = 2 * kMiB, size = page * static_cast<size_t>(handles);
    CUdeviceptr va = 0;
    if (!check(d_.cuMemAddressReserve(&va, size, 0, 0, 0), "cuMemAddressReserve")) return false;
    std::vector<CUmemGenericAllocationHandle> pages(static_cast<size_t>(handles));
    bool ok = true;
    size_t made = 0;
    for (; ok && made < pages.size(); ++made)
      ok = check(d_.cuMemCreate(&pages[made], page, &prop, 0), "cuMemCreate");
    if (!ok) --made;
    std::vector<double> map_all, set_access, unmap;
    for (int i = -1; ok && i < kVmmRepeats; ++i) {
      const uint64_t t0 = now_ns();
      for (size_t p = 0; ok && p < pages.size(); ++p)
        ok = check(d_.cuMemMap(va + p * page, page, 0, pages[p], 0), "cuMemMap");
      const uint64_t t1 = now_ns();
      ok = ok && check(d_.cuMemSetAccess(va, size, &access, 1), "cuMemSetAccess");
      const uint64_t t2 = now_ns();
      ok = ok && check(d_.cuMemUnmap(va, size), "cuMemUnmap");
      const uint64_t t3 = now_ns();
      if (i < 0) continue;
      map_all.push_back(static_cast<double>(t1 - t0) / 1e3);
      set_access.push_back(static_cast<double>(t2 - t1) / 1e3);
      unmap.push_back(static_cast<double>(t3 - t2) / 1e3);
    }
    for (size_t p = 0; p < made; ++p)
      ok = check(d_.cuMemRelease(pages[p]), "cuMemRelease") && ok;
    ok = check(d_.cuMemAddressFree(va, size), "cuMemAddressFree") && ok;
    if (!ok) return false;
    r_.ranges.push_back({handles, median(map_all), median(set_access), median(unmap)});
    return true;
  }

  // Record, query, wait and synchronize, on a stream with nothing left to
  // do: the calls' own cost (median of kOrderingRepeats).
  bool ordering_costs() {
    CUstream stream = nullptr;
    CUevent event = nullptr;
    if (!check(d_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        !check(d_.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate"))
      return false;
    std::vector<double> record, query, wait, stream_sync, event_sync;
    bool ok = true;
    for (int i = -1; ok && i < kOrderingRepeats; ++i) {
      const uint64_t t0 = now_ns();
      ok = check(d_.cuEventRecord(event, stream), "cuEventRecord");
      const uint64_t t1 = now_ns();
      ok = ok && check(d_.cuStreamSynchronize(stream), "cuStreamSynchronize");
      const uint64_t t2 = now_ns();
      ok = ok && check(d_.cuEventQuery(event), "cuEventQuery");
      const uint64_t t3 = now_ns();
      ok = ok && check(d_.cuEventSynchronize(event), "cuEventSynchronize");
      const uint64_t t4 = now_ns();
      ok = ok && check(d_.cuStreamWaitEvent(stream, event, 0), "cuStreamWaitEvent");
      const uint64_t t5 = now_ns();
      ok = ok && check(d_.cuStreamSynchronize(stream), "cuStreamSynchronize");  // settles the wait
      if (i < 0) continue;
      record.push_back(static_cast<double>(t1 - t0) / 1e3);
      stream_sync.push_back(static_cast<double>(t2 - t1) / 1e3);
      query.push_back(static_cast<double>(t3 - t2) / 1e3);
      event_sync.push_back(static_cast<double>(t4 - t3) / 1e3);
      wait.push_back(static_cast<double>(t5 - t4) / 1e3);
    }
    ok = check(d_.cuEventDestroy(event), "cuEventDestroy") && ok;
    ok = check(d_.cuStreamDestroy(stream), "cuStreamDestroy") && ok;
    if (!ok) return false;
    r_.ordering = {median(record), median(query), median(wait), median(stream_sync),
                   median(event_sync)};
    return true;
  }

  // cuMemHostAlloc and cuMemFreeHost of 64 MiB, first touch not included.
  bool pin_costs() {
    std::vector<double> alloc, release;
    for (int i = 0; i < kPinRepeats; ++i) {
      void* host = nullptr;
      const uint64_t t0 = now_ns();
      if (!check(d_.cuMemHostAlloc(&host, kCopyBytes, 0), "cuMemHostAlloc")) return false;
      const uint64_t t1 = now_ns();
      if (!check(d_.cuMemFreeHost(host), "cuMemFreeHost")) return false;
      const uint64_t t2 = now_ns();
      alloc.push_back(static_cast<double>(t1 - t0) / 1e3);
      release.push_back(static_cast<double>(t2 - t1) / 1e3);
    }
    const double mib = static_cast<double>(kCopyBytes / kMiB);
    r_.pin = {median(alloc) / mib, median(release) / mib};
    return true;
  }

  bool load_spin(CUfunction& spin) {
    CUmodule module = nullptr;
    if (d_.simulated()) {
      const size_t sizes[] = {sizeof(uint64_t)};
      if (!d_.simcuda_register_kernel)
        return fail("simcuda has no simcuda_register_kernel for the spin kernel");
      if (!check(d_.simcuda_register_kernel("cuswap_probe_spin", sim_spin, sizes, 1),
                 "simcuda_register_kernel"))
        return false;
    }
    return check(d_.cuModuleLoadData(&module, kSpinPtx), "cuModuleLoadData (the spin kernel)") &&
           check(d_.cuModuleGetFunction(&spin, module, "cuswap_probe_spin"), "cuModuleGetFunction");
  }

  bool launch_spin(CUfunction spin, CUstream stream, uint64_t duration_ns) {
    void* params[] = {&duration_ns};
    return check(d_.cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr),
                 "cuLaunchKernel");
  }

  // cuMemUnmap (and cuMemRelease) of a mapping no queued work uses, while a
  // kernel spins on another stream: if the call returns with the kernel's
  // stream still busy, it did not wait. Timed on the wall clock.
  bool unmap_wait() {
    const CUmemAllocationProp prop = device_prop();
    const CUmemAccessDesc access = read_write();
    size_t granularity = 0;
    if (!check(
            d_.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            "cuMemGetAllocationGranularity"))
      return false;
    CUfunction spin = nullptr;
    CUstream stream = nullptr;
    if (!load_spin(spin) ||
        !check(d_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
      return false;
    // A short launch first, so that loading the kernel is not in the timing.
    if (!launch_spin(spin, stream, 1'000'000) ||
        !check(d_.cuStreamSynchronize(stream), "cuStreamSynchronize"))
      return false;
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle handle = 0;
    if (!check(d_.cuMemAddressReserve(&va, granularity, 0, 0, 0), "cuMemAddressReserve") ||
        !check(d_.cuMemCreate(&handle, granularity, &prop, 0), "cuMemCreate") ||
        !check(d_.cuMemMap(va, granularity, 0, handle, 0), "cuMemMap") ||
        !check(d_.cuMemSetAccess(va, granularity, &access, 1), "cuMemSetAccess"))
      return false;
    if (!launch_spin(spin, stream, kSpinNs)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let it start
    const uint64_t t0 = wall_ns();
    const bool unmapped = check(d_.cuMemUnmap(va, granularity), "cuMemUnmap");
    const uint64_t t1 = wall_ns();
    const bool released = unmapped && check(d_.cuMemRelease(handle), "cuMemRelease");
    const uint64_t t2 = wall_ns();
    const CUresult query = d_.cuStreamQuery(stream);
    const bool synced = check(d_.cuStreamSynchronize(stream), "cuStreamSynchronize");
    if (!unmapped || !released || !synced ||
        !check(d_.cuMemAddressFree(va, granularity), "cuMemAddressFree") ||
        !check(d_.cuStreamDestroy(stream), "cuStreamDestroy"))
      return false;
    if (query != CUDA_SUCCESS && query != CUDA_ERROR_NOT_READY)
      return check(query, "cuStreamQuery");
    r_.unmap = {true, static_cast<double>(kSpinNs) / 1e6, static_cast<double>(t1 - t0) / 1e3,
                static_cast<double>(t2 - t1) / 1e3, query == CUDA_ERROR_NOT_READY};
    return true;
  }

  Driver d_;
  CUdevice dev_ = 0;
  Report& r_;
};

}  // namespace

}  // namespace cuswap::probe

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::printf(
          "usage: cuswap-driver-probe [--json]\n"
          "Measures copy bandwidth, VMM call costs and whether cuMemUnmap waits, on the\n"
          "libcuda.so.1 that LD_LIBRARY_PATH finds (docs/gpu-check.md).\n");
      return 0;
    } else {
      std::fprintf(stderr, "cuswap-driver-probe: error: unknown option \"%s\" (try --help)\n",
                   argv[i]);
      return 2;
    }
  }
  cuswap::probe::Report report;
  const bool ok = cuswap::probe::Probe(report).run();
  if (json)
    cuswap::probe::print_json(report);
  else
    cuswap::probe::print_text(report);
  if (!ok) std::fprintf(stderr, "cuswap-driver-probe: error: %s\n", report.error.c_str());
  return ok ? 0 : 1;
}
