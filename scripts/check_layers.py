#!/usr/bin/env python3
"""Fails when a project include points the wrong way between layers (docs/architecture.md), when
the CMake libraries of the layers (CMakeLists.txt, gpen_layer) link otherwise than the includes
allow and need, when an installed header includes one that is not installed, or when a source
file of the engine, kernels, converter, weights or apps passes MAX_LINES lines without saying why
at its top (a line "Long on purpose: ..." among its first 12 lines), or when a test case's name
holds a ';' (doctest_discover_tests splits names there, so ctest would run a filter matching no
case and pass it: the test would silently never run).

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
    # `gpen fetch`: downloads (libcurl, loaded when needed) and sha256 (OpenSSL) live here alone.
    "converter/fetch": ["engine/core", "weights", "converter"],
    "engine/models": ["engine/core", "kernels", "weights", "engine/graph", "engine/plan", "engine/runtime"],
    "engine/photo": ["engine/core", "kernels", "weights", "engine/graph", "engine/plan", "engine/runtime",
                     "engine/models"],
    # Video files through FFmpeg's libraries, above the photo job; no layer lists it, so only the
    # folders above every layer (the CLI, the Python extension, the tests) may include it.
    "engine/video": ["engine/core", "kernels", "weights", "engine/graph", "engine/plan", "engine/runtime",
                     "engine/models", "engine/photo"],
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


# gpen_layer(NAME [APART] FOLDERS f... [USES lib...]) in CMakeLists.txt (or a layer folder's own
# CMakeLists.txt): one static library per layer.
GPEN_LAYER = re.compile(r"^gpen_layer\(([^)]*)\)", re.M)


def cmake_layers(root):
    """{library: (folders, uses)} from the gpen_layer lines of the CMakeLists.txt files."""
    libs = {}
    files = [os.path.join(root, "CMakeLists.txt")]
    for top in ("engine", "kernels", "weights", "converter"):
        for d, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(d, n) for n in names if n == "CMakeLists.txt"]
    text = "\n".join(open(f, encoding="utf-8").read() for f in files)
    for m in GPEN_LAYER.finditer(text):
        words = m.group(1).split()
        section, folders, uses = None, [], []
        for w in words[1:]:
            if w == "APART":
                continue
            if w in ("FOLDERS", "USES"):
                section = w
            elif section == "FOLDERS":
                folders.append(w)
            elif section == "USES":
                uses.append(w)
        libs[words[0]] = (folders, uses)
    return libs


# The headers `cmake --install` installs (cmake/GpenEngineInstall.cmake).
PUBLIC_HEADERS = re.compile(r"set\(GPEN_PUBLIC_HEADERS\s([^)]*)\)")


def check_public_headers(root, bad):
    """The installed headers include no project header that is not installed with them."""
    path = os.path.join(root, "cmake", "GpenEngineInstall.cmake")
    if not os.path.exists(path):
        return
    m = PUBLIC_HEADERS.search(open(path, encoding="utf-8").read())
    public = set(m.group(1).split()) if m else set()
    for h in sorted(public):
        if not os.path.exists(os.path.join(root, h)):
            bad.append(f"cmake/GpenEngineInstall.cmake: public header {h} does not exist")
            continue
        for inc in INCLUDE.findall(open(os.path.join(root, h), encoding="utf-8").read()):
            if os.path.exists(os.path.join(root, inc)) and inc not in public:
                bad.append(f"{h} is public (cmake/GpenEngineInstall.cmake) but includes {inc}, which is not")


def check_link_graph(root, bad):
    """Each layer's library links the libraries of the layers its sources include (so a program
    linking one layer links), and no library of a layer its layer may not include."""
    libs = cmake_layers(root)
    if not libs:
        bad.append("CMakeLists.txt: no gpen_layer(...) libraries found")
        return
    lib_of, folders_of = {}, {}
    for lib, (folders, _) in libs.items():
        for f in folders:
            layer = layer_of(f)
            if layer is None or layer in TOP:
                bad.append(f"CMakeLists.txt: {lib} holds {f}, which belongs to no layer")
                continue
            if lib_of.setdefault(layer, lib) != lib:
                bad.append(f"CMakeLists.txt: layer {layer} is split between {lib_of[layer]} and {lib}")
            folders_of[f] = lib
    for layer in ALLOWED:
        if layer not in lib_of:
            bad.append(f"CMakeLists.txt: layer {layer} has no gpen_layer library")
    # Every folder with sources is some library's (its sources are globbed per folder).
    for top in ("engine", "kernels", "weights", "converter"):
        for d, _, files in os.walk(os.path.join(root, top)):
            rel = os.path.relpath(d, root)
            if any(f.endswith((".cpp", ".cu")) for f in files) and rel not in folders_of:
                bad.append(f"{rel}: its sources are in no library (add the folder to a gpen_layer in CMakeLists.txt)")
    for lib, (folders, uses) in libs.items():
        own = {layer_of(f) for f in folders}
        allowed = {lib_of.get(a) for layer in own for a in ALLOWED.get(layer, [])} - {lib, None}
        needed = {}
        for f in folders:
            d = os.path.join(root, f)
            for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if not name.endswith(SOURCE_EXT):
                    continue
                text = open(os.path.join(d, name), encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    dst = layer_of(m.group(1))
                    if dst in lib_of and lib_of[dst] != lib and os.path.exists(os.path.join(root, m.group(1))):
                        needed.setdefault(lib_of[dst], f"{f}/{name}")
        for u in uses:
            if u not in allowed:
                bad.append(f"CMakeLists.txt: {lib} uses {u}, which its layer may not include")
        for n, where in sorted(needed.items()):
            if n not in uses:
                bad.append(f"CMakeLists.txt: {lib} does not use {n}, whose headers {where} includes")


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
    check_link_graph(root, bad)
    check_public_headers(root, bad)
    for b in bad:
        print("check_layers: " + b)
    print(f"check_layers: {checked} files, {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
