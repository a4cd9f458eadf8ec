#!/usr/bin/env bash
# Installs every Debian package ParaProof needs to build, test and run. Idempotent; needs root (or sudo).
set -euo pipefail
PACKAGES=(
  g++ cmake ninja-build pkg-config
  qt6-base-dev qt6-svg-dev libgl-dev
  libz3-dev libgraphviz-dev nlohmann-json3-dev libjemalloc-dev zlib1g-dev
  libopenmpi-dev openmpi-bin
  xvfb xauth
  clang libclang-rt-14-dev libfuzzer-14-dev
  python3-torch
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
echo "setup: all packages present"
