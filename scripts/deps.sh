#!/usr/bin/env bash
# Install the Debian packages Kiln needs, only those missing (idempotent).
# Needs root (or sudo) when something is missing; prints what it does.
set -euo pipefail
need=(build-essential clang check libsubunit-dev libjansson-dev pkg-config lcov
      python3 valgrind libclang-rt-14-dev
      python3-numpy python3-venv python3-pip python3-setuptools)
missing=()
for p in "${need[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all present (${need[*]})"
  exit 0
fi
echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
