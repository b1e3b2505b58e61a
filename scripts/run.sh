#!/usr/bin/env bash
# The main job: installs what is missing, builds, prints the memory plan of the released GPEN
# models, and restores a photo (default: ../shared/images/kids_1024x768.jpg) with the whole
# pipeline with the official GPEN-BFR-512 and RetinaFace-R50 from models/ (.pth or converted .gpw).
# When models/ lacks them it fetches them (`gpen fetch`, from the URLs of the official GPEN README);
# where that fails (no internet) it says so in one line and runs on a GPEN-BFR-256-layout
# checkpoint with random weights (labelled synthetic) and the real RetinaFace-mobilenet0.25.
# Usage: scripts/run.sh [PHOTO] [OUT]    (GPEN_FETCH=0: do not try to download)
set -euo pipefail
cd "$(dirname "$0")/.."
# OpenMP threads that spin long at every barrier lose badly when other processes hold the cores;
# a short spin costs nothing on an idle machine
# (docs/tuning.md, "Contention"). A value the caller set wins.
[ -n "${OMP_WAIT_POLICY:-}" ] || export GOMP_SPINCOUNT=${GOMP_SPINCOUNT:-1000}
echo "run.sh: 1/3 installing what is missing (scripts/setup.sh)"
scripts/setup.sh
echo "run.sh: 2/3 building into build/: the first build takes several minutes (about ten on 2 cores), later ones seconds"
# The build's own percentage, one line per 5 %; compiler messages (stderr) pass through unchanged.
scripts/build.sh | awk '/^\[ *[0-9]+%\]/ {
    match($0, /[0-9]+%/); p = substr($0, RSTART, RLENGTH - 1) + 0
    if (p >= last + 5 || (p == 100 && last < 100)) { printf "  build %3d%%\n", p; fflush(); last = p }
  }'
echo "run.sh: 3/3 the memory plan of the released models, then a photo restored"
PHOTO=${1:-../shared/images/kids_1024x768.jpg}
OUT=${2:-out/restored.jpg}
mkdir -p out models

build/gpen plan --official
echo

gpw_for() {  # gpw_for NAME: prints the .gpw of models/NAME, converting the .pth once
  if [ -f "models/$1.gpw" ]; then echo "models/$1.gpw"
  elif [ -f "models/$1.pth" ]; then build/gpen convert "models/$1.pth" -o "models/$1.gpw" >&2 && echo "models/$1.gpw"
  fi
}
missing=()
for m in GPEN-BFR-512 RetinaFace-R50; do
  [ -f "models/$m.gpw" ] || [ -f "models/$m.pth" ] || missing+=("$m")
done
if [ ${#missing[@]} -gt 0 ] && [ "${GPEN_FETCH:-1}" != 0 ]; then
  # A short connect timeout, and gpen fetch stops at the first unreachable server: without
  # internet this says so in one line within seconds.
  build/gpen fetch "${missing[@]}" --dir models --convert --connect-timeout 8 || true
fi
GPEN=$(gpw_for GPEN-BFR-512)
DET=$(gpw_for RetinaFace-R50)
if [ -z "$GPEN" ]; then
  cat <<'MSG'
No official GPEN weights in models/: where the internet is reachable,
  build/gpen fetch GPEN-BFR-512 RetinaFace-R50 --dir models --convert
gets them (this script tries it when they are missing). Meanwhile this run uses a SYNTHETIC
GPEN-BFR-256-layout checkpoint with random weights: the pipeline, timings and memory are real,
the "restored" faces are not.
MSG
  if [ ! -f out/GPEN-BFR-256-synthetic.gpw ]; then
    /usr/bin/python3 scripts/make_synthetic_gpen.py out/GPEN-BFR-256-synthetic.pth --size 256
    build/gpen convert out/GPEN-BFR-256-synthetic.pth -o out/GPEN-BFR-256-synthetic.gpw 2>/dev/null
  fi
  GPEN=out/GPEN-BFR-256-synthetic.gpw
fi
if [ -z "$DET" ]; then
  [ -f out/retinaface-mobilenet0.25.gpw ] ||
    build/gpen convert ../shared/models/retinaface-mobilenet0.25.pth -o out/retinaface-mobilenet0.25.gpw 2>/dev/null
  DET=out/retinaface-mobilenet0.25.gpw
fi
echo "restoring $PHOTO with $GPEN and $DET"
build/gpen restore -m "$GPEN" -d "$DET" "$PHOTO" -o "$OUT" --report out/report.json
echo "report (out/report.json):"
cat out/report.json
