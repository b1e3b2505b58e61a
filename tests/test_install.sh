#!/usr/bin/env bash
# ctest test_install: `cmake --install` of this build into a temporary prefix, then, from that
# prefix alone, docs/examples/restore_photo built outside the tree twice (find_package(GpenEngine)
# and pkg-config gpen-engine) restores a shared photo with synthetic weights (the tiny GPEN of
# tests/fixtures/gpen/s32, random weights) into the very bytes the installed `gpen restore` writes.
# Every installed header also compiles on its own there (the public set includes nothing it lacks).
# Usage: tests/test_install.sh BUILD_DIR SOURCE_DIR SHARED_DIR. Exit 77 (skipped) without the
# shared photo and detector weights.
set -euo pipefail
BUILD=$1 SRC=$2 SHARED=$3
det_pth=$SHARED/models/retinaface-mobilenet0.25.pth
photo=$SHARED/images/kids_1024x768.jpg
for f in "$det_pth" "$photo"; do
  [ -f "$f" ] || { echo "SKIPPED: $f is missing"; exit 77; }
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P=$T/prefix
cmake --install "$BUILD" --prefix "$P" > "$T/install.log"
echo "test_install: installed $(find "$P" -type f | wc -l) files into a temporary prefix"
cp -r "$SRC/docs/examples/restore_photo" "$T/src"
unset CPATH CPLUS_INCLUDE_PATH LIBRARY_PATH  # the prefix alone, not the source tree

"$P/bin/gpen" convert "$SRC/tests/fixtures/gpen/s32/checkpoint.pth" -o "$T/gpen.gpw" > /dev/null
"$P/bin/gpen" convert "$det_pth" -o "$T/det.gpw" > /dev/null
"$P/bin/gpen" restore --device cpu --batch 1 -m "$T/gpen.gpw" -d "$T/det.gpw" "$photo" -o "$T/cli.jpg" 2> "$T/cli.log"

cmake -S "$T/src" -B "$T/cmake" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" > "$T/configure.log" ||
  { cat "$T/configure.log"; exit 1; }
cmake --build "$T/cmake" > "$T/build.log" 2>&1 || { cat "$T/build.log"; exit 1; }
"$T/cmake/restore_photo" "$T/gpen.gpw" "$T/det.gpw" "$photo" "$T/cmake.jpg"
cmp "$T/cli.jpg" "$T/cmake.jpg"
echo "test_install: find_package(GpenEngine): the same bytes as gpen restore"

PKG_CONFIG_PATH=$(dirname "$(find "$P" -name gpen-engine.pc)")
export PKG_CONFIG_PATH
# shellcheck disable=SC2046  # pkg-config's words are meant to split
c++ -O2 "$T/src/restore_photo.cpp" -o "$T/restore_photo_pc" $(pkg-config --cflags --libs gpen-engine)
"$T/restore_photo_pc" "$T/gpen.gpw" "$T/det.gpw" "$photo" "$T/pc.jpg"
cmp "$T/cli.jpg" "$T/pc.jpg"
echo "test_install: pkg-config gpen-engine ($(pkg-config --modversion gpen-engine)): the same bytes as gpen restore"

n=0
while read -r h; do
  echo "#include \"$h\"" | c++ -std=c++20 -fsyntax-only -I"$P/include/gpen-engine" -x c++ - ||
    { echo "test_install: $h does not compile on its own from the prefix"; exit 1; }
  n=$((n + 1))
done < <(cd "$P/include/gpen-engine" && find . -name '*.h' | sed 's|^\./||' | sort)
echo "test_install: $n public headers, each compiles alone"
