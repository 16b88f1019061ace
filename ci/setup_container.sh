#!/usr/bin/env bash
# ci/setup_container.sh -- the root half of a CI job that runs pull-request
# code (.github/workflows/*.yml, docs/ci.md).  It runs from the trusted
# checkout (the default branch, or the pull request's base), before the
# pull request's code is on disk: the Debian packages of scripts/deps.sh,
# the CUDA toolkit packages, and the unprivileged user `kilnci` that the
# PR code then runs as (ci/trigger.py exec --as-user kilnci).  After this
# step nothing in the job runs as root except that privilege drop.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "setup_container: needs root" >&2; exit 1; }
bash "$here/scripts/deps.sh"
bash "$here/ci/install_cuda.sh"
if ! id kilnci >/dev/null 2>&1; then
    useradd --uid 4242 --user-group --create-home --shell /bin/sh kilnci
fi
echo "setup_container: ready; PR code runs as $(id kilnci)"
