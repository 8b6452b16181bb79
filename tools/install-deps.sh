#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian packages mixsolve builds with, where missing (apt-get update first). The CUDA
# toolkit (nvcc, cuBLAS) is expected on the machine already.
set -euo pipefail
packages=(cmake ninja-build g++ libeigen3-dev libgtest-dev nlohmann-json3-dev libsuitesparse-dev libmpfr-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
fi
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || { echo "install-deps: nvcc (CUDA toolkit 12.4+) not found" >&2; exit 1; }
