/* cuswap's public C interface, for programs and for Python (ctypes). Every
 * function is safe to call whether or not cuswap is active, from any thread,
 * before or after CUDA is initialised. */
#ifndef CUSWAP_CUSWAP_H
#define CUSWAP_CUSWAP_H

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif

#endif /* CUSWAP_CUSWAP_H */
