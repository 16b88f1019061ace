#!/usr/bin/env bash
# scripts/examples.sh BUILD -- `make examples`: the outside implementer's
# recipe of docs/conformance.md ("Validating a third-party backend"), run
# exactly as written there, from `/`, against a temporary prefix:
#
#   1. `make install` of this tree into the prefix (bin/kiln, the suite in
#      share/kiln, the library, headers, kiln.pc);
#   2. the example backend conformance/examples/my_backend.c copied out of
#      the tree and built with its own Makefile against the prefix;
#   3. `kiln conform --backend my_backend.so` (a plugin named without a
#      slash, from its directory), with a results file and a report;
#   4. `kiln conform --check-results` of that results file.
#
# Then it checks what the recipe printed: the run passes, and the per op x
# dtype table shows the example's five f32 ops (add, sub, mul, neg, fma)
# with native segments and the ops it leaves to the fallback (exp, log)
# with none and no ULP figure.
set -eu
BUILD=${1:-build}
ROOT=$(pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-examples.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# shellcheck disable=SC2016 # the $ of these sed addresses is sed's
recipe=$(sed -n '/<!-- recipe:begin -->/,/<!-- recipe:end -->/p' docs/conformance.md |
         sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
if [ -z "$recipe" ]; then
    echo "examples: no recipe between <!-- recipe:begin/end --> in docs/conformance.md" >&2
    exit 1
fi
echo "examples: running the recipe of docs/conformance.md from / (PREFIX=$TMP/prefix)"
rc=0
(cd / && env KILN_SRC="$ROOT" PREFIX="$TMP/prefix" MAKEFLAGS= BUILD="$BUILD" \
    bash -euo pipefail -c "$recipe") >"$TMP/recipe.log" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
    tail -n 40 "$TMP/recipe.log"
    echo "examples: FAILED: the recipe exited $rc" >&2
    exit 1
fi
fail=0
need() { # PATTERN WHAT: a line of the recipe's output must match
    if ! grep -Eq "$1" "$TMP/recipe.log"; then
        echo "examples: FAILED: $2 (no line matches '$1')" >&2
        fail=1
    fi
}
# columns: category op dtype pass fail unsupp skip invalid native fallback max-ulp
for op in add sub mul neg fma; do
    need "^numerics +$op +f32 +[1-9][0-9]* +0 +[0-9]+ +[0-9]+ +0 +[1-9][0-9]* +[0-9]+ +0\$" \
        "numerics $op f32 ran natively and passed"
done
for op in exp log; do
    need "^numerics +$op +f32 +0 +0 +[1-9][0-9]* +0 +0 +0 +[1-9][0-9]* +-\$" \
        "numerics $op f32 ran only on the fallback (unsupported, no ULP figure)"
done
need "^kiln conform: PASS on " "the example passes"
need "^check-results: OK: " "its results file checks"
if [ "$fail" != 0 ]; then
    tail -n 60 "$TMP/recipe.log"
    exit 1
fi
grep -E "^(kiln conform: (PASS|backend)|check-results: OK)" "$TMP/recipe.log"
grep -E "^numerics +(add|sub|mul|neg|fma|exp|log) +f32 " "$TMP/recipe.log"
echo "examples: the recipe runs from / and the example backend passes"
