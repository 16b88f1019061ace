#!/usr/bin/env bash
# Run on the GPU machine after `make gpu-bundle` here: the whole GPU job in
# one command (device time is short).  Logs come back in $OUT (or ./gpu-out)
# as summary.log, bench.json, torch.json and logs.tgz (everything).
#   bash scripts/gpu_run.sh [quick|full|final]
# quick: unit tests + suite; full: + compute-sanitizer, benchmarks;
# final: suite + benchmarks only (no unit tests, no sanitizers).
# It uses the prebuilt carry/build (Check and jansson linked statically), so
# the GPU machine needs no packages.  Each stage's status is summarised last.
set -u
MODE=${1:-full}
FINAL=${OUT:-$PWD/gpu-out}   # what comes back: summary + one tarball
OUT=$(mktemp -d /tmp/kiln-gpu.XXXX)
mkdir -p "$FINAL"
B=carry/build
export PYTHONUNBUFFERED=1
summary=()
stage() { # name, seconds, command...  (the command is killed after seconds)
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s)
  echo "=== $name: $*" | tee -a "$OUT/summary.log"
  if [ "$(type -t "$1")" = function ]; then
    STAGE_SECS=$secs "$@" > "$OUT/$name.log" 2>&1
  else
    timeout -k 5 "$secs" "$@" > "$OUT/$name.log" 2>&1
  fi
  local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  summary+=("$(printf '%-22s rc=%-3s %4ss' "$name" "$rc" "$dt")")
  tail -n 25 "$OUT/$name.log"
  return 0
}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
conform_cuda() { # the whole suite on cuda in ONE process (CK_FORK=no):
  # a forked child per test would start CUDA again for every test (about
  # 0.4 s each), and several processes on one GPU were slower than one
  # (2026-12-02: 8 shards did not finish in 120 s; one process took 124 s).
  CK_FORK=no timeout -k 5 "${STAGE_SECS:-300}" $B/kiln conform --backend cuda \
    --report "$OUT/conform-cuda.md" --junit "$OUT/conform-cuda.xml"
}
[ "$MODE" != final ] && stage unit 60       env KILN_TEST_PLUGIN=$PWD/$B/plugins/libkiln_test_plugin.so KILN_BIN=$PWD/$B/kiln $B/unit_tests
stage conform 200   conform_cuda
if [ "$MODE" = full ]; then
  stage memcheck 70   compute-sanitizer --tool memcheck --error-exitcode 9 --target-processes all $B/kiln conform --backend cuda --category cache.isolation --filter 'nvFuser|fma' --timeout 300
  stage racecheck 60  compute-sanitizer --tool racecheck --error-exitcode 9 --target-processes all $B/kiln conform --backend cuda --category numerics --filter 'sum|max|min|matmul' --shard 1/8 --timeout 300
fi
if [ "$MODE" = full ] || [ "$MODE" = final ]; then
  stage bench 110     $B/kiln bench gpu --json "$OUT/bench.json"
  stage torch 50      python3 bench/torch_bench.py --kiln-json "$OUT/bench.json" --json "$OUT/torch.json"
fi
echo "=== summary"; printf '%s\n' "${summary[@]}" | tee -a "$OUT/summary.log"
tar czf "$FINAL/logs.tgz" -C "$OUT" .
for f in summary.log bench.json torch.json; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$FINAL/"; done
echo "logs: $FINAL/logs.tgz"
