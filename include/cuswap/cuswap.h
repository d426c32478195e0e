/* cuswap's public C interface, for programs and for Python (ctypes). Every
 * function is safe to call whether or not cuswap is active, from any thread,
 * before or after CUDA is initialised. */
#ifndef CUSWAP_CUSWAP_H
#define CUSWAP_CUSWAP_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* cudaStream_t and CUstream, without the CUDA headers. */
struct CUstream_st;

#define CUSWAP_API __attribute__((visibility("default")))

/* Marks the start of a training iteration: call it before each step. The
 * planner uses the marks to cut the trace into iterations. Marks made before
 * the driver is initialised (cuInit) are not recorded: the trace opens then. */
CUSWAP_API void cuswap_iteration_begin(void);

/* The counters so far as one JSON object: the swapping allocator's
 * (evictions, prefetches, prefetches_on_demand, prefetches_planned,
 * bytes_to_host, bytes_to_device, ...), and when a plan is followed or made
 * online, "iterations", "following", "last_iteration" {prefetches_planned,
 * prefetches_on_demand, late_prefetches, late_ns, evictions, bytes_to_host,
 * bytes_to_device}. "{}" without a budget. The string belongs to the calling
 * thread and stays valid until its next call. */
CUSWAP_API const char* cuswap_stats_json(void);

/* "MAJOR.MINOR.PATCH" of the loaded libcuswap.so. */
CUSWAP_API const char* cuswap_version(void);

/* PyTorch's pluggable allocator (torch.cuda.memory.CUDAPluggableAllocator,
 * as python/cuswap/torch.py uses it): a block of `size` bytes on `device`,
 * ordered on `stream`, or NULL when there is no memory for it; and its
 * free, on the stream it was allocated on. Under a budget the swapping
 * allocator serves them, as it serves cuMemAllocAsync; without one the
 * driver does. Swapping needs libcuswap.so preloaded (LD_PRELOAD, or
 * `cuswap run`), so that cuswap sees the kernels: loaded only by PyTorch,
 * the blocks come straight from the driver and a warning says so. */
CUSWAP_API void* cuswap_torch_alloc(ssize_t size, int device, struct CUstream_st* stream);
CUSWAP_API void cuswap_torch_free(void* ptr, size_t size, int device, struct CUstream_st* stream);

#ifdef __cplusplus
}
#endif

#endif /* CUSWAP_CUSWAP_H */
