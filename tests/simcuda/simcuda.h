/* simcuda: a CPU stand-in for the CUDA driver (libcuda.so.1), for tests.
 *
 * Programs call the ordinary driver API (cuda.h); this header adds what a
 * test needs on top: kernels written as host functions, the statistics of
 * the virtual clock and the hazard detector, and a few controls. The names
 * below are stable: tools other than the tests look them up by name.
 *
 * Configuration comes from SIMCUDA_CONF (same grammar as CUSWAP_CONF, see
 * tests/simcuda/README.md): memory, devices, h2d_gbps, d2h_gbps, d2d_gbps,
 * copy_latency_us, the host costs of driver calls (launch_latency_us,
 * mem_map_us, ... and host_costs), host_vmm, fail.
 */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIMCUDA_API __attribute__((visibility("default")))

/* One kernel launch, as seen by the kernel's host function. */
struct simcuda_launch {
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_mem_bytes;
  CUstream stream;
  int device;
  void* internal; /* simcuda's own state; do not touch */
};

/* A kernel: reads its parameters (params[i] points at a copy of parameter i,
 * taken at launch), declares every range before touching it with
 * simcuda_access, does its work on the CPU and returns its duration in
 * virtual nanoseconds. */
typedef uint64_t (*simcuda_kernel_fn)(void** params, struct simcuda_launch* launch);

/* Registers (or replaces) the kernel `name`; cuModuleGetFunction finds it in
 * any module. Parameter i has size param_sizes[i]; offsets follow the natural
 * alignment of each size (largest power of two dividing it, at most 8). */
SIMCUDA_API CUresult simcuda_register_kernel(const char* name, simcuda_kernel_fn fn,
                                             const size_t* param_sizes, unsigned n_params);

#define SIMCUDA_READ 1
#define SIMCUDA_WRITE 2

/* Declares that the running kernel reads and/or writes [ptr, ptr+bytes).
 * Returns 0 when the range is mapped with the needed access. Otherwise
 * returns non-zero and the launch faults: it ends with
 * CUDA_ERROR_ILLEGAL_ADDRESS, which is sticky for the context. The kernel
 * should return at once. */
SIMCUDA_API int simcuda_access(struct simcuda_launch* launch, CUdeviceptr ptr, size_t bytes,
                               int mode);

struct simcuda_stats {
  uint64_t virtual_ns;          /* latest point of any clock (host or engine) */
  uint64_t device_bytes_in_use; /* device memory in use now, all devices */
  uint64_t peak_device_bytes;   /* highest device_bytes_in_use so far */
  uint64_t host_pinned_bytes;   /* cuMemHostAlloc + host-located cuMemCreate */
  uint64_t h2d_bytes;           /* bytes copied host to device */
  uint64_t d2h_bytes;           /* bytes copied device to host */
  uint64_t d2d_bytes;           /* bytes copied device to device (and peer) */
  uint64_t kernels;             /* kernels run */
  uint64_t copies;              /* copies and sets run */
  uint64_t hazards;             /* unordered conflicting accesses, use after unmap/free */
  uint64_t illegal_address_faults;
  uint64_t stall_ns;          /* kernel time spent waiting on other streams' work */
  uint64_t host_wait_ns;      /* host virtual time spent in synchronisation, all threads */
  uint64_t injected_failures; /* calls failed by `fail` */
  /* cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap, cuMemSetAccess,
   * cuMemAddressReserve and cuMemAddressFree calls, by any caller */
  uint64_t vmm_calls;
  /* calls that made the host wait for the device: stream and context
   * synchronizes, synchronous copies and sets, cuMemFree and cuMemFreeHost,
   * and event synchronizes on work not done by the caller's clock */
  uint64_t host_syncs;
};

/* Totals over all devices; simcuda_get_device_stats for one device (the
 * counters that belong to no device, such as host_wait_ns, are zero there). */
SIMCUDA_API void simcuda_get_stats(struct simcuda_stats* out);
SIMCUDA_API CUresult simcuda_get_device_stats(int device, struct simcuda_stats* out);

/* The calling thread's virtual clock: where its driver calls' costs and
 * waits have brought it (tests/simcuda/README.md, Host time). */
SIMCUDA_API uint64_t simcuda_host_clock_ns(void);

/* Moves the calling thread's clock to `ns` if it is behind: a thread that
 * takes over work another handed it at `ns` (read with
 * simcuda_host_clock_ns) cannot have started it earlier. */
SIMCUDA_API void simcuda_host_clock_join(uint64_t ns);

/* A one-line description of the most recent hazard, or "" if none. The
 * string stays valid until the next hazard or reset. */
SIMCUDA_API const char* simcuda_last_hazard(void);

/* Address of the most recent illegal-address fault (0 if none). */
SIMCUDA_API CUdeviceptr simcuda_last_fault_address(void);

/* Test control: waits for all work, frees everything (memory, contexts,
 * streams, events, modules; registered kernels stay), zeroes the
 * statistics and reconfigures from `conf` (NULL: from SIMCUDA_CONF). The
 * driver is left uninitialised, as at process start. Returns
 * CUDA_ERROR_INVALID_VALUE, changing nothing, if `conf` has a bad pair. */
SIMCUDA_API CUresult simcuda_reset(const char* conf);

/* The cuGetProcAddress table, for tests that check it against the toolkit:
 * fills up to `capacity` entries and returns how many there are. */
SIMCUDA_API size_t simcuda_proc_table(const char** bases, int* versions, int* per_thread,
                                      int* implemented, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_H */
