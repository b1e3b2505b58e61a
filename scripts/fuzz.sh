#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang + ASan + UBSan in build-fuzz and runs each
# from its committed seed corpus: the checkpoint and .gpw readers for GPEN_FUZZ_SECONDS (default
# 60) seconds, the image decoders, the .npy reader and `gpen serve`'s request handling for
# GPEN_FUZZ_IMAGE_SECONDS (default 20).
# GPEN_FUZZ_TARGETS="jpeg png" runs only those. Exits
# non-zero on any finding (crash, sanitizer report, leak, timeout, out-of-memory); reproducers
# are written to build-fuzz/findings/. Called by scripts/test.sh in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${GPEN_FUZZ_SECONDS:-60}
IMAGE_SECS=${GPEN_FUZZ_IMAGE_SECONDS:-20}
TARGETS=${GPEN_FUZZ_TARGETS:-checkpoint gpw jpeg png webp bmp npy serve}
BUILD=build-fuzz

# clang's OpenMP runtime is needed to configure the project with clang at all.
if ! dpkg-query -W -f='${Status}' libomp-14-dev 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends libomp-14-dev >/dev/null
fi

CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DGPEN_FUZZ=ON -DGPEN_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target $(for t in $TARGETS; do printf 'fuzz_%s ' "$t"; done)

mkdir -p "$BUILD/findings"
status=0
for t in $TARGETS; do
  work="$BUILD/corpus-$t"
  mkdir -p "$work"
  log="$BUILD/fuzz_$t.log"
  secs=$SECS
  case $t in checkpoint|gpw) ;; *) secs=$IMAGE_SECS ;; esac
  dict=()
  [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
  echo "fuzz: fuzz_$t for ${secs}s"
  set +e
  "$BUILD/tests/fuzz/fuzz_$t" "$work" "tests/fuzz/corpus/$t" "${dict[@]}" \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$BUILD/findings/$t-" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ +DONE" "$log" | sed "s/^/fuzz_$t: /" || true
  if [ $rc -ne 0 ]; then
    echo "fuzz: fuzz_$t FOUND A PROBLEM (exit $rc); log: $log, reproducers: $BUILD/findings/" >&2
    tail -40 "$log" >&2
    status=1
  fi
done
exit $status
