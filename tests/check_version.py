#!/usr/bin/env python3
"""ctest check_version: the one version (CMakeLists.txt's project(gpen_engine VERSION X)) is what
every place that shows a version says: `gpen --version`, the producer field of a .gpw that
`gpen convert` writes, the Python package's metadata (pyproject.toml's regex over CMakeLists.txt),
the CMake package's version file and the pkg-config file of this build, and the newest entry of
CHANGELOG.md. (The Python package's __version__ is checked against the CLI by tests/python, `gpen
serve`'s Server header by tests/serve/test_serve_api.py.)
Usage: check_version.py SOURCE_DIR BUILD_DIR VERSION"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import tomllib


def gpw_header(path):
    with open(path, "rb") as f:
        head = f.read(64)
        assert head[:4] == b"GPW1", path
        offset, length = struct.unpack_from("<QQ", head, 8)
        f.seek(offset)
        return json.loads(f.read(length))


def main():
    src, build, want = sys.argv[1:4]
    gpen = os.path.join(build, "gpen")
    found = {}
    found["gpen --version"] = subprocess.run([gpen, "--version"], check=True, capture_output=True,
                                             text=True).stdout.split()[1]
    with tempfile.TemporaryDirectory() as t:
        gpw = os.path.join(t, "s32.gpw")
        subprocess.run([gpen, "convert", os.path.join(src, "tests/fixtures/gpen/s32/checkpoint.pth"), "-o", gpw],
                       check=True, capture_output=True)
        found[".gpw producer"] = gpw_header(gpw)["producer"].removeprefix("gpen convert ")
    with open(os.path.join(src, "pyproject.toml"), "rb") as f:
        py = tomllib.load(f)
    assert "version" not in py["project"] and "version" in py["project"]["dynamic"], "pyproject.toml: a static version"
    meta = py["tool"]["scikit-build"]["metadata"]["version"]
    with open(os.path.join(src, meta["input"]), encoding="utf-8") as f:
        found["Python package (pyproject.toml)"] = re.search(meta["regex"], f.read(), re.M).group("value")
    with open(os.path.join(build, "GpenEngineConfigVersion.cmake"), encoding="utf-8") as f:
        found["CMake package"] = re.search(r'set\(PACKAGE_VERSION "([^"]+)"\)', f.read()).group(1)
    with open(os.path.join(build, "gpen-engine.pc"), encoding="utf-8") as f:
        found["pkg-config"] = re.search(r"^Version: (\S+)$", f.read(), re.M).group(1)
    with open(os.path.join(src, "CHANGELOG.md"), encoding="utf-8") as f:
        found["CHANGELOG.md (newest)"] = re.search(r"^## (\S+)", f.read(), re.M).group(1)
    bad = {k: v for k, v in found.items() if v != want}
    for k, v in found.items():
        print(f"check_version: {k}: {v}")
    if bad:
        print(f"check_version: FAILED: expected {want} (CMakeLists.txt) everywhere; differ: {bad}")
        return 1
    print(f"check_version: {len(found)} places say {want}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
