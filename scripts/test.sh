#!/usr/bin/env bash
# The test command: installs what is missing, builds (CUDA compiled in where nvcc exists), runs
# the whole suite, the aarch64 build's tests under qemu, then the suite once more under
# AddressSanitizer + UBSan. GPEN_SKIP_ASAN=1 / GPEN_SKIP_AARCH64=1 skip those passes (for quick
# local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenMP threads that spin long at every barrier lose badly when other processes (here: the
# parallel tests) hold the cores; a short spin costs nothing on an idle machine
# (docs/tuning.md, "Contention"). A value the caller set wins.
[ -n "${OMP_WAIT_POLICY:-}" ] || export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
scripts/setup.sh
# Warnings in the project's own sources fail the build here (and so in CI): none are left.
scripts/build.sh -DGPEN_WERROR=ON
# Where CUDA is compiled in: the GPU bundle that test_gpu_bundle checks (scripts/gpu_bundle.sh; a
# second, CUDA-native build in build-bundle, mostly ccache hits on the objects built just above).
if ! build/gpen --version | grep -c "CUDA backend compiled in" > /dev/null; then
  echo "test: no GPU bundle (CUDA is not compiled in)"
elif [ ! -f "${GPEN_SHARED_DIR:-../shared}/models/retinaface-mobilenet0.25.pth" ]; then
  echo "test: no GPU bundle (the shared inputs are missing from ${GPEN_SHARED_DIR:-../shared})"
else
  scripts/gpu_bundle.sh build-bundle/gpu_bundle
fi
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 900)
# The CUDA kernels once more under the emulator's checker (races, barrier/warp-sync misuse,
# uninitialised shared memory) with a shuffled schedule; the seed is printed and
# GPEN_CUDA_EMU_SEED=N replays it (docs/cuda.md, "Checker").
export GPEN_CUDA_EMU_SEED=${GPEN_CUDA_EMU_SEED:-$(( $(date +%s) % 1000000 + 1 ))}
echo "CUDA checker pass: GPEN_CUDA_EMU_CHECK=all GPEN_CUDA_EMU_SEED=$GPEN_CUDA_EMU_SEED"
(cd build && GPEN_CUDA_EMU_CHECK=all ctest --output-on-failure -j "$(nproc)" --timeout 900 -L cuda)
unset GPEN_CUDA_EMU_SEED
# Registers, shared memory, spills and fit of every kernel on sm_80/sm_90 (needs nvcc).
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  PATH="$PATH:/usr/local/cuda/bin" python3 scripts/cuda_resources.py
fi
# The aarch64 build and its tests under qemu-aarch64 (ctest -L aarch64; docs/cpus.md): about 5
# minutes on 2 cores with the compiler cache warm, the cross build's 232 objects more when cold.
# Where the cross packages cannot be installed (exit 77 from --check), said and skipped.
if [ "${GPEN_SKIP_AARCH64:-0}" != 1 ]; then
  if scripts/cross_aarch64.sh --check; then
    scripts/cross_aarch64.sh
  else
    rc=$?
    [ "$rc" -eq 77 ] || exit "$rc"
    echo "test: no aarch64 tests (this machine cannot install the cross packages)"
  fi
fi
if [ "${GPEN_SKIP_ASAN:-0}" != 1 ]; then
  # The sanitizer build checks host code; CUDA device code is already built above.
  GPEN_BUILD_DIR=build-asan GPEN_BUILD_TYPE=RelWithDebInfo scripts/build.sh -DGPEN_SANITIZE=ON -DGPEN_CUDA=OFF
  # tests/lsan.supp: leaks inside third-party libraries (libx265), not the engine's.
  supp="$PWD/tests/lsan.supp"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=suppressions=$supp UBSAN_OPTIONS=print_stacktrace=1 \
     ctest --output-on-failure -j "$(nproc)" --timeout 1800 -LE slow)
fi
if [ -x scripts/fuzz.sh ] && [ "${CI:-}" = true ]; then
  scripts/fuzz.sh
fi
