#!/usr/bin/env bash
# scripts/examples.sh BUILD -- `make examples`: build the external backend
# plugin of conformance/examples/ the way a third party would, and validate
# it with the conformance suite.
#
#   1. install Kiln (library, headers, kiln.pc, the kiln tool) into a
#      temporary prefix;
#   2. copy the example out of the tree and build it with its own Makefile
#      against that prefix (pkg-config);
#   3. run `kiln conform --backend <the .so>` from the prefix on the
#      categories the example is meant for, and require a pass.
set -eu
BUILD=${1:-build}
ROOT=$(pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-examples.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

echo "examples: installing into $TMP/prefix"
make -s BUILD="$BUILD" install PREFIX="$TMP/prefix" >/dev/null

cp -r "$ROOT/conformance/examples" "$TMP/src"
rm -f "$TMP/src/my_backend.so"
echo "examples: building conformance/examples with its own Makefile"
make -s -C "$TMP/src" KILN_PREFIX="$TMP/prefix"

KILN="$TMP/prefix/bin/kiln"
PLUGIN="$TMP/src/my_backend.so"
# The example generates pointwise f32 add/sub/mul/neg/fma segments and
# leaves the rest to the runtime's reference path; numerics, differential
# and cache isolation exercise it (categories absent from the vectors are
# left out).
cats=()
for c in numerics differential cache.isolation; do
    if grep -l "\"category\": \"$c\"" "$ROOT"/conformance/vectors/*.json \
        >/dev/null 2>&1; then
        cats+=(--category "$c")
    fi
done
if [ ${#cats[@]} -eq 0 ]; then
    echo "examples: no vectors for numerics/differential/cache.isolation yet" >&2
    exit 1
fi
echo "examples: $KILN conform --backend $PLUGIN ${cats[*]} --filter 'add|mul|neg|fma|sub'"
# disable=fallback tests are left out: a partial backend cannot run them
# without the reference path, which is exactly what that option forbids.
"$KILN" conform --backend "$PLUGIN" --vectors "$ROOT/conformance/vectors" \
    "${cats[@]}" --filter 'add|mul|neg|fma|sub' --exclude 'fallback' \
    --report "$TMP/report.md"
echo "examples: the example backend passes"
