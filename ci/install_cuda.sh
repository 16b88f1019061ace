#!/usr/bin/env bash
# ci/install_cuda.sh -- install the CUDA 13.0 headers and NVRTC that the
# build and `make nvrtc-check` need, from NVIDIA's Debian 12 package
# repository, in a CI container (root).  The repository key is checked
# against its published fingerprint before apt trusts it.  Nothing is done
# when the toolkit is already present (a developer machine, or an image with
# it baked in).  docs/ci.md explains where this runs: before any pull-request
# code is on disk.
set -euo pipefail
V=${KILN_CUDA_VERSION:-13-0}
DIR=/usr/local/cuda-${V/-/.}
REPO=https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64
FINGERPRINT=EB693B3035CD5710E231E123A4B469963BF863CC     # NVIDIA CUDA key 3bf863cc
[[ $V =~ ^[0-9]+-[0-9]+$ ]] || { echo "install_cuda: KILN_CUDA_VERSION '$V' is not like 13-0" >&2; exit 1; }
PKGS=("cuda-nvrtc-dev-$V" "cuda-cudart-dev-$V" "cuda-driver-dev-$V" "cuda-crt-$V" "libcublas-dev-$V")

have() {
    for h in cuda.h nvrtc.h cublas_api.h; do
        [ -f "/usr/local/cuda/include/$h" ] || return 1
    done
    ls /usr/local/cuda/lib64/libnvrtc.so.* >/dev/null 2>&1
}
if have; then
    echo "install_cuda: CUDA headers and NVRTC already in /usr/local/cuda"
    exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "install_cuda: needs root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends ca-certificates curl gnupg
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
curl -fsSL --proto =https "$REPO/3bf863cc.pub" -o "$tmp/key.asc"
got=$(GNUPGHOME="$tmp" gpg --batch --show-keys --with-colons "$tmp/key.asc" |
      awk -F: '$1 == "fpr" { print $10; exit }')
if [ "$got" != "$FINGERPRINT" ]; then
    echo "install_cuda: key fingerprint '$got' is not $FINGERPRINT; stopping" >&2
    exit 1
fi
gpg --batch --dearmor < "$tmp/key.asc" > /usr/share/keyrings/cuda-archive-keyring.gpg
echo "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] $REPO/ /" \
    > /etc/apt/sources.list.d/cuda.list
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${PKGS[@]}"
[ -e /usr/local/cuda ] || ln -s "$DIR" /usr/local/cuda
have || { echo "install_cuda: $DIR lacks the headers or libnvrtc after install" >&2; exit 1; }
echo "install_cuda: ${PKGS[*]} installed in $DIR"
