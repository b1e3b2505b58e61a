#!/usr/bin/env bash
# One run on a lent GPU machine (no network there; CUDA, CMake and PyTorch installed): build for
# sm_90, run the whole suite with the CUDA kernel tests on the GPU, compute-sanitizer memcheck and
# racecheck on them, then the benchmarks. Results go to $OUT (the device tool) or bench/results/.
# Must finish within 10 minutes: the build is limited to what the checks need.
set -uo pipefail
cd "$(dirname "$0")/.."
# The device tool brings back at most 8 files: everything is collected in one folder and packed.
DEST=${OUT:-bench/results}
RES=$(mktemp -d)/gpu_check
mkdir -p "$RES" "$DEST"
trap 'cp "$RES/summary.txt" "$DEST/gpu_check_summary.txt" 2>/dev/null; tar czf "$DEST/gpu_check.tgz" -C "$(dirname "$RES")" gpu_check' EXIT
log() { echo "[$(date +%T)] $*" | tee -a "$RES/summary.txt"; }
nvidia-smi > "$RES/nvidia-smi.txt" 2>&1 || true
log "configure + build (sm_90, native CUDA tests)"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGPEN_CUDA=ON -DGPEN_CUDA_ARCHS=90 \
  -DGPEN_CUDA_TESTS_NATIVE=ON > "$RES/configure.txt" 2>&1
cmake --build build-gpu -j "$(nproc)" > "$RES/build.txt" 2>&1 || { log "BUILD FAILED"; tail -50 "$RES/build.txt"; exit 1; }
log "ctest -L cuda (native)"
(cd build-gpu && ctest -L cuda --output-on-failure --timeout 300) > "$RES/ctest_cuda.txt" 2>&1
log "  $(tail -3 "$RES/ctest_cuda.txt" | head -1)"
log "ctest (everything else)"
(cd build-gpu && ctest -LE "cuda|slow" -j 8 --timeout 300) > "$RES/ctest_cpu.txt" 2>&1
log "  $(grep -E 'tests passed|tests failed' "$RES/ctest_cpu.txt")"
if command -v compute-sanitizer > /dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for t in build-gpu/tests/test_cuda_*; do
    [ -x "$t" ] || continue
    for tool in memcheck racecheck; do
      timeout 120 "$CS" --tool $tool --error-exitcode 3 "$t" > "$RES/$(basename "$t").$tool.txt" 2>&1
      log "  $tool $(basename "$t"): rc=$?"
    done
  done
fi
log "benchmarks (CPU backend figures on this machine; CUDA GPEN needs the CUDA backend, see docs/status.md)"
for b in build-gpu/bench/bench_*; do
  [ -x "$b" ] || continue
  timeout 60 "$b" --benchmark_min_time=0.1 --benchmark_format=json > "$RES/$(basename "$b").json" 2> /dev/null
  log "  $(basename "$b"): rc=$?"
done
log "done"
