"""The package with libcuswap.so in the process: Python children run over simcuda.

The children drive the driver API themselves through ctypes (cuInit, a
context, cuMemAlloc), so the shim's counters move for real: four 32 MiB
buffers under a 64 MiB budget make it evict.
"""

import unittest

import support

# Four 32 MiB buffers through the driver API, an iteration mark after each.
ALLOCATE = """
    import ctypes
    import cuswap
    cuda = ctypes.CDLL("libcuda.so.1")
    def check(what, status):
        if status != 0:
            raise SystemExit(f"{what} failed: CUresult {status}")
    check("cuInit", cuda.cuInit(0))
    device, context = ctypes.c_int(), ctypes.c_void_p()
    check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(device), 0))
    check("cuDevicePrimaryCtxRetain", cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device))
    check("cuCtxSetCurrent", cuda.cuCtxSetCurrent(context))
    buffers = []
    for _ in range(4):
        pointer = ctypes.c_uint64()
        check("cuMemAlloc_v2", cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(32 << 20)))
        buffers.append(pointer)
        cuswap.iteration()
"""


class UnderTheShim(unittest.TestCase):
    def test_loaded_version_and_marks(self):
        got = support.run_json("""
            import cuswap
            before = cuswap.stats()["iterations"]
            for _ in range(3):
                cuswap.iteration()
            report({"loaded": cuswap.loaded(), "version": cuswap.version(),
                    "package": cuswap.__version__, "before": before,
                    "after": cuswap.stats()["iterations"]})
        """, support.shim_env())
        self.assertEqual(got, {"loaded": True, "version": support.project_version(),
                               "package": support.project_version(), "before": 0, "after": 3})

    def test_stats_are_the_allocators_counters(self):
        got = support.run_json([ALLOCATE, """
            report(cuswap.stats())
        """], support.shim_env("budget:64MiB", "memory:64MiB"))
        for key in ("evictions", "prefetches", "bytes_to_host", "bytes_to_device",
                    "peak_device_bytes", "iterations", "following", "last_iteration"):
            self.assertIn(key, got)
        self.assertEqual(got["allocations_large"], 4)
        self.assertGreaterEqual(got["evictions"], 2)
        self.assertEqual(got["bytes_to_host"], got["evictions"] * (32 << 20))
        self.assertLessEqual(got["peak_device_bytes"], 64 << 20)
        self.assertEqual(got["iterations"], 4)
        self.assertIsInstance(got["last_iteration"], dict)

    def test_without_a_budget_stats_are_empty_and_marks_harmless(self):
        got = support.run_json([ALLOCATE, """
            report({"loaded": cuswap.loaded(), "stats": cuswap.stats()})
        """], support.shim_env(cuswap_conf="", simcuda_conf="memory:1GiB"))
        self.assertEqual(got, {"loaded": True, "stats": {}})

    def test_a_copy_opened_privately_is_found(self):
        # RTLD_LOCAL, as PyTorch's pluggable allocator opens it: not in the
        # global scope, found through /proc/self/maps. The shim's static TLS
        # needs room that glibc gives dlopen only when asked.
        got = support.run_json("""
            import ctypes, sys
            import cuswap
            cuswap.iteration()  # a no-op, and looks only once
            before = cuswap.loaded()
            ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
            report({"before": before, "loaded": cuswap.loaded(), "version": cuswap.version(),
                    "path": cuswap.library_path()})
        """, support.clean_env(GLIBC_TUNABLES="glibc.rtld.optional_static_tls=16777216"),
            args=[support.shim()])
        self.assertEqual(got, {"before": False, "loaded": True,
                               "version": support.project_version(), "path": support.shim()})


if __name__ == "__main__":
    unittest.main()
