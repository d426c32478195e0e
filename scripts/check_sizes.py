#!/usr/bin/env python3
"""Size limits on the production code: no file over 600 lines and no function
over 100 lines (docs/architecture.md, "Sizes"). Prints each file and function
over its limit (path:line, name, lines) and exits 1 if there is any.

A function is a braced body whose head ends in a parameter list (with its
qualifiers, trailing return type or constructor initialisers); its lines run
from the head's first line to the closing brace. Lambdas and local classes
count towards the function that holds them. Comments, strings and character
literals are blanked before braces are matched, so a brace in them is never
counted.

Usage: scripts/check_sizes.py [--all] [ROOT]   (default: the checkout this
script is in; --all lists every function over 60 lines as well, as a guide)
"""
import os
import re
import sys

FOLDERS = ["common", "allocator", "tracer", "policy", "runtime", "hooks", "cli", "include", "bench"]
SUFFIXES = (".h", ".cpp", ".cu", ".cc")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100

CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try", "return", "sizeof"}
CONTAINER = re.compile(r"(^|\s)(namespace|class|struct|union|enum)\b|^extern\s+\"C\"|^template\s*<")
QUALIFIERS = re.compile(r"\)\s*(const|noexcept(\s*\([^)]*\))?|override|final|mutable|&|&&|\s)*"
                        r"(->\s*[\w:<>,\s*&]+)?\s*$")
# A head that has reached a member initialiser written with braces: `b_`
# in `) : a_(x), b_{y}`.
MEMBER_INIT = re.compile(r"\)\s*(noexcept\s*)?:\s*([\w:]+\s*(\([^()]*\)|\{[^{}]*\})\s*,\s*)*[\w:]+\s*$")


def blank(text):
    """`text` with comments, string and character literals replaced by spaces
    (newlines kept, so line numbers still hold)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _head_kind(head):
    """What a `{` opens, from the text before it since the last `;`, `{` or
    `}`: 'container' (namespace, class and the like: look inside),
    'function', or 'other' (an initialiser, a control block at file level)."""
    head = " ".join(line for line in head.splitlines() if not line.lstrip().startswith("#"))
    head = re.sub(r"\s+", " ", head).strip()
    if not head:
        return "other"
    if CONTAINER.search(head) and "(" not in head.split("{")[0].split(":")[0]:
        return "container"
    first = re.match(r"[A-Za-z_]\w*", head)
    if first and first.group(0) in CONTROL:
        return "other"
    if head.endswith("=") or head.endswith(","):
        return "other"
    # A constructor's initialiser list: drop it back to the parameter list.
    m = re.search(r"\)\s*(noexcept\s*)?:\s*[\w:]+\s*[({]", head)
    if m:
        head = head[:m.start() + 1]
    return "function" if QUALIFIERS.search(head) else "other"


def _matching(src, i):
    """Where the brace opened at `i` closes (the end of `src` if it never does)."""
    depth = 0
    for j in range(i, len(src)):
        depth += {"{": 1, "}": -1}.get(src[j], 0)
        if depth == 0:
            return j
    return len(src) - 1


def _name(head):
    head = re.sub(r"\s+", " ", head)
    paren = head.find("(")
    m = re.search(r"([~\w:]+(?:operator\s*\S+?)?)\s*$", head[:paren] if paren >= 0 else head)
    return m.group(1) if m else "?"


def _is_function(kind):
    """An open function body is kept as (kind, start, head); other braces as a word."""
    return isinstance(kind, tuple)


def functions(text):
    """(first line, name, lines) of every function body in `text`."""
    src = blank(text)
    found = []
    depth_kinds = []        # the kind of each open brace
    head_start = 0          # where the text before the next `{` began
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "{" and not any(_is_function(k) for k in depth_kinds) and \
                MEMBER_INIT.search(re.sub(r"\s+", " ", src[head_start:i])):
            # `b_{x}` in a constructor's initialisers: still the head.
            i = _matching(src, i) + 1
            continue
        if c in ";}" or (c == "{"):
            inside_function = any(_is_function(k) for k in depth_kinds)
            if c == "{":
                kind = "nested" if inside_function else _head_kind(src[head_start:i])
                if kind == "other" and not inside_function:
                    kind = "skip"
                if kind == "function":
                    first = head_start + len(src[head_start:i]) - len(src[head_start:i].lstrip())
                    depth_kinds.append(("function", first, src[head_start:i]))
                else:
                    depth_kinds.append(kind)
            elif c == "}":
                if depth_kinds:
                    top = depth_kinds.pop()
                    if _is_function(top):
                        _, first, head = top
                        start_line = src.count("\n", 0, first) + 1
                        end_line = src.count("\n", 0, i) + 1
                        found.append((start_line, _name(head), end_line - start_line + 1))
            head_start = i + 1
        elif c == ":" and not any(_is_function(k) for k in depth_kinds):
            # An access label (`public:`) ends a head too.
            before = src[head_start:i].strip()
            if before in ("public", "private", "protected") or before.endswith(("public", "private", "protected")):
                head_start = i + 1
        i += 1
    return found


def report(root, guide=False):
    over = []
    for top in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SUFFIXES):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root)
                with open(os.path.join(root, path), errors="replace") as f:
                    text = f.read()
                lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
                if lines > MAX_FILE_LINES:
                    over.append(f"{path}: {lines} lines (at most {MAX_FILE_LINES} a file)")
                for line, fn, length in functions(text):
                    limit = 60 if guide else MAX_FUNCTION_LINES
                    if length > limit:
                        over.append(f"{path}:{line}: {fn}: {length} lines (at most {MAX_FUNCTION_LINES} a function)")
    return sorted(over)


def main(argv):
    guide = "--all" in argv
    args = [a for a in argv if a != "--all"]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    over = report(root, guide)
    for line in over:
        print(line)
    if not guide and over:
        print(f"check_sizes: {len(over)} over the limits", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
