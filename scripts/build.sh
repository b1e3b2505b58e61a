#!/usr/bin/env bash
# Configures and builds Release into build/ (or $GPEN_BUILD_DIR) and leaves the CLI at build/gpen.
# Extra arguments go to cmake's configure step, e.g. -DGPEN_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GPEN_BUILD_DIR:-build}
# ccache keyed on paths relative to the checkout, so a fresh clone (CI) reuses earlier objects.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
JOBS=${GPEN_JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${GPEN_BUILD_TYPE:-Release} "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"
