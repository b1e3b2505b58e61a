#!/usr/bin/env bash
# Installs the official Python code the flow tests run beside the engine, out of tree and without
# dependencies (they load single files with stand-ins, tests/reference/stub_modules.py): GFPGAN's
# (gfpgan, basicsr, facexlib, realesrgan) into /tmp/gfpgan-official and CodeFormer's package into
# /tmp/codeformer-official (also reachable as /tmp/codeformer-pip). Versions pinned; nothing is
# installed where the folder already holds that version. Without PyPI the tests that need them
# skip with a message, so a failure here is reported and not fatal.
set -uo pipefail
install() {
  local dir=$1; shift
  local missing=()
  for spec in "$@"; do
    local name=${spec%%==*} version=${spec##*==}
    ls -d "$dir/${name//-/_}-$version.dist-info" >/dev/null 2>&1 || missing+=("$spec")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "reference packages: installing ${missing[*]} into $dir"
  /usr/bin/python3 -m pip install -q --no-deps --disable-pip-version-check --target "$dir" --upgrade "${missing[@]}" \
    2>&1 | grep -v "^WARNING: Running pip as" || true
}
install /tmp/gfpgan-official gfpgan==1.3.8 basicsr==1.4.2 facexlib==0.3.0 realesrgan==0.3.0
install /tmp/codeformer-official codeformer-pip==0.0.4
[ -e /tmp/codeformer-pip ] || ln -s /tmp/codeformer-official /tmp/codeformer-pip
exit 0
