#!/usr/bin/env python3
"""Checks the pages `cuswap report` writes (docs/report.md).

  check_report.py CUSWAP DATA_DIR OUT_DIR page      # parse, self-contained, series, escaping
  check_report.py CUSWAP DATA_DIR OUT_DIR chromium  # render in headless Chromium

`page`: for real captures, the page parses as strict XML, loads nothing from
anywhere, and holds the peak, the budget and every planner that
`cuswap compare --json` reports for the same trace and budget. A real trace
whose names have been replaced by markup (`<script>`, `</svg>`) draws them
as text: the page has no element the trace did not put there.

`chromium`: the page renders in headless Chromium with no script error, the
script ran to its end, and the screenshot is not blank. Exits non-zero with
one line per failure.
"""
import gzip
import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

FAILURES = []
HOSTILE = "<script>alert('cuswap')</script></svg></table><b>&amp;"


def fail(message):
    FAILURES.append(message)
    print(f"FAIL: {message}")


def human_bytes(n):
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    value, unit = float(n), 0
    while value >= 1024 and unit + 1 < len(units):
        value /= 1024
        unit += 1
    return f"{n} B" if unit == 0 else f"{value:.1f} {units[unit]}"


def report(cuswap, args, out):
    run = subprocess.run([cuswap, "report", *args, "-o", str(out)], capture_output=True, text=True)
    if run.returncode != 0:
        fail(f"cuswap report {' '.join(args)}: exit {run.returncode}: {run.stderr.strip()}")
        return None
    return out.read_text(encoding="utf-8")


def parse(name, text):
    try:
        return ET.fromstring(text.split("\n", 1)[1])  # after <!DOCTYPE html>
    except ET.ParseError as e:
        fail(f"{name}: not well-formed: {e}")
        return None


def self_contained(name, text, root):
    if re.search(r"https?://", text):
        fail(f"{name}: names a network address")
    for el in root.iter():
        tag = el.tag.split("}")[-1]
        if tag in ("link", "img", "iframe", "object", "embed", "image", "use"):
            fail(f"{name}: has a <{tag}> element")
        if "src" in el.attrib:
            fail(f"{name}: <{tag}> loads {el.attrib['src']}")
        href = el.attrib.get("href")
        if href is not None and not href.startswith("#"):
            fail(f"{name}: <{tag}> links to {href}")
    if "@import" in text or "url(" in text:
        fail(f"{name}: its style loads something")


def checked_page(cuswap, args, page):
    """The report of `args` in `page`, parsed and checked to be self-contained; None on failure."""
    text = report(cuswap, args, page)
    if text is None:
        return None, None
    root = parse(page.name, text)
    if root is None:
        return None, None
    self_contained(page.name, text, root)
    return text, root


def texts(root):
    return [" ".join(el.itertext()) for el in root.iter()]


def check_page(cuswap, data, out):
    traces = [
        data / "gpu" / "torch-resnet50-v100.trace.json.gz",
        data / "gpu" / "tf2-bert-v100-multiworker.xplane.pb.gz",
        data / "tf1" / "lstm-l1-t32-b2.timeline.json.gz",
    ]
    for trace in traces:
        page = out / (trace.name + ".html")
        text, root = checked_page(cuswap, [str(trace), "--budget", "50%", "--link", "pcie4"], page)
        if root is None:
            continue
        compare = subprocess.run([cuswap, "compare", str(trace), "--budget", "50%", "--link",
                                  "pcie4", "--json"], capture_output=True, text=True, check=True)
        expected = json.loads(compare.stdout)
        all_text = "\n".join(texts(root))
        for want in (f"peak {human_bytes(expected['infinite_memory_peak_bytes'])}",
                     f"budget {human_bytes(expected['budget_bytes'])}"):
            if want not in all_text:
                fail(f"{page.name}: no \"{want}\"")
        rows = root.findall(".//section[@id='planners']//tbody/tr")
        got = [r.findtext("td") for r in rows]
        names = [p["planner"] for p in expected["planners"]]
        if got != names:
            fail(f"{page.name}: planners {got}, expected {names}")
        for row, p in zip(rows, expected["planners"]):
            cells = [td.text for td in row.findall("td")]
            if cells[-1] != ("yes" if p["fits"] else "no"):
                fail(f"{page.name}: {p['planner']} fits {cells[-1]}, expected {p['fits']}")
        for section in ("memory", "lanes", "planners", "tensors"):
            if root.find(f".//section[@id='{section}']") is None:
                fail(f"{page.name}: no section {section}")
        if len(root.findall(".//{*}svg")) + len(root.findall(".//svg")) < 4:
            fail(f"{page.name}: fewer than four charts")
        print(f"ok: {page.name} ({len(text)} bytes)")

    # Markup in every name of a real trace is drawn as text.
    for source in (data / "tf1" / "lstm-l1-t32-b2.timeline.json.gz",
                   data / "torch" / "resnet50-32px-b2.trace.json.gz"):
        doc = json.loads(gzip.decompress(source.read_bytes()))
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        for e in events:
            if "name" in e and e.get("ph") in ("X", "B", "E", "i", "I", "s"):
                e["name"] = HOSTILE + e["name"]
            args = e.get("args")
            if isinstance(args, dict):
                for key in ("name", "op", "tensor_name", "Device Type", "allocator_name"):
                    if isinstance(args.get(key), str):
                        args[key] = HOSTILE + args[key]
        hostile = out / ("hostile-" + source.name.replace(".gz", ""))
        hostile.write_text(json.dumps(doc))
        page = out / (hostile.name + ".html")
        _, root = checked_page(cuswap, [str(hostile), "--budget", "50%"], page)
        if root is None:
            continue
        scripts = root.findall(".//script")
        if len(scripts) != 2:
            fail(f"{page.name}: {len(scripts)} script elements, expected cuswap's 2")
        if any(el.text == "&" for el in root.iter("b")):
            fail(f"{page.name}: a name became a <b> element")
        shown = sum(t.count(HOSTILE) for t in texts(root))
        if shown == 0:
            fail(f"{page.name}: the names are not shown as text")
        for el in root.iter():
            if "<script" in "".join(el.attrib.keys()):
                fail(f"{page.name}: a name became an attribute")
        print(f"ok: {page.name}: the names show as text {shown} times, no markup from the trace")


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big")
            depth, color = body[8], body[9]
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"unexpected PNG depth {depth} colour type {color}")
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def check_chromium(cuswap, data, out):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        fail("chromium is not installed (scripts/setup.sh installs it)")
        return
    page = out / "chromium.html"
    if report(cuswap, [str(data / "gpu" / "torch-resnet50-v100.trace.json.gz"), "--budget",
                       "50%"], page) is None:
        return
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--window-size=1200,1600", f"--user-data-dir={out / 'chromium-profile'}"]
    dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120)
    head = dom.stdout[:2000]
    if 'data-ready="1"' not in head:
        fail(f"the page's script did not run to its end: {head[:200]!r}")
    if "data-error" in head:
        error = re.search(r'data-error="[^"]*"', head)
        fail(f"the page raised a script error: {error.group(0) if error else head[:200]}")
    shot = out / "chromium.png"
    subprocess.run(flags + [f"--screenshot={shot}", page.as_uri()], capture_output=True,
                   timeout=120)
    if not shot.exists():
        fail("chromium wrote no screenshot")
        return
    width, height, channels, rows = png_pixels(shot)
    colours, inked, total = set(), 0, 0
    for row in rows[::4]:
        for x in range(0, width * channels, channels * 4):
            px = row[x:x + 3]
            colours.add(px)
            inked += px != b"\xff\xff\xff"
            total += 1
    share = inked / max(1, total)
    print(f"screenshot {width}x{height}: {len(colours)} colours, {100 * share:.1f}% not white")
    if len(colours) < 20 or share < 0.05:
        fail(f"the screenshot looks blank: {len(colours)} colours, {100 * share:.1f}% not white")


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in ("page", "chromium"):
        sys.exit(__doc__)
    cuswap, data, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    out.mkdir(parents=True, exist_ok=True)
    (check_page if sys.argv[4] == "page" else check_chromium)(cuswap, data, out)
    if FAILURES:
        sys.exit(f"{len(FAILURES)} failures")
    print("all checks passed")


if __name__ == "__main__":
    main()
