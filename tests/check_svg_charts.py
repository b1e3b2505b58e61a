#!/usr/bin/env python3
"""Writes every SVG chart `gpen` can write, renders each with rsvg-convert and checks what a reader
sees: the file is valid SVG (it renders, at the size it declares), every label is whole inside the
canvas (rendered again on a larger canvas with the chart in the middle, nothing but white may land
outside the chart's own area), and the byte axes' ticks are round ("0", "0.5 MiB", "4 MiB",
"20 MiB", not "976.6 KiB"). rsvg-convert comes from Debian's librsvg2-bin (scripts/setup.sh installs it); the
test fails without it.

Usage: tests/check_svg_charts.py GPEN WORKDIR
"""
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

CHARTS = {
    "arena_per_resolution": ["plan", "--size", "512", "--plot"],
    "arena_per_resolution_all_strategies": ["plan", "--size", "512", "--strategy", "all", "--precision", "fp16",
                                            "--plot"],
    "arena_per_band_height": ["plan", "--precision", "fp16", "--plot-bands"],
    "lifetimes_gpen256": ["plan", "--size", "256", "--channel-multiplier", "1", "--narrow", "0.5",
                          "--plot-lifetimes"],
    "lifetimes_gpen16": ["plan", "--size", "16", "--plot-lifetimes"],
}
MARGIN = 40  # px of room around the chart in the second rendering: any overflow starts at the edge
TICK = re.compile(r"^(0|([0-9]+(\.[0-9]+)?) (B|KiB|MiB|GiB|TiB))$")
UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
ROOT = re.compile(r"<svg ([^>]*?)width='([0-9.]+)' height='([0-9.]+)'([^>]*)>")
TEXT = re.compile(r"<text class='([a-z]+)'[^>]*>([^<]*)</text>")


def read_png(path):
    """(width, height, rows of RGBA bytes) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    w, h, depth, color, _, _, interlace = ihdr
    assert depth == 8 and color in (2, 6) and interlace == 0, f"{path}: PNG format {ihdr} not handled"
    bpp = 4 if color == 6 else 3
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
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
        prev = line
        rows.append(line if bpp == 4 else bytearray(b"".join(bytes(line[i:i + 3]) + b"\xff"
                                                             for i in range(0, stride, 3))))
    return w, h, rows


def blank(px):
    return px[3] == 0 or px[:3] == b"\xff\xff\xff"


def render(svg_path, png_path):
    r = subprocess.run(["rsvg-convert", "-o", png_path, svg_path], capture_output=True, text=True)
    assert r.returncode == 0, f"{svg_path}: rsvg-convert failed: {r.stderr.strip()}"
    return read_png(png_path)


def check_ticks(ticks):
    """Why the byte ticks are not round, or "". A linear axis (from "0") steps by 1, 2 or 5 x 10^d of
    one binary unit, the same step all along; a log axis has a power of two bytes at every tick."""
    values, units = [], set()
    for t in ticks:
        m = TICK.match(t)
        if not m:
            return f"'{t}' is not a number and a binary unit"
        if m.group(1) != "0":
            values.append(float(m.group(2)) * UNITS[m.group(4)])
            units.add(m.group(4))
        else:
            values.append(0.0)
    if values[0] == 0:
        unit = UNITS[max(units, key=lambda u: UNITS[u])]
        step = (values[1] - values[0]) / unit
        mant = step / 10 ** math.floor(math.log10(step) + 1e-9)
        if not any(abs(mant - m) < 1e-6 for m in (1, 2, 5)):
            return f"a step of {step:g} units, not 1, 2 or 5 x 10^d"
        if any(abs(v - k * step * unit) > 1e-6 * unit for k, v in enumerate(values)):
            return "unevenly spaced"
    elif any(v < 1 or abs(math.log2(v) - round(math.log2(v))) > 1e-9 for v in values):
        return "a log axis tick that is not a power of two bytes"
    return ""


def check(name, svg_path, work):
    svg = open(svg_path, encoding="utf-8").read()
    m = ROOT.search(svg)
    assert m, f"{svg_path}: no <svg width=... height=...> root"
    w, h = float(m.group(2)), float(m.group(3))
    pw, ph, _ = render(svg_path, os.path.join(work, name + ".png"))
    assert (pw, ph) == (round(w), round(h)) or (pw, ph) == (int(w + 0.999), int(h + 0.999)), \
        f"{svg_path}: rendered {pw}x{ph}, declares {w}x{h}"

    # The same drawing on a canvas MARGIN larger on every side: what the chart draws past its own
    # edges (a clipped legend, a tick label left of 0) lands in that margin.
    body = svg[m.end():svg.rindex("</svg>")]
    big = (f"<svg {m.group(1)}width='{w + 2 * MARGIN}' height='{h + 2 * MARGIN}'{m.group(4)}>"
           f"<g transform='translate({MARGIN},{MARGIN})'>{body}</g></svg>")
    big_path = os.path.join(work, name + "_margin.svg")
    open(big_path, "w", encoding="utf-8").write(big)
    bw, bh, rows = render(big_path, os.path.join(work, name + "_margin.png"))
    x_lo, x_hi, y_lo, y_hi = MARGIN - 1, MARGIN + w + 1, MARGIN - 1, MARGIN + h + 1
    outside = []
    for y in range(bh):
        row = rows[y]
        for x in range(bw):
            if y_lo <= y < y_hi and x_lo <= x < x_hi:
                continue
            if not blank(row[4 * x:4 * x + 4]):
                outside.append((x - MARGIN, y - MARGIN))
                break
    assert not outside, (f"{svg_path}: drawn outside its {w:g}x{h:g} canvas, e.g. at {outside[:3]} "
                         "(a label cut off at the edge)")

    texts = TEXT.findall(svg)
    ticks = [t for cls, t in texts if cls == "ytick"]
    assert len(ticks) >= 2, f"{svg_path}: {len(ticks)} y tick labels"
    assert not check_ticks(ticks), f"{svg_path}: y ticks that are not round: {ticks} ({check_ticks(ticks)})"
    return f"{name}: {w:g}x{h:g}, {len(texts)} labels inside, y ticks {', '.join(ticks)}"


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    gpen, work = sys.argv[1], sys.argv[2]
    if not shutil.which("rsvg-convert"):
        print("check_svg_charts: rsvg-convert is missing (Debian package librsvg2-bin; scripts/setup.sh "
              "installs it)", file=sys.stderr)
        return 1
    os.makedirs(work, exist_ok=True)
    failed = 0
    for name, args in CHARTS.items():
        svg_path = os.path.join(work, name + ".svg")
        if os.path.exists(svg_path):
            os.remove(svg_path)
        r = subprocess.run([gpen] + args + [svg_path], capture_output=True, text=True)
        try:
            assert r.returncode == 0, f"gpen {' '.join(args)} {svg_path}: exit {r.returncode}: {r.stderr.strip()}"
            print(check(name, svg_path, work))
        except AssertionError as e:
            print(f"FAIL {e}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
