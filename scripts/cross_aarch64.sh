#!/usr/bin/env bash
# Cross-builds the engine for aarch64 (64-bit ARM Linux) into build-aarch64/ and runs its aarch64
# tests under qemu-aarch64 (ctest -L aarch64): the CPU op tests against their fixtures, GPEN end
# to end against the PyTorch fixtures, RetinaFace mobilenet0.25 on the shared photos, the codecs
# (tests/cross_tests.cmake).
# Installs what it needs (Debian): the cross compiler, qemu's user-mode emulator and the libraries
# as :arm64 multiarch packages. It never lets apt remove a package: where the plan would, it stops
# (exit 77, "cannot install here") and changes nothing.
#   --check   only say whether this machine can install the packages (exit 0, or 77)
#   --build   install and build, run no tests
# CUDA, `gpen video` (FFmpeg) and the Python package are off in this build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GPEN_AARCH64_BUILD_DIR:-build-aarch64}
JOBS=${GPEN_JOBS:-$(nproc)}
mode=${1:-all}

HOST_PKGS=(g++-aarch64-linux-gnu qemu-user-static cmake make pkg-config ccache
           libeigen3-dev libcli11-dev nlohmann-json3-dev doctest-dev libstb-dev)
ARM_PKGS=(libjpeg62-turbo-dev libpng-dev libwebp-dev libzip-dev libssl-dev libcurl4-openssl-dev
          libbenchmark-dev libboost-context-dev libboost-dev)
PKGS=("${HOST_PKGS[@]}" "${ARM_PKGS[@]/%/:arm64}")

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    [ "$mode" = --check ] && { echo "cross_aarch64: arm64 is not a dpkg architecture here yet"; }
    $SUDO dpkg --add-architecture arm64
    $SUDO apt-get update -qq
  fi
  plan=$(apt-get -s install --no-install-recommends "${missing[@]}" 2>&1) || {
    echo "cross_aarch64: apt cannot install ${missing[*]}:"; echo "$plan" | grep -E '^E:|^ ' >&2; exit 77; }
  if echo "$plan" | grep -q '^Remv'; then
    echo "cross_aarch64: installing ${missing[*]} would remove packages; not done:" >&2
    echo "$plan" | grep '^Remv' >&2
    exit 77
  fi
  [ "$mode" = --check ] && exit 0
  echo "cross_aarch64: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$mode" = --check ] && exit 0

export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64.cmake" \
  -DGPEN_CUDA=OFF -DGPEN_VIDEO=OFF -DGPEN_PYTHON=OFF >/dev/null
# gpen and the test executables of the aarch64 label (tests/CMakeLists.txt: GPEN_CROSS_TESTS).
cmake --build "$BUILD_DIR" -j "$JOBS" --target gpen gpen_cross_tests
[ "$mode" = --build ] && exit 0
cd "$BUILD_DIR"
ctest -L aarch64 -j "$JOBS" --output-on-failure
