"""scripts/check_sizes.py: the production code keeps its size limits (files
of at most 600 lines, functions of at most 100), and the check finds the
functions a reader would, whatever braces strings and comments hold."""

import importlib.util
import os
import tempfile
import unittest

import support

_spec = importlib.util.spec_from_file_location(
    "check_sizes", os.path.join(support.SOURCE_DIR, "scripts", "check_sizes.py"))
sizes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sizes)


def body(lines):
    return "".join(f"  x += {i};\n" for i in range(lines))


class Functions(unittest.TestCase):
    def test_definitions_of_each_form_are_found_with_their_lengths(self):
        text = (
            "namespace cuswap {\n"                                   # 1
            "namespace {\n"                                          # 2
            "int helper(int a) {\n" + body(3) + "}\n"                # 3-7
            "}  // namespace\n"                                      # 8
            "Widget::Widget(int a) noexcept\n"                      # 9
            "    : a_(a), b_{a} {\n" + body(2) + "}\n"               # 10-13
            "auto Widget::size() const -> size_t {\n"                # 14
            "  auto f = [&](int y) { return y; };\n"                 # 15
            "  if (a_) {\n    return f(1);\n  }\n"                   # 16-18
            "  return 0;\n}\n"                                       # 19-20
            "class Inline {\n public:\n"                             # 21-22
            "  int get() const { return v_; }\n"                     # 23
            "  std::vector<int> v_ = {1, 2};\n"                      # 24
            "};\n"                                                   # 25
            "}  // namespace cuswap\n")
        found = sizes.functions(text)
        self.assertEqual(found, [(3, "helper", 5), (9, "Widget::Widget", 5),
                                 (14, "Widget::size", 7), (23, "get", 1)])

    def test_braces_in_strings_and_comments_are_not_counted(self):
        text = ('void f() {\n'
                '  const char* s = "}}}{";  // }\n'
                '  /* } } */ char c = \'}\';\n'
                '  auto raw = R"x(}})x";\n'
                '  int n = 1\'000;\n'
                '}\n'
                'void g() {\n}\n')
        self.assertEqual(sizes.functions(text), [(1, "f", 6), (7, "g", 2)])

    def test_control_blocks_and_initialisers_at_file_level_are_not_functions(self):
        text = ("constexpr int kTable[] = {\n  1,\n  2,\n};\n"
                "struct S { int a; };\n"
                "extern \"C\" {\nint exported(void) {\n  return 0;\n}\n}\n")
        self.assertEqual(sizes.functions(text), [(7, "exported", 3)])


class Report(unittest.TestCase):
    def test_the_source_tree_keeps_the_limits(self):
        self.assertEqual(sizes.report(support.SOURCE_DIR), [])

    def test_a_long_function_and_a_long_file_are_reported(self):
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "policy"))
            with open(os.path.join(root, "policy", "long.cpp"), "w") as f:
                f.write("int ok() {\n" + body(98) + "}\n")          # 100 lines: within
                f.write("int too_long() {\n" + body(99) + "}\n")    # 101 lines
                f.write("\n" * 400)
            os.makedirs(os.path.join(root, "tests"))
            with open(os.path.join(root, "tests", "ignored.cpp"), "w") as f:
                f.write("int t() {\n" + body(200) + "}\n")         # tests are not production
            found = sizes.report(root)
        self.assertEqual(found, [
            "policy/long.cpp: 601 lines (at most 600 a file)",
            "policy/long.cpp:101: too_long: 101 lines (at most 100 a function)",
        ])


if __name__ == "__main__":
    unittest.main()
