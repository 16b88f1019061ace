#!/usr/bin/env bash
# valgrind.sh BUILD -- memory check of the runtime under valgrind (make
# valgrind): `kiln run` on example fusions (--repeat 10: cold and cached
# paths, runtime-allocated outputs) and the runtime unit suites in one
# process (CK_FORK=no).  Any leak or memory error fails the stage.
set -u
build=${1:-build}
kiln="$build/kiln"
tests="$build/unit_tests"
plugin="$(cd "$(dirname "$build/plugins/libkiln_test_plugin.so")" 2>/dev/null && pwd)/libkiln_test_plugin.so"
if ! command -v valgrind >/dev/null; then
  echo "valgrind: FAIL (valgrind is not installed; make deps)"; exit 1
fi
vg=(valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect,possible
    --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1)
fail=0
run() {
  echo "valgrind: $*"
  if ! "${vg[@]}" "$@" >/dev/null; then
    echo "valgrind: FAIL: $*"; fail=1
  fi
}
for kf in examples/softmax.kf examples/relu_mul_add.kf examples/matmul_epilogue.kf; do
  [ -f "$kf" ] || continue
  run "$kiln" run "$kf" --random 1 --repeat 10 --backend ref --info
done
[ -f examples/matmul_epilogue.kf ] &&
  run "$kiln" run examples/matmul_epilogue.kf --random 2 --repeat 3 --backend ref --enable fuse_matmul
# the kernel database: a store, then a load in a new process (the test
# plugin persists kernels), then the maintenance commands
if [ -f "$plugin" ] && [ -f examples/softmax.kf ]; then
  kdb=$(mktemp -d "${TMPDIR:-/tmp}/kiln-vg-kdb.XXXXXX")
  for round in store load; do
    echo "valgrind: kernel database ($round)"
    if ! KILN_CACHE_DIR="$kdb/db" "${vg[@]}" "$kiln" run examples/softmax.kf --random 1 \
         --backend "$plugin" --enable kernel_db --info >"$kdb/$round.out"; then
      echo "valgrind: FAIL: kernel database $round"; fail=1
    fi
  done
  grep -q '"kernel_db": "hit"' "$kdb/load.out" || { echo "valgrind: FAIL: no database hit"; fail=1; }
  for sub in list stats verify clear; do
    run "$kiln" cache "$sub" --dir "$kdb/db"
  done
  rm -rf "$kdb"
fi
if [ -x "$tests" ]; then
  # the runtime-core suites (fault loops included) in one process
  for suite in execute cache plugin; do
    echo "valgrind: unit suite $suite (CK_FORK=no)"
    if ! CK_FORK=no KILN_TEST_FILTER=$suite KILN_TEST_PLUGIN="$plugin" \
         "${vg[@]}" "$tests" >/dev/null; then
      echo "valgrind: FAIL: unit suite $suite"; fail=1
    fi
  done
fi
if [ $fail -ne 0 ]; then
  echo "valgrind: FAIL"; exit 1
fi
echo "valgrind: PASS (no leaks, no memory errors)"
