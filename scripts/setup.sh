#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the reference scripts need (python3-venv:
# scripts/peers_venv.sh, the ONNX Runtime / OpenVINO peers). Idempotent:
# apt-get runs only when something is missing.
set -euo pipefail
# ca-certificates: libcurl only recommends it (not installed with --no-install-recommends), and
# `gpen fetch` verifies the official host's HTTPS certificate against it.
# python3-venv, python3-dev: scripts/test_python.sh installs the Python package into a fresh venv.
# librsvg2-bin: tests render every SVG chart the CLI writes (rsvg-convert).
# libav*-dev, libsw*-dev: `gpen video` decodes and encodes through FFmpeg's libraries (engine/video);
# ffmpeg (the program): the video tests make their clips with it and check audio and timestamps.
# libboost-dev: Boost.Beast, the HTTP side of `gpen serve`. python3-jsonschema, python3-yaml: its
# answers checked against docs/openapi.yaml; chromium, chromium-driver: its page in a headless
# browser (tests/serve/).
PKGS=(cmake g++ make pkg-config ccache clang libclang-rt-14-dev libomp-14-dev
      libeigen3-dev libstb-dev libjpeg62-turbo-dev libpng-dev libwebp-dev doctest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
      libzip-dev libboost-context-dev libboost-dev libcurl4-openssl-dev libssl-dev ca-certificates patchelf
      python3-numpy python3-torch python3-opencv
      libjpeg-turbo-progs python3-pil
      python3-venv python3-dev librsvg2-bin
      libavformat-dev libavcodec-dev libswscale-dev libswresample-dev libavutil-dev ffmpeg
      python3-jsonschema python3-yaml chromium chromium-driver)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The official Python code the flow tests compare against (out of tree, --no-deps).
"$(dirname "$0")/reference_packages.sh"
