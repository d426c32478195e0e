"""cuswap.torch without PyTorch, and over a stand-in for the part of torch it calls.

PyTorch is not needed to build or test cuswap, so these tests hide any real
torch: "none" makes `import torch` fail (None in sys.modules); "fake" puts in
a module with torch.version.cuda, torch.cuda.is_available, memory_allocated
and torch.cuda.memory's CUDAPluggableAllocator and change_current_allocator,
which record how they were called. What the real ones do with cuswap's
allocator needs a GPU.

Whether the libcuswap.so under test exports cuswap_torch_alloc and
cuswap_torch_free decides what enable() must do with it: use it, or refuse
it, saying it is too old. The tests check whichever applies.
"""

import json
import unittest

import support

# Child prelude: torch replaced according to the JSON in sys.argv[1].
FAKE_TORCH = """
    import json, os, sys, types
    state = json.loads(sys.argv[1])
    calls = []
    if state["torch"] == "none":
        sys.modules["torch"] = None
    else:
        class CUDAPluggableAllocator:
            def __init__(self, path, alloc_fn_name, free_fn_name):
                calls.append(["CUDAPluggableAllocator", path, alloc_fn_name, free_fn_name,
                              os.environ.get("CUSWAP_CONF")])

        def change_current_allocator(allocator):
            if state.get("refuse"):
                raise RuntimeError("Can't swap an already initialized allocator")
            calls.append(["change_current_allocator", type(allocator).__name__])

        torch = types.ModuleType("torch")
        torch.version = types.SimpleNamespace(cuda=state.get("cuda", "12.4"))
        torch.cuda = types.SimpleNamespace(
            is_available=lambda: state.get("available", True),
            memory_allocated=lambda: state.get("allocated", 0),
            memory=types.SimpleNamespace(CUDAPluggableAllocator=CUDAPluggableAllocator,
                                         change_current_allocator=change_current_allocator))
        sys.modules["torch"] = torch

    def attempt(call):
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = {"ok": type(call()).__name__}
            except Exception as e:
                result = {"error": type(e).__name__, "message": str(e)}
        if caught:
            result["warnings"] = [str(w.message) for w in caught]
        return result

    def exports(path=None):
        import ctypes
        lib = ctypes.CDLL(path)
        return hasattr(lib, "cuswap_torch_alloc") and hasattr(lib, "cuswap_torch_free")
"""


def run(code, env, **state):
    return support.run_json([FAKE_TORCH, code], env, args=[json.dumps(state)])


def no_cuswap_env():
    """No shim, no CUSWAP_LIBRARY, no cuswap on PATH."""
    return support.clean_env(PATH="/usr/bin:/bin")


class WithoutTorch(unittest.TestCase):
    def test_the_module_imports_and_its_functions_say_torch_is_needed(self):
        got = run("""
            import cuswap.torch
            report({"enable": attempt(cuswap.torch.enable),
                    "allocator": attempt(cuswap.torch.allocator),
                    "bad_budget": attempt(lambda: cuswap.torch.enable(budget="lots"))})
        """, no_cuswap_env(), torch="none")
        for name in ("enable", "allocator"):
            self.assertEqual(got[name]["error"], "ImportError", got)
            self.assertIn("cuswap.torch needs PyTorch", got[name]["message"])
            self.assertIn("pip install torch", got[name]["message"])
            self.assertNotIn("\n", got[name]["message"])
        # A bad budget is the caller's error, whether or not torch is there.
        self.assertEqual(got["bad_budget"]["error"], "ValueError", got)


class EnableRefuses(unittest.TestCase):
    def refusal(self, env=None, **state):
        got = run("""
            import cuswap.torch
            report({"enable": attempt(cuswap.torch.enable), "calls": calls})
        """, env or no_cuswap_env(), torch="fake", **state)
        self.assertEqual(got["calls"], [], "nothing may be changed in torch")
        self.assertEqual(got["enable"].get("error"), "RuntimeError", got)
        self.assertNotIn("\n", got["enable"]["message"])
        return got["enable"]["message"]

    def test_a_torch_without_cuda(self):
        self.assertIn("built without CUDA", self.refusal(cuda=None))

    def test_no_cuda_device(self):
        self.assertIn("no CUDA device", self.refusal(available=False))

    def test_memory_already_allocated(self):
        message = self.refusal(allocated=4096)
        self.assertIn("already allocated 4096 bytes", message)
        self.assertIn("before the first CUDA tensor", message)

    def test_no_library(self):
        message = self.refusal()
        self.assertIn("libcuswap.so not found", message)
        self.assertIn("CUSWAP_LIBRARY", message)

    def test_a_budget_the_loaded_library_did_not_start_with(self):
        got = run("""
            import cuswap.torch
            report({"enable": attempt(lambda: cuswap.torch.enable(budget="12GiB")),
                    "calls": calls, "conf": os.environ["CUSWAP_CONF"]})
        """, support.shim_env(cuswap_conf="budget:64MiB"), torch="fake")
        self.assertEqual(got["enable"].get("error"), "RuntimeError", got)
        self.assertIn("already loaded", got["enable"]["message"])
        self.assertIn("CUSWAP_CONF=budget:12GiB", got["enable"]["message"])
        self.assertEqual(got["calls"], [])
        self.assertEqual(got["conf"], "budget:64MiB")


class EnableUses(unittest.TestCase):
    def check_used_or_refused_as_too_old(self, got, path, conf):
        if got["exports"]:
            self.assertEqual(got["enable"].get("ok"), "CUDAPluggableAllocator", got)
            self.assertEqual(got["calls"], [
                ["CUDAPluggableAllocator", path, "cuswap_torch_alloc", "cuswap_torch_free", conf],
                ["change_current_allocator", "CUDAPluggableAllocator"]])
            self.assertTrue(got["same_allocator"])
        else:
            self.assertEqual(got["enable"].get("error"), "RuntimeError", got)
            self.assertIn("does not export cuswap_torch_alloc and cuswap_torch_free",
                          got["enable"]["message"])
            self.assertIn("rebuild or reinstall cuswap", got["enable"]["message"])
            self.assertEqual(got["calls"], [])

    def test_the_preloaded_library(self):
        got = run("""
            import cuswap.torch
            result = attempt(lambda: cuswap.torch.enable(budget="64MiB"))
            same = result.get("ok") and cuswap.torch.allocator() is cuswap.torch.allocator()
            report({"enable": result, "calls": calls, "exports": exports(),
                    "same_allocator": bool(same)})
        """, support.shim_env(cuswap_conf="stats:true,budget:64MiB"), torch="fake")
        self.check_used_or_refused_as_too_old(got, support.shim(), "stats:true,budget:64MiB")
        self.assertNotIn("warnings", got["enable"], "preloaded, nothing to warn about")

    def test_cuswap_library_with_a_budget_written_into_cuswap_conf(self):
        # The shim's static TLS needs room that glibc gives dlopen only when asked.
        env = no_cuswap_env()
        env.update(CUSWAP_LIBRARY=support.shim(), CUSWAP_CONF="stats:true,budget:1GiB",
                   GLIBC_TUNABLES="glibc.rtld.optional_static_tls=16777216")
        got = run("""
            import cuswap, cuswap.torch
            cuswap.iteration()  # not loaded yet: nothing, and nothing found
            result = attempt(lambda: cuswap.torch.enable(budget=12 << 30))
            same = result.get("ok") and cuswap.torch.allocator() is cuswap.torch.allocator()
            report({"enable": result, "calls": calls, "exports": exports(state["library"]),
                    "same_allocator": bool(same), "conf": os.environ["CUSWAP_CONF"],
                    "version": cuswap.version()})
        """, env, torch="fake", library=support.shim())
        conf = f"stats:true,budget:{12 << 30}"
        self.assertEqual(got["conf"], conf)
        if got["exports"]:  # the package reaches the library PyTorch was given
            self.assertEqual(got["version"], support.project_version())
            # Loaded only here, the shim swaps nothing: enable() says so.
            self.assertEqual(len(got["enable"].get("warnings", [])), 1, got)
            self.assertIn("not preloaded", got["enable"]["warnings"][0])
            self.assertIn("cuswap run --torch-pluggable", got["enable"]["warnings"][0])
        self.check_used_or_refused_as_too_old(got, support.shim(), conf)

    def test_torch_refusing_the_change_is_one_line_saying_when_to_call(self):
        got = run("""
            import cuswap.torch
            report({"enable": attempt(cuswap.torch.enable), "calls": calls,
                    "exports": exports()})
        """, support.shim_env(), torch="fake", refuse=True)
        if got["exports"]:
            self.assertEqual(got["enable"].get("error"), "RuntimeError", got)
            message = got["enable"]["message"]
            self.assertIn("PyTorch refused to change its allocator", message)
            self.assertIn("Can't swap an already initialized allocator", message)
            self.assertIn("call enable() before CUDA is first used", message)
        else:
            self.assertIn("does not export", got["enable"]["message"])


if __name__ == "__main__":
    unittest.main()
