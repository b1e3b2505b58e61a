#!/usr/bin/env bash
# Creates .venv-peers/ (git-ignored), or DIR: ONNX Runtime and OpenVINO from PyPI for
# `gpen bench --compare onnxruntime,openvino` (apps/peer.cpp, tests/reference/peer_bench.py), which
# runs them in DIR/bin/python when told so: --peers-python DIR/bin/python or GPEN_PEERS_PYTHON.
# Reference tooling only: the engine never links or imports them. The venv sees the system
# site-packages so the ONNX export (tests/reference/export_gpen_onnx.py) can use Debian's
# python3-torch. Needs python3-venv (scripts/setup.sh installs it) and PyPI.
# Usage: scripts/peers_venv.sh [DIR]   (default .venv-peers; versions: GPEN_ORT_VERSION, GPEN_OV_VERSION)
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-.venv-peers}
PY=${GPEN_PEERS_BASE_PYTHON:-/usr/bin/python3}
[ -x "$DIR/bin/python" ] || "$PY" -m venv --system-site-packages "$DIR"
ort="onnxruntime${GPEN_ORT_VERSION:+==$GPEN_ORT_VERSION}"
ov="openvino${GPEN_OV_VERSION:+==$GPEN_OV_VERSION}"
"$DIR/bin/python" -m pip install --quiet --disable-pip-version-check "$ort" "$ov"
"$DIR/bin/python" - <<'PY'
import onnxruntime, openvino
print("peers:", "onnxruntime", onnxruntime.__version__, "| openvino", openvino.__version__)
PY
echo "peers: use them with gpen bench --compare onnxruntime,openvino --peers-python $(cd "$DIR" && pwd)/bin/python"
