#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang + ASan + UBSan in build-fuzz and runs each
# from its seed corpus: the checkpoint and .gpw readers for GPEN_FUZZ_SECONDS (default 60)
# seconds, the image decoders, the .npy reader, the video reader and `gpen serve`'s request handling
# for GPEN_FUZZ_IMAGE_SECONDS (default 20). The seeds are committed (tests/fuzz/corpus/) but for the
# video reader's: tiny clips in several containers and codecs that the ffmpeg program makes here,
# in build-fuzz/seed-video.
# GPEN_FUZZ_TARGETS="jpeg png" runs only those. Exits
# non-zero on any finding (crash, sanitizer report, leak, timeout, out-of-memory); reproducers
# are written to build-fuzz/findings/. Called by scripts/test.sh in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${GPEN_FUZZ_SECONDS:-60}
IMAGE_SECS=${GPEN_FUZZ_IMAGE_SECONDS:-20}
TARGETS=${GPEN_FUZZ_TARGETS:-checkpoint gpw jpeg png webp bmp npy video serve}
BUILD=build-fuzz

# clang's OpenMP runtime is needed to configure the project with clang at all.
if ! dpkg-query -W -f='${Status}' libomp-14-dev 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends libomp-14-dev >/dev/null
fi

CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DGPEN_FUZZ=ON -DGPEN_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target $(for t in $TARGETS; do printf 'fuzz_%s ' "$t"; done)

# Tiny clips (32x24, 3 frames) in the containers and codecs the video reader meets most.
make_video_seeds() {
  local dir=$1 q="-hide_banner -loglevel error -y" src="-f lavfi -i testsrc2=size=32x24:rate=10"
  mkdir -p "$dir"
  ffmpeg $q $src -frames:v 3 -c:v libx264 -pix_fmt yuv420p "$dir/h264.mp4"
  ffmpeg $q $src -f lavfi -i sine=duration=0.3:sample_rate=8000 -frames:v 3 -c:v libx264 -pix_fmt yuv420p10le \
    -c:a aac -metadata:s:v rotate=90 "$dir/h264_10bit_audio.mov"
  ffmpeg $q $src -frames:v 3 -c:v libx265 -x265-params log-level=error -pix_fmt yuv420p "$dir/hevc.mkv"
  ffmpeg $q $src -frames:v 3 -c:v libvpx-vp9 -deadline realtime "$dir/vp9.webm"
  ffmpeg $q $src -frames:v 3 -c:v mpeg4 "$dir/mpeg4.avi"
  ffmpeg $q $src -frames:v 3 -c:v mpeg2video "$dir/mpeg2.ts"
  ffmpeg $q $src -frames:v 3 -c:v mjpeg -pix_fmt yuvj422p "$dir/mjpeg.mkv"
  ffmpeg $q $src -frames:v 3 -c:v ffv1 "$dir/ffv1.mkv"
}

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
  seeds="tests/fuzz/corpus/$t"
  if [ "$t" = video ]; then
    seeds="$BUILD/seed-video"
    make_video_seeds "$seeds"
  fi
  echo "fuzz: fuzz_$t for ${secs}s"
  set +e
  "$BUILD/tests/fuzz/fuzz_$t" "$work" "$seeds" "${dict[@]}" \
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
