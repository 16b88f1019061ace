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
