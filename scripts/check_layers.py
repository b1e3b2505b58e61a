#!/usr/bin/env python3
"""Fails when a project include points the wrong way between layers (docs/architecture.md), or
when a source file of the engine, kernels, converter, weights or apps passes MAX_LINES lines
without saying why at its top (a line "Long on purpose: ..." among its first 12 lines), or when a
test case's name holds a ';' (doctest_discover_tests splits names there, so ctest would run a
filter matching no case and pass it: the test would silently never run).

Every source folder belongs to one layer, and a layer may include only itself and the layers
listed for it. The list is the whole rule: a new folder must be added here, so the layering
stays a decision, not an accident. Usage: scripts/check_layers.py [ROOT]; exit 1 on a violation.
"""
import os
import re
import sys

# layer -> layers it may include (besides itself). Order: lowest first.
ALLOWED = {
    "engine/core": [],
    "kernels": ["engine/core"],
    "weights": ["engine/core"],
    "engine/graph": ["engine/core", "kernels"],
    "engine/plan": ["engine/core", "kernels", "engine/graph"],
    "engine/runtime": ["engine/core", "kernels", "weights", "engine/graph", "engine/plan"],
    "converter": ["engine/core", "weights"],
    "engine/models": ["engine/core", "kernels", "weights", "engine/graph", "engine/plan", "engine/runtime"],
    "engine/photo": ["engine/core", "kernels", "weights", "engine/graph", "engine/plan", "engine/runtime",
                     "engine/models"],
    # What `gpen plan`, `gpen info` and `gpen convert` report, shared by the CLI and the Python package.
    "reports": ["engine/core", "kernels", "weights", "engine/graph", "engine/plan", "engine/runtime",
                "engine/models", "engine/photo", "converter"],
}
# Folders above every layer: they may include anything of the project.
TOP = ["apps", "bench", "tests", "python"]
# The only includes across the rule, each with its reason.
EXCEPTIONS = {
    ("kernels/cuda/compat.h", "tests/cuda_emu/cuda_emu.h"):
        "in emulated builds the CUDA emulator stands in for the CUDA runtime headers",
}
MAX_LINES = 400
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TEST_CASE_WITH_SEMICOLON = re.compile(r'\b(?:TEST_CASE|SUBCASE)\s*\(\s*"([^"]*;[^"]*)"')


def layer_of(path):
    """The layer a repository-relative path belongs to, or None outside the layered tree."""
    best = None
    for layer in list(ALLOWED) + TOP:
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    bad, checked = [], 0
    for top in ("engine", "kernels", "weights", "converter", "reports", "apps"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(d, f), root)
                src = layer_of(rel)
                if src is None:
                    bad.append(f"{rel}: folder belongs to no layer (add it to scripts/check_layers.py)")
                    continue
                checked += 1
                text = open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
                lines = text.count("\n")
                if lines > MAX_LINES and "Long on purpose:" not in "\n".join(text.split("\n")[:12]):
                    bad.append(f"{rel}: {lines} lines (limit {MAX_LINES}) and no 'Long on purpose:' reason at its top")
                if src in TOP:
                    continue  # above every layer: may include anything
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    if not os.path.exists(os.path.join(root, inc)):
                        continue  # a system or generated header, or one relative to the file
                    dst = layer_of(inc)
                    if dst is None or dst == src or dst in ALLOWED[src] or (rel, inc) in EXCEPTIONS:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{rel}:{line}: includes {inc} ({dst}), which {src} may not depend on")
    for d, _, files in os.walk(os.path.join(root, "tests")):
        for f in files:
            if f.endswith(SOURCE_EXT):
                path = os.path.join(d, f)
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in TEST_CASE_WITH_SEMICOLON.finditer(text):
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{os.path.relpath(path, root)}:{line}: test name \"{m.group(1)}\" holds a ';', "
                               "which ctest splits (the case would never run)")
    for b in bad:
        print("check_layers: " + b)
    print(f"check_layers: {checked} files, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
