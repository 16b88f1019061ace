#!/usr/bin/env bash
# Install the Debian packages Kiln needs, only those missing (idempotent),
# then check for the CUDA toolkit headers the build needs.
# Needs root (or sudo) when something is missing; prints what it does.
#
#   bash scripts/deps.sh                  packages, then the CUDA headers
#   bash scripts/deps.sh --cuda-headers   only the CUDA headers (make runs
#                                         this before compiling anything)
#
# The CUDA toolkit is not a Debian package here, so it is never installed:
# its headers (cuda.h, nvrtc.h, cublas_api.h under $CUDA_INC, default
# /usr/local/cuda/include) are checked and every missing one is named.
# They give the CUDA backend its types and versioned symbol names; CUDA
# itself is loaded with dlopen at run time and never linked (README,
# "Dependencies").
set -euo pipefail

cuda_headers() {
  local inc="${CUDA_INC:-/usr/local/cuda/include}" missing=()
  for h in cuda.h nvrtc.h cublas_api.h; do
    [ -f "$inc/$h" ] || missing+=("$h")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    cat >&2 <<EOF
deps: missing CUDA toolkit headers in CUDA_INC=$inc: ${missing[*]}
deps: Kiln builds against the CUDA toolkit's headers (types and symbol
deps: names of the driver, NVRTC and cuBLAS, which it loads with dlopen at
deps: run time; nothing is linked).  Install the CUDA toolkit (13,
deps: https://developer.nvidia.com/cuda-downloads; a GPU is not needed to
deps: build), or point make at the headers: make CUDA_INC=/path/to/include
EOF
    return 1
  fi
}

if [ "${1:-}" = "--cuda-headers" ]; then
  cuda_headers
  exit
fi

need=(build-essential clang check libsubunit-dev libjansson-dev pkg-config
      python3 python3-yaml shellcheck valgrind libclang-rt-14-dev
      python3-numpy python3-venv python3-pip python3-setuptools)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present (${need[*]})"
else
  echo "deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
cuda_headers
echo "deps: CUDA toolkit headers present in ${CUDA_INC:-/usr/local/cuda/include}"
