"""cuswap.library_path(): the loaded copy, $CUSWAP_LIBRARY, a build tree's or an install's, or none.

The layouts are made in temporary folders with empty files: library_path only
looks for files, it never loads one.
"""

import os
import shutil
import sys
import tempfile
import unittest

import support

sys.path.insert(0, support.PYTHON_DIR)
import cuswap  # noqa: E402  (after the path; loads no library)


def touch(path, executable=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n" if executable else "")
    if executable:
        os.chmod(path, 0o755)
    return path


class LibraryPath(unittest.TestCase):
    def setUp(self):
        self.assertFalse(cuswap.loaded(), "this test process must not have libcuswap.so loaded")
        self.saved = {k: os.environ.get(k) for k in ("PATH", "CUSWAP_LIBRARY")}
        os.environ.pop("CUSWAP_LIBRARY", None)
        self.tmp = tempfile.mkdtemp(prefix="cuswap-library-path-")
        self.empty_bin = os.path.join(self.tmp, "empty-bin")
        os.makedirs(self.empty_bin)
        os.environ["PATH"] = self.empty_bin

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(self.tmp)

    def install(self, libdir="lib"):
        """PREFIX/bin/cuswap and PREFIX/LIBDIR/libcuswap.so; PATH has PREFIX/bin."""
        prefix = os.path.join(self.tmp, "prefix")
        touch(os.path.join(prefix, "bin", "cuswap"), executable=True)
        library = touch(os.path.join(prefix, libdir, "libcuswap.so"))
        os.environ["PATH"] = os.path.join(prefix, "bin")
        return prefix, library

    def test_nothing_found_is_none_or_a_clear_error(self):
        self.assertIsNone(cuswap.library_path())
        with self.assertRaises(FileNotFoundError) as caught:
            cuswap.library_path(required=True)
        message = str(caught.exception)
        for words in ("libcuswap.so not found", "CUSWAP_LIBRARY", "no cuswap executable on PATH"):
            self.assertIn(words, message)

    def test_cuswap_library_is_taken_and_must_be_a_file(self):
        library = touch(os.path.join(self.tmp, "elsewhere", "libcuswap.so"))
        self.install()  # the variable wins over the install
        os.environ["CUSWAP_LIBRARY"] = library
        self.assertEqual(cuswap.library_path(), library)
        os.environ["CUSWAP_LIBRARY"] = os.path.join(self.tmp, "missing.so")
        with self.assertRaises(FileNotFoundError) as caught:
            cuswap.library_path()
        self.assertIn("$CUSWAP_LIBRARY", str(caught.exception))
        self.assertIn("missing.so", str(caught.exception))

    def test_an_empty_cuswap_library_counts_as_unset(self):
        os.environ["CUSWAP_LIBRARY"] = ""
        self.assertIsNone(cuswap.library_path())

    def test_an_install_prefix_lib(self):
        _, library = self.install("lib")
        self.assertEqual(cuswap.library_path(), library)

    def test_an_install_prefix_lib64_and_multiarch(self):
        for libdir in ("lib64", os.path.join("lib", "x86_64-linux-gnu")):
            with self.subTest(libdir=libdir):
                shutil.rmtree(os.path.join(self.tmp, "prefix"), ignore_errors=True)
                _, library = self.install(libdir)
                self.assertEqual(cuswap.library_path(), library)

    def test_a_build_tree(self):
        build = os.path.join(self.tmp, "build")
        touch(os.path.join(build, "cli", "cuswap"), executable=True)
        library = touch(os.path.join(build, "hooks", "libcuswap.so"))
        os.environ["PATH"] = os.path.join(build, "cli")
        self.assertEqual(cuswap.library_path(), library)

    def test_a_link_on_path_to_an_installed_cuswap(self):
        prefix, library = self.install()
        links = os.path.join(self.tmp, "links")
        os.makedirs(links)
        os.symlink(os.path.join(prefix, "bin", "cuswap"), os.path.join(links, "cuswap"))
        os.environ["PATH"] = links
        self.assertEqual(cuswap.library_path(), library)

    def test_an_install_without_the_library_names_where_it_looked(self):
        prefix, library = self.install()
        os.remove(library)
        self.assertIsNone(cuswap.library_path())
        with self.assertRaises(FileNotFoundError) as caught:
            cuswap.library_path(required=True)
        self.assertIn(os.path.join(prefix, "lib", "libcuswap.so"), str(caught.exception))
        self.assertIn(os.path.join(prefix, "bin", "cuswap"), str(caught.exception))


class LoadedFirst(unittest.TestCase):
    def test_the_loaded_copy_wins_over_cuswap_library(self):
        with tempfile.TemporaryDirectory() as tmp:
            other = touch(os.path.join(tmp, "libcuswap.so"))
            got = support.run_json("""
                import cuswap
                report(cuswap.library_path())
            """, support.shim_env(CUSWAP_LIBRARY=other))
        self.assertEqual(os.path.realpath(got), os.path.realpath(support.shim()))


if __name__ == "__main__":
    unittest.main()
