#!/usr/bin/env bash
# One run on a lent GPU machine (no network there; CUDA, CMake and PyTorch installed): build for
# sm_90, run the whole suite with the CUDA kernel tests on the GPU, compute-sanitizer memcheck and
# racecheck on them, GPEN on the CUDA backend (gpen bench --device cuda: sizes 256/512/1024, batch
# 1 and 8, fp32/fp16/bf16), then the benchmarks. Results go to $OUT (the device tool) or
# bench/results/.
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
# GPEN on the CUDA backend (synthetic weights): time per face (host and cudaEvent), device memory.
# 18 configurations plus one without graphs; each capped, and skipped once the script nears its
# 10-minute budget (SECONDS counts from the start of the script).
bench_field() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(' '.join(f'{k}={j[k]:.4g}' if isinstance(j[k], float) else f'{k}={j[k]}' for k in sys.argv[2:] if k in j))" "$@" 2>/dev/null; }
log "gpen bench --device cuda (synthetic GPEN, CUDA graphs on)"
for size in 256 512 1024; do
  for batch in 1 8; do
    for prec in fp32 fp16 bf16; do
      name="gpen_cuda_${size}_b${batch}_${prec}"
      if [ "$SECONDS" -gt 420 ]; then log "  $name: skipped (time budget)"; continue; fi
      timeout 60 build-gpu/gpen bench --device cuda --size "$size" --batch "$batch" --precision "$prec" \
        --runs 3 --warmup 1 --json > "$RES/$name.json" 2> "$RES/$name.err"
      log "  $name: rc=$? $(bench_field "$RES/$name.json" ms_per_face device_ms_per_face cuda_graphs device_planned_bytes device_used_bytes)"
    done
  done
done
if [ "$SECONDS" -le 440 ]; then
  timeout 60 build-gpu/gpen bench --device cuda --size 512 --batch 1 --precision fp16 --no-cuda-graphs --runs 3 \
    --warmup 1 --json > "$RES/gpen_cuda_512_b1_fp16_nographs.json" 2> "$RES/gpen_cuda_512_b1_fp16_nographs.err"
  log "  gpen_cuda_512_b1_fp16 without graphs: rc=$? $(bench_field "$RES/gpen_cuda_512_b1_fp16_nographs.json" ms_per_face device_ms_per_face)"
fi
if command -v compute-sanitizer > /dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for t in build-gpu/tests/test_cuda_*; do
    [ -x "$t" ] || continue
    for tool in memcheck racecheck; do
      if [ "$SECONDS" -gt 540 ]; then log "  $tool $(basename "$t"): skipped (time budget)"; continue; fi
      timeout 120 "$CS" --tool $tool --error-exitcode 3 "$t" > "$RES/$(basename "$t").$tool.txt" 2>&1
      log "  $tool $(basename "$t"): rc=$?"
    done
  done
fi
log "benchmarks (CPU backend figures on this machine)"
for b in build-gpu/bench/bench_*; do
  [ -x "$b" ] || continue
  if [ "$SECONDS" -gt 560 ]; then log "  $(basename "$b"): skipped (time budget)"; continue; fi
  timeout 60 "$b" --benchmark_min_time=0.1 --benchmark_format=json > "$RES/$(basename "$b").json" 2> /dev/null
  log "  $(basename "$b"): rc=$?"
done
log "done"
