#!/usr/bin/env bash
# scripts/bundle_limit.sh: the most bytes the GPU bundle (scripts/gpu_bundle.sh) may take. The device
# tool sends the working tree that travels (tracked files and untracked ones git does not ignore)
# together with the carried bundle, 64 MiB in all; 2 MiB stay free for files a session adds before
# its run. Prints the limit, then the working tree's bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2> /dev/null | awk '{s += $1} END {print s + 0}')
echo $((64 * 1024 * 1024 - tree - 2 * 1024 * 1024)) "$tree"
