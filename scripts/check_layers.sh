#!/usr/bin/env bash
# check_layers.sh -- the folders' include directions (docs/runtime.md,
# "Source layout"), so that no folder cycle comes back:
#   runtime/cli/    may include conformance/ (it calls the runner);
#   conformance/    never includes from runtime/cli/ (the runner is a
#                   library the CLI calls);
#   runtime/tool/   includes from neither runtime/cli/ nor conformance/;
#   runtime/*.c, runtime/backends/ (the library) include from none of the
#                   three;
#   the generic runtime (runtime/*.c, runtime/*.h) includes no backend's
#                   own header (backends/*.h): backends are reached through
#                   kiln_backend.h only.
# Usage: scripts/check_layers.sh [ROOT]   (default: the repository root)
#        scripts/check_layers.sh --self-test
# Prints each offending include as FILE:LINE: and exits 1 when there is one.
set -euo pipefail

check() {
    local root=$1 bad=0 hits
    # rule FOLDER-GLOB PATTERN WHY
    rule() {
        local files=() f
        for f in $1; do [ -f "$f" ] && files+=("$f"); done
        [ ${#files[@]} -gt 0 ] || return 0
        if hits=$(grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*\"($2)" "${files[@]}" /dev/null); then
            printf '%s\n' "$hits" | sed "s|\$|   <- $3|"
            bad=1
        fi
    }
    (
        cd "$root"
        rule "conformance/*.c conformance/*.h" 'cli/|\.\./runtime/cli/|runtime/cli/' \
            "conformance/ must not include from runtime/cli/ (use tool/tool.h)"
        rule "runtime/tool/*.c runtime/tool/*.h" 'cli/|conformance/|\.\./' \
            "runtime/tool/ depends on neither runtime/cli/ nor conformance/"
        rule "runtime/*.c runtime/*.h runtime/backends/*.c runtime/backends/*.h" \
            'cli/|tool/|conformance/|\.\./' \
            "the library includes nothing of the tool or the runner"
        rule "runtime/*.c runtime/*.h" 'backends/' \
            "the generic runtime reaches backends through kiln_backend.h only"
        exit $bad
    )
}

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/conformance" "$tmp/runtime/cli" "$tmp/runtime/tool" "$tmp/runtime/backends"
    printf '#include "tool/tool.h"\n' >"$tmp/conformance/runner.c"
    printf '#include "cli/cli.h"\n' >"$tmp/runtime/cli/main.c"
    printf '#include "tool/tool.h"\n' >"$tmp/runtime/tool/args.c"
    printf '#include "core.h"\n' >"$tmp/runtime/execute.c"
    check "$tmp" >/dev/null || { echo "check_layers: self-test: a clean tree failed"; exit 1; }
    for bad in 'conformance/report.c:#include "cli/cli.h"' \
               'runtime/tool/outfile.c:#include "cli/cli.h"' \
               'runtime/execute.c:#include "backends/cuda_codegen.h"' \
               'runtime/cache.c:  #  include "conformance/conform.h"'; do
        f=${bad%%:*}
        printf '%s\n' "${bad#*:}" >"$tmp/$f"
        if check "$tmp" >/dev/null; then
            echo "check_layers: self-test: '${bad#*:}' in $f was not caught"
            exit 1
        fi
        rm "$tmp/$f"
    done
    echo "check_layers: self-test passed (1 clean tree, 4 bad includes caught)"
    exit 0
fi

root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
if ! check "$root"; then
    echo "check_layers: include direction violated (see docs/runtime.md, \"Source layout\")"
    exit 1
fi
echo "check_layers: include directions hold"
