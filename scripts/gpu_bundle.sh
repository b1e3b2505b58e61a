#!/usr/bin/env bash
# scripts/gpu_bundle.sh DIR: everything a GPU run needs, built here, so that the GPU machine (CUDA,
# CMake and PyTorch, but none of the -dev packages this build needs, and no network) configures and
# builds nothing: DIR/run.sh runs scripts/gpu_check.sh on the bundle (docs/benchmarks.md, "GPU run").
#   bin/      gpen, test_cuda_all (every test_cuda_*.cpp, built for the GPU), bench_cpu_gpen256; stripped,
#             with RPATH $ORIGIN/../lib, so they need no LD_LIBRARY_PATH and Python (which gpen
#             starts for --compare-pytorch) never sees the bundle's libraries
#   lib/      the shared libraries they need that a bare Linux lacks (libzip and what it pulls in,
#             libgomp, libbenchmark); the CUDA runtime is linked in statically, libcuda is the driver's
#   tests/    test_cuda_files.txt (the source files, one doctest --source-file run each), the
#             fixtures they open, and tests/reference/*.py (the PyTorch references)
#   scripts/  gpu_check.sh (a copy) and make_synthetic_gpen.py
#   shared/   models/retinaface-mobilenet0.25.pth and images/kids_1024x768.jpg
#   licenses/ the project's LICENSE and the licence of every third-party part the bundle ships (the
#             Debian copyright file of each library in lib/ and of each header-only library compiled
#             into the binaries; NVIDIA's licence of the statically linked CUDA runtime)
#   run.sh, MANIFEST.txt (what was built from which commit, what each binary needs of glibc, and the
#             third-party parts with their packages and licences)
# The C++ runtime stays the machine's shared libstdc++: built here (Debian 12, GCC 12) the binaries
# ask it for GLIBCXX_3.4.29 at most (libbenchmark, for bench_*: 3.4.30) and glibc for 2.34, which
# Ubuntu 22.04 and 24.04 have (EL9 too, but for bench_*).
# Linked statically (-static-libstdc++ -static-libgcc) they would need glibc 2.36 instead
# (arc4random, _dl_find_object in GCC 12's runtime), and libbenchmark brings the shared one anyway.
# Rebuilding is incremental (build dir $GPEN_BUNDLE_BUILD_DIR, default build-bundle, with ccache);
# DIR is written beside itself and swapped in at the end, so a failure leaves the old one whole.
# The bundle must fit beside the working tree: the device tool carries both, 64 MiB in all
# (scripts/bundle_limit.sh).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: scripts/gpu_bundle.sh DIR" >&2; exit 2; }
cd "$(dirname "$0")/.."
ROOT=$PWD
case $1 in /*) DIR=$1 ;; *) DIR=$ROOT/$1 ;; esac
BUILD=${GPEN_BUNDLE_BUILD_DIR:-build-bundle}
SHARED=${GPEN_SHARED_DIR:-$ROOT/../shared}
read -r LIMIT TREE < <(scripts/bundle_limit.sh)
INPUTS=(models/retinaface-mobilenet0.25.pth images/kids_1024x768.jpg)
# What the CUDA tests open (grep GPEN_FIXTURE_DIR / fixture_dir() in tests/test_cuda_*.cpp).
FIXTURES=(gpen/s32/checkpoint.pth gpen/s32/input.npy gpen/s32/output.npy align/kids/image.png)
# Libraries a GPU machine is taken to have: glibc's, the C++ runtime and the driver's libcuda.
SYSTEM_LIBS='^(linux-vdso|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64|libcuda)\.so'
for f in "${INPUTS[@]}"; do
  [ -f "$SHARED/$f" ] || { echo "gpu_bundle: $SHARED/$f is missing (set GPEN_SHARED_DIR)" >&2; exit 1; }
done
for t in patchelf strip ldd; do
  command -v $t > /dev/null || { echo "gpu_bundle: $t is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done

export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
# Of the CPU microbenchmarks only GPEN-256's layers (bench_cpu_gpen256): the last and least step of
# a GPU check (its CPU figures), and each of the others is another 0.8-1.6 MB of a bundle that must
# fit beside the working tree (scripts/bundle_limit.sh: with all nine the bundle was 48 MiB, which
# with a 17 MiB tree is over the 64 MiB the device tool takes).
benches=(bench_cpu_gpen256)
t0=$SECONDS
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DGPEN_CUDA=ON -DGPEN_CUDA_ARCHS="80;90" \
  -DGPEN_CUDA_TESTS_NATIVE=ON -DGPEN_VIDEO=OFF > /dev/null
cmake --build "$BUILD" -j "${GPEN_JOBS:-$(nproc)}" --target gpen test_cuda_all "${benches[@]}" > "$BUILD/bundle_build.log" 2>&1 ||
  { tail -40 "$BUILD/bundle_build.log" >&2; echo "gpu_bundle: build failed (log: $BUILD/bundle_build.log)" >&2; exit 1; }
echo "gpu_bundle: built in $((SECONDS - t0)) s ($BUILD)"

NEW=$DIR.new.$$
rm -rf "$NEW"
trap 'rm -rf "$NEW"' EXIT
mkdir -p "$NEW"/{bin,lib,licenses,tests/reference,scripts} "$NEW/shared/models" "$NEW/shared/images"
for b in "$BUILD/gpen" "$BUILD/tests/test_cuda_all" "${benches[@]/#/$BUILD/bench/}"; do
  strip -o "$NEW/bin/$(basename "$b")" "$b"
done
# The libraries: what ldd resolves (transitively) outside the allowed set, under its soname.
for b in "$NEW"/bin/*; do
  if ldd "$b" | grep "not found" >&2; then echo "gpu_bundle: $b needs a library this machine lacks" >&2; exit 1; fi
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $SYSTEM_LIBS ]] || { cp -L "$path" "$NEW/lib/$name" && echo "$name $path"; }
  done
done | sort -u > "$BUILD/bundle_libs.txt"
for b in "$NEW"/bin/*; do patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$b"; done

# The test files the GPU runs: all but those that test the emulator itself (GPEN_EMULATOR_ONLY)
# and the video ones (test_cuda_video*: the bundle is built without FFmpeg, GPEN_VIDEO=OFF).
for f in tests/test_cuda_*.cpp; do
  case $(basename "$f") in test_cuda_video*) continue ;; esac
  grep -q GPEN_EMULATOR_ONLY "$f" || basename "$f"
done > "$NEW/tests/test_cuda_files.txt"
for f in "${FIXTURES[@]}"; do mkdir -p "$NEW/tests/fixtures/$(dirname "$f")" && cp "tests/fixtures/$f" "$NEW/tests/fixtures/$f"; done
cp tests/reference/*.py "$NEW/tests/reference/"
cp scripts/gpu_check.sh scripts/make_synthetic_gpen.py "$NEW/scripts/"
for f in "${INPUTS[@]}"; do cp "$SHARED/$f" "$NEW/shared/$f"; done
cat > "$NEW/run.sh" << 'EOF'
#!/usr/bin/env bash
# The GPU check on this bundle (made by scripts/gpu_bundle.sh): no configure, no build. The
# binaries find lib/ through their RPATH; LD_LIBRARY_PATH is set for them all the same, and
# gpu_check.sh takes it away again from Python, whose PyTorch must keep its own libgomp.
B=$(cd "$(dirname "$0")" && pwd)
export GPU_CHECK_BUNDLE=$B GPU_CHECK_OUTER_LD_LIBRARY_PATH=${LD_LIBRARY_PATH-}
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
chmod u+x "$B"/bin/* 2> /dev/null  # in case a copy on the way lost the modes (then: bash .gpu_bundle/run.sh)
exec bash "$B/scripts/gpu_check.sh" "$@"
EOF
chmod +x "$NEW/run.sh" "$NEW/scripts/gpu_check.sh"

# Third-party notices: the Debian package a file comes from (dpkg knows /lib paths and /usr/lib
# ones apart), and the licences its copyright file names (DEP-5 "License:" fields: every part of
# the package's source, so a superset of what the library itself is under); the file itself goes
# to licenses/, the authoritative text.
deb_package() {
  local p owner
  p=$(readlink -f "$1")
  owner=$(dpkg -S "$p" 2> /dev/null || dpkg -S "${p#/usr}" 2> /dev/null || true)
  echo "${owner%%:*}"
}
notice() {  # WHAT PACKAGE
  local f=/usr/share/doc/$2/copyright lic
  [ -f "$f" ] || { printf '  %-26s %s: no copyright file found\n' "$1" "$2"; return; }
  cp "$f" "$NEW/licenses/$2.copyright"
  lic=$(sed -n 's/^License: *\([^ ].*\)$/\1/p' "$f" | sort -u | paste -sd ';' | sed 's/;/; /g')
  printf '  %-26s Debian %s %s, licences named: %s (licenses/%s.copyright)\n' "$1" "$2" \
    "$(dpkg-query -W -f='${Version}' "$2")" "${lic:-see the file}" "$2"
}
cp LICENSE "$NEW/licenses/gpen-engine.LICENSE"
CUDART_LICENSE=$(ls /usr/local/cuda/dist-info/nvidia_cuda_runtime-*/licenses/License.txt 2> /dev/null | head -1)
[ -z "$CUDART_LICENSE" ] || cp "$CUDART_LICENSE" "$NEW/licenses/cuda-runtime.License.txt"

# The newest glibc symbol version each binary asks for: the GPU machine's glibc must be at least that.
{
  echo "gpen-engine GPU bundle, $(git describe --always --dirty 2> /dev/null || echo unknown), built $(date -u +%FT%TZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "CUDA $(nvcc --version 2> /dev/null | grep -o 'release [0-9.]*' || echo '?'), sm_80 and sm_90 (+ PTX)"
  for b in "$NEW"/bin/* "$NEW"/lib/*; do
    printf '%-28s %9d bytes  needs %s %s\n' "${b#"$NEW"/}" "$(stat -c %s "$b")" \
      "$(objdump -T "$b" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)" \
      "$(objdump -T "$b" | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)"
  done
  echo "licence: gpen-engine itself is Apache-2.0 (licenses/gpen-engine.LICENSE); third-party parts:"
  while read -r name path; do notice "lib/$name" "$(deb_package "$path")"; done < "$BUILD/bundle_libs.txt"
  # Compiled into the binaries from headers (gpen: Eigen, nlohmann-json, CLI11, stb_image;
  # test_cuda_all: also doctest), and the CUDA runtime, linked statically into all three.
  notice "Eigen (in bin/*)" libeigen3-dev
  notice "nlohmann-json (in bin/*)" nlohmann-json3-dev
  notice "CLI11 (in bin/gpen)" libcli11-dev
  notice "stb_image (in bin/gpen)" libstb-dev
  notice "doctest (in bin/test_cuda_all)" doctest-dev
  cudart_licence="the NVIDIA CUDA Toolkit licence (licenses/cuda-runtime.License.txt)"
  [ -n "$CUDART_LICENSE" ] || cudart_licence="the NVIDIA CUDA Toolkit licence (its text was not found on the build machine)"
  printf '  %-26s NVIDIA CUDA runtime, %s: %s\n' "cudart_static (in bin/*)" \
    "$(nvcc --version 2> /dev/null | grep -o 'release [0-9.]*' || echo 'release ?')" "$cudart_licence"
} > "$NEW/MANIFEST.txt"

size=$(du -sb "$NEW" | cut -f1)
if [ "$size" -ge "$LIMIT" ]; then
  echo "gpu_bundle: $size bytes, over the limit of $LIMIT (64 MiB less the working tree's $TREE bytes and 2 MiB)" >&2
  exit 1
fi
echo "total: $size bytes (limit $LIMIT: 64 MiB less the working tree's $TREE bytes and 2 MiB)" >> "$NEW/MANIFEST.txt"
rm -rf "$DIR"
mv "$NEW" "$DIR"
trap - EXIT
echo "gpu_bundle: $DIR, $size bytes ($(awk "BEGIN {printf \"%.1f of %.1f\", $size / 1048576, $LIMIT / 1048576}") MiB)"
