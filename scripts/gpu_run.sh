#!/usr/bin/env bash
# Run on the GPU machine after `make gpu-bundle` here: the whole GPU job in
# one command (device time is short).  Logs go to $OUT (or ./gpu-out).
#   bash scripts/gpu_run.sh [quick|full]
# It uses the prebuilt carry/build (Check and jansson linked statically), so
# the GPU machine needs no packages.  Each stage's status is summarised last.
set -u
MODE=${1:-full}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=carry/build
export PYTHONUNBUFFERED=1
summary=()
stage() { # name, command...
  local name=$1; shift
  local t0=$(date +%s)
  echo "=== $name: $*" | tee -a "$OUT/summary.log"
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  summary+=("$(printf '%-22s rc=%-3s %4ss' "$name" "$rc" "$dt")")
  tail -n 25 "$OUT/$name.log"
  return 0
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
stage probe      $B/kiln conform --backend cuda --list
stage unit       env KILN_TEST_PLUGIN=$PWD/$B/plugins/libkiln_test_plugin.so KILN_BIN=$PWD/$B/kiln $B/unit_tests
stage conform    $B/kiln conform --backend cuda --report "$OUT/conform-cuda.md" --junit "$OUT/conform-cuda.xml"
if [ "$MODE" = full ]; then
  stage memcheck   compute-sanitizer --tool memcheck --error-exitcode 9 $B/kiln conform --backend cuda --category cache.isolation --category numerics --timeout 120
  stage racecheck  compute-sanitizer --tool racecheck --error-exitcode 9 $B/kiln conform --backend cuda --category numerics --filter 'sum|max|min|matmul' --timeout 120
  stage bench      $B/kiln bench gpu --json "$OUT/bench.json"
  stage torch      python3 bench/torch_bench.py --json "$OUT/torch.json"
fi
echo "=== summary"; printf '%s\n' "${summary[@]}" | tee -a "$OUT/summary.log"
