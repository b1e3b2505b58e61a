#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the default task. Until real weights
# are involved, that is the VRAM plan of the released GPEN models at several batch sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
exec build/gpen plan --official "$@"
