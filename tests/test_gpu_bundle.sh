#!/usr/bin/env bash
# tests/test_gpu_bundle.sh BUNDLE: the bundle of scripts/gpu_bundle.sh carries everything a GPU run
# needs. (a) Every ELF file in it resolves every library it needs inside the bundle or among the
# libraries a bare Linux with the NVIDIA driver has; (b) its gpen runs under `env -i` with only the
# bundle's LD_LIBRARY_PATH (and with nothing at all: the RPATH); (c) its run.sh on this machine,
# which has no GPU, stops within seconds with one "no CUDA device" line, a non-zero exit and the
# summary file written; (d) it fits beside the working tree in the device tool's 64 MiB; (e) its
# MANIFEST.txt names the licence of every library in lib/, whose texts are in licenses/ with the
# project's own. Exit 77 (skipped) where there is no bundle:
# scripts/test.sh makes one first where CUDA is compiled in.
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: tests/test_gpu_bundle.sh BUNDLE" >&2; exit 2; }
B=$(cd "$1" 2> /dev/null && pwd) || B=""
if [ -z "$B" ] || [ ! -x "$B/bin/gpen" ]; then
  echo "skipped: no bundle at $1 (scripts/gpu_bundle.sh $1 makes it)"
  exit 77
fi
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# ok MESSAGE: a section passed, where it added no failure
ok() { [ "$failures" -gt "$section_start" ] || echo "ok: $*"; section_start=$failures; }
section_start=0
SYSTEM_LIBS='^(linux-vdso|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux-x86-64|libcuda)\.so'

# (a) the dynamic section of every ELF file, then what the loader makes of it with nothing but the
# bundle: each library found under $B/lib or allowed from the system, none missing.
elves=0
while IFS= read -r -d '' f; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  elves=$((elves + 1))
  rel=${f#"$B"/}
  for n in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    [[ $n =~ $SYSTEM_LIBS ]] || [ -f "$B/lib/$n" ] || fail "$rel needs $n: neither in lib/ nor a system library"
  done
  # Executables must also resolve without LD_LIBRARY_PATH (their RPATH, $ORIGIN/../lib).
  for ldlp in "$B/lib" ""; do
    case $rel in lib/*) [ -z "$ldlp" ] && continue ;; esac
    while read -r name arrow path _; do
      [ "$arrow" = "=>" ] || continue
      if [ "$path" = "not" ]; then
        fail "$rel: $name not found (LD_LIBRARY_PATH='$ldlp')"
      elif [[ ! $name =~ $SYSTEM_LIBS ]] && [ "$(realpath "$path")" != "$(realpath "$B/lib/$name")" ]; then
        fail "$rel: $name resolves to $path, outside the bundle (LD_LIBRARY_PATH='$ldlp')"
      fi
    done < <(env -i ${ldlp:+LD_LIBRARY_PATH="$ldlp"} ldd "$f" 2>&1)
  done
done < <(find "$B" -type f -print0)
[ "$elves" -ge 5 ] || fail "only $elves ELF files in $B (gpen, test_cuda_all, bench_cpu_gpen256 and lib/ expected)"
ok "(a) $elves ELF files checked"

# (b) gpen --version with only the bundle's libraries, then with no environment at all.
for ldlp in "$B/lib" ""; do
  v=$(env -i ${ldlp:+LD_LIBRARY_PATH="$ldlp"} "$B/bin/gpen" --version 2>&1)
  if [ $? -ne 0 ] || [[ $v != *"CUDA backend compiled in"* ]]; then
    fail "env -i ${ldlp:+LD_LIBRARY_PATH=$ldlp }gpen --version: '$v'"
  fi
done
ok "(b) env -i gpen --version: $v"

# The native tests: every source file listed has tests in test_cuda_all (the run selects them by file).
while read -r src; do
  n=$(env -i "$B/bin/test_cuda_all" --count --source-file="*/$src" 2>&1 | sed -n 's/.*filters: \([0-9]*\).*/\1/p')
  [ "${n:-0}" -ge 1 ] || fail "test_cuda_all has no test case from $src"
done < "$B/tests/test_cuda_files.txt"
readelf -S "$B/bin/test_cuda_all" | grep -c nv_fatbin > /dev/null || fail "test_cuda_all holds no GPU code (.nv_fatbin)"
ok "(b) test_cuda_all: $(wc -l < "$B/tests/test_cuda_files.txt") source files, each with its tests"

# (c) the whole check, as the device tool would start it, on this machine without a GPU.
if command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; then
  echo "(c) skipped: this machine has a GPU, so the check would run in full"
else
  out=$(mktemp -d)
  t0=$(date +%s.%N)
  log=$(env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="${HOME:-/root}" OUT="$out" timeout 60 "$B/run.sh" 2>&1)
  rc=$?
  secs=$(awk "BEGIN {print $(date +%s.%N) - $t0}")
  lines=$(grep -c "no CUDA device" <<< "$log")
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "run.sh exited $rc without a GPU"
  [ "$lines" -eq 1 ] || fail "run.sh printed $lines lines with 'no CUDA device' (one expected):"$'\n'"$log"
  awk "BEGIN {exit !($secs < 20)}" || fail "run.sh took $secs s without a GPU (under 20 s expected)"
  grep -q "no CUDA device" "$out/gpu_check_summary.txt" 2> /dev/null || fail "the summary $out/gpu_check_summary.txt lacks the line"
  ok "(c) run.sh without a GPU: exit $rc after $secs s: $(grep "no CUDA device" <<< "$log")"
  rm -rf "$out"
fi

# (d) the size limit: the device tool carries the bundle with the working tree (64 MiB in all,
# less 2 MiB of headroom: scripts/bundle_limit.sh).
size=$(du -sb "$B" | cut -f1)
read -r limit tree < <("$(dirname "$0")/../scripts/bundle_limit.sh")
[ "$size" -lt "$limit" ] || fail "the bundle is $size bytes, over its limit of $limit (64 MiB less the working tree's $tree bytes and 2 MiB)"
ok "(d) $size bytes ($(awk "BEGIN {printf \"%.1f of %.1f\", $size / 1048576, $limit / 1048576}") MiB, beside $tree bytes of working tree)"

# (e) third-party notices: a MANIFEST line and a licence text for each library shipped.
[ -f "$B/licenses/gpen-engine.LICENSE" ] || fail "licenses/gpen-engine.LICENSE is missing"
for f in "$B"/lib/*; do
  line=$(grep -F "  lib/$(basename "$f") " "$B/MANIFEST.txt")
  text=$(sed -n 's/.*(\(licenses\/[^)]*\))$/\1/p' <<< "$line")
  [ -n "$text" ] && [ -s "$B/$text" ] || fail "MANIFEST.txt names no licence text for lib/$(basename "$f"): '$line'"
done
ok "(e) $(ls "$B/licenses" | wc -l) licence texts for $(ls "$B/lib" | wc -l) libraries and what the binaries carry"

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "the bundle at $B is self-contained"
