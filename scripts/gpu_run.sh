#!/usr/bin/env bash
# Run on the GPU machine after `make gpu-bundle` here: the whole GPU job in
# one command (device time is short).  Logs come back in $OUT (or ./gpu-out)
# as summary.log, bench.json, torch.json and logs.tgz (everything).
#   bash scripts/gpu_run.sh [quick|full|final]
#   bash scripts/gpu_run.sh python
#   bash scripts/gpu_run.sh sanitize TOOL SECS [SHARD...]
#   bash scripts/gpu_run.sh stress SECS
#   bash scripts/gpu_run.sh many
#   bash scripts/gpu_run.sh sweep FIRST LAST [N]
#   bash scripts/gpu_run.sh fuzz FIRST COUNT SECS
#   bash scripts/gpu_run.sh only STAGE...   (unit python nvrtc_cache conform
#     many_views matmul serde kdb memcheck racecheck bench torch pyoverhead sweep)
# quick: unit tests + suite + the Python frontend's GPU checks; full: +
#   compute-sanitizer subsets, benchmarks;
# python: only the Python frontend: python/tests/gpu_check.py (torch, CuPy,
#   JAX arrays on the cuda backend, streams, 8 threads; it fails, never
#   skips, without a GPU or those packages) and the unittest suite on ref
#   (without test_install: no make/pkg-config there);
# final: suite + benchmarks only (no unit tests, no sanitizers);
# sanitize: the WHOLE suite under compute-sanitizer TOOL (memcheck or
#   racecheck), cut into $SHARDS (default 32) shards run $JOBS (default 8)
#   at a time, each CK_FORK=no in its own process, until SECS have passed;
#   the shards listed (default: all) run, a summary names the ones that did
#   not finish (run them in the next call);
# stress: the suite as 8 concurrent processes (8 shards) on the one GPU,
#   repeated until SECS have passed;
# many: only the many-view check (issue 11; also a stage of quick/full).
# sweep FIRST LAST [N]: the exhaustive f32 sweep (`kiln conform --category
#   sweep --sweep all`, docs/conformance.md "sweep"): --sweep-shard I/N for
#   I = FIRST..LAST (N default 128), $JOBS (default 16) processes at a time
#   on the one GPU, then the per-op table of scripts/sweep_summary.py
#   (worst ULP and its input); each shard's log is in logs.tgz (sweep/I.log)
#   so the tables of several calls merge with sweep_summary.py --expect-all.
#   The stage `sweep` of `only` is the vectors' sample (2^20 per op, f64
#   included) on cuda.
# fuzz: the fuzz category on cuda (random fusions, docs/conformance.md "The
#   fuzz category") for seeds FIRST..FIRST+COUNT-1, in blocks of
#   $FUZZ_BLOCK (default 250) seeds, $JOBS (default 12) processes at a time
#   (CK_FORK=no each), until SECS have passed; prints "fuzz: CLEAN: N tests
#   (seeds A..B) in T s" or "fuzz: FAILED" with each failure's minimised
#   .kf, and the first seed not run (start the next call there).
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
  # 0.4 s each); one process gives one report (about 80 s on the H200;
  # the stress mode's 8 concurrent shards take about 10 s).
  CK_FORK=no timeout -k 5 "${STAGE_SECS:-300}" $B/kiln conform --backend cuda \
    --report "$OUT/conform-cuda.md" --junit "$OUT/conform-cuda.xml" \
    --results "$OUT/conform-cuda.json"
}
# run_shards NAME SECS N JOBS SHARD... -- CMD...: runs CMD --shard I/N for
# each listed shard, JOBS at a time, all within SECS of now; leaves
# NAME/shard-I.log and NAME/shard-I.rc (no .rc: not finished in time).
run_shards() {
  local name=$1 secs=$2 n=$3 jobs=$4; shift 4
  local shards=()
  while [ "$1" != -- ]; do shards+=("$1"); shift; done
  shift
  mkdir -p "$OUT/$name"
  local deadline=$(( $(date +%s) + secs ))
  for i in "${shards[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    local left=$(( deadline - $(date +%s) ))
    [ "$left" -le 10 ] && break
    ( CK_FORK=no timeout -k 5 "$left" "$@" --shard "$i/$n" \
        --junit "$OUT/$name/shard-$i.xml" > "$OUT/$name/shard-$i.log" 2>&1
      rc=$?; [ $rc -eq 124 ] || [ $rc -eq 137 ] || echo $rc > "$OUT/$name/shard-$i.rc" ) &
  done
  wait
  local done_n=0 bad=() missing=()
  for i in "${shards[@]}"; do
    if [ -f "$OUT/$name/shard-$i.rc" ]; then
      done_n=$((done_n + 1))
      [ "$(cat "$OUT/$name/shard-$i.rc")" = 0 ] || bad+=("$i")
    else missing+=("$i"); fi
  done
  echo "$name: $done_n of ${#shards[@]} shards finished; failed: ${bad[*]:-none}; unfinished: ${missing[*]:-none}"
  grep -h "^100%\|^[0-9]*%: Checks" "$OUT/$name"/shard-*.log | awk -F'Checks: ' '{split($2,a,","); n+=a[1]} END {print "tests run in finished shards: " n}'
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/$name"/shard-*.log | sort | uniq -c
  grep -h "^FAIL " "$OUT/$name"/shard-*.log | head -20
  return 0
}
# The kernel database round trip (docs/conformance.md, "--serde"): the
# whole suite twice, as two processes (each CK_FORK=no: one CUDA start per
# pass) on one fresh database; pass 2 must load every kernel pass 1
# compiled and reproduce every output bit for bit.
conform_serde_cuda() {
  CK_FORK=no timeout -k 5 "${STAGE_SECS:-300}" $B/kiln conform --serde --backend cuda \
    --report "$OUT/conform-serde-cuda.md" --junit "$OUT/conform-serde-cuda.xml"
}
# NVRTC 12.9+ caches compiles in the driver's compute cache under a key
# that leaves out --use_fast_math (docs/backends.md): a process that
# compiles fast_math kernels, then another that compiles the same sources
# without it, on one fresh cache directory.  The second must pass.
nvrtc_cache_check() {
  local d; d=$(mktemp -d /tmp/kiln-cc.XXXX)
  echo "# process 1: the fast_math numerics tests"
  CUDA_CACHE_PATH=$d CK_FORK=no $B/kiln conform --backend cuda --category numerics \
    --filter '^fast |under fast_math' | grep -E '^FAIL|Checks'
  echo "# process 2: the f32 transcendentals without fast_math, same cache"
  CUDA_CACHE_PATH=$d CK_FORK=no $B/kiln conform --backend cuda --category numerics \
    --filter '^(exp|sigmoid|rsqrt|tanh|sin|cos|log|erf|pow) f32' | grep -E '^FAIL|Checks'
  local rc=${PIPESTATUS[0]}
  echo "compute cache afterwards: $(du -sk "$d" | cut -f1) KiB"
  rm -rf "$d"
  return "$rc"
}
python_gpu() { # the Python frontend on the GPU, then its ref suite
  local half=$(( ${STAGE_SECS:-300} / 2 ))
  KILN_LIBRARY=$PWD/$B/libkiln.so PYTHONPATH=$PWD/python \
    timeout -k 5 "$half" python3 python/tests/gpu_check.py
  local rc=$?
  KILN_LIBRARY=$PWD/$B/libkiln.so KILN_BIN=$PWD/$B/kiln PYTHONPATH=$PWD/python \
    timeout -k 5 "$half" python3 -m unittest discover -s python/tests -p 'test_[!i]*.py' || rc=1
  return $rc
}
# Issue 11: segments with many inputs on the GPU against ref.  (1) The
# issue's repro, 17 inputs with input 16 declared [1, ?], and the one-input
# alternating max/sub fusion (its last segment has 21 inputs, input 16 with
# strides [1, 0]): `kiln run` at 512 x 512 on cuda (disable=fallback: every
# segment must be a generated kernel) and on ref, outputs compared
# bitwise.  (2) The many-view numerics vectors (17/33/70 inputs, every
# layout at every position class, past the view maximum) on cuda.
many_views_check() {
  local d rc=0 be=${MV_BACKEND:-cuda} # MV_BACKEND=nvrtc tries it without a GPU
  d=$(mktemp -d /tmp/kiln-mv.XXXX)
  { echo "kiln.fusion 1"
    for i in $(seq 0 15); do echo "%x$i = input f32 [?, ?]"; done
    echo "%x16 = input f32 [1, ?]"
    echo "%s1 = add %x0 %x1"
    for i in $(seq 2 16); do echo "%s$i = add %s$((i - 1)) %x$i"; done
    echo "output %s16"; } > "$d/repro17.kf"
  { echo "kiln.fusion 1"
    echo "%d0 = input f32 [?, ?]"
    for k in $(seq 1 20); do
      echo "%m$k = max %d$((k - 1)) axes=[1] keepdim"
      echo "%d$k = sub %d$((k - 1)) %m$k"
    done
    echo "output %d20"; } > "$d/alt20.kf"
  for f in repro17 alt20; do
    for b in "$be" ref; do
      mkdir -p "$d/$f-$b"
      local extra=()
      [ "$b" = "$be" ] && extra=(--disable fallback)
      if ! $B/kiln run "$d/$f.kf" --random 7 --size 512 --backend "$b" \
          "${extra[@]}" --info --out "$d/$f-$b" > "$d/$f-$b.log" 2>&1; then
        echo "$f on $b FAILED:"; tail -5 "$d/$f-$b.log"; rc=1
      fi
    done
    if cmp -s "$d/$f-$be/out0.npy" "$d/$f-ref/out0.npy"; then
      echo "$f: $be output == ref output, bitwise (512 x 512)"
    else
      echo "$f: $be output DIFFERS from ref"; rc=1
    fi
  done
  echo "# the many-view vectors on $be"
  CK_FORK=no $B/kiln conform --backend "$be" --category numerics \
    --filter 'inputs|alternating' > "$d/conform.log" 2>&1 || rc=1
  grep -E '^FAIL|Checks' "$d/conform.log"
  rm -rf "$d"
  return "$rc"
}
# Issue 13: the matmul contract on the H200.  (1) The matmul and Order
# vectors (docs/numerics.md, "Reductions and matmul") on cuda: every matmul
# vector runs on the three paths (default = cuBLAS, disable=
# matmul_expr_eval = generated, enable=fuse_matmul = generated + epilogue).
# (2) bench/matmul_bound.py: the worst error / (gamma_K P) of each path on
# 4096^3 f32 and bf16 and f16 with K = 4097, all-positive uniform [0, 1).
matmul_check() {
  local rc=0
  CK_FORK=no $B/kiln conform --backend cuda --category numerics \
    --filter 'matmul|narrower than' > "$OUT/matmul-conform.log" 2>&1 || rc=1
  grep -E '^FAIL|PASS on|FAIL on' "$OUT/matmul-conform.log"
  python3 bench/matmul_bound.py --kiln $B/kiln --backend cuda || rc=1
  return "$rc"
}
# The exhaustive f32 sweep, shards FIRST..LAST of N (see the top).
sweep_all_cuda() {
  local first=$1 last=$2 n=$3
  mkdir -p "$OUT/sweep"
  # the pieces that finish within the stage's time are summarised
  seq "$first" "$last" | timeout -k 5 "${STAGE_SECS:-570}" xargs -P "${JOBS:-16}" -I{} sh -c \
    "CK_FORK=no $B/kiln conform --backend cuda --category sweep --filter f32 \
     --sweep all --sweep-shard {}/$n --timeout 600 --tap $OUT/sweep/{}.tap \
     > $OUT/sweep/{}.log 2>&1; echo shard {}/$n rc=\$?"
  python3 scripts/sweep_summary.py "$OUT"/sweep/*.log \
    | tee "$OUT/sweep-summary-$first-$last.txt"
}
# One named stage of quick/full/final (and of `only`).
run_stage() {
  case "$1" in
  unit) stage unit 60 env KILN_TEST_GPU=1 KILN_TEST_PLUGIN=$PWD/$B/plugins/libkiln_test_plugin.so KILN_BIN=$PWD/$B/kiln $B/unit_tests ;;
  python) stage python 200 python_gpu ;;
  nvrtc_cache) stage nvrtc_cache 60 nvrtc_cache_check ;;
  conform) stage conform 420 conform_cuda ;;
  many_views) stage many_views 120 many_views_check ;;
  matmul) stage matmul 240 matmul_check ;;
  sweep) stage sweep 300 env CK_FORK=no $B/kiln conform --backend cuda --category sweep --sweep sample --timeout 600
    echo "# sweep: every FAIL line (the tail above may cut some off)"
    grep -E '^FAIL' "$OUT/sweep.log" ;;
  serde) stage serde 400 conform_serde_cuda ;;
  kdb) stage kdb 120 $B/kiln bench kdb --backend cuda --runs 5 ;;
  memcheck) stage memcheck 70 compute-sanitizer --tool memcheck --error-exitcode 9 --target-processes all $B/kiln conform --backend cuda --category cache.isolation --filter 'nvFuser|fma' --timeout 300 ;;
  racecheck) stage racecheck 60 compute-sanitizer --tool racecheck --error-exitcode 9 --target-processes all $B/kiln conform --backend cuda --category numerics --filter 'sum|max|min|matmul' --shard 1/8 --timeout 300 ;;
  bench) stage bench 110 $B/kiln bench gpu --json "$OUT/bench.json" ;;
  pyoverhead) stage pyoverhead 120 env KILN_LIBRARY=$PWD/$B/libkiln.so python3 bench/python_overhead.py --kiln $B/kiln --json "$OUT/pyoverhead.json" ;;
  torch) stage torch 50 python3 bench/torch_bench.py --kiln-json "$OUT/bench.json" --json "$OUT/torch.json" ;;
  *) echo "gpu_run: unknown stage '$1'"; summary+=("$(printf '%-22s unknown stage' "$1")") ;;
  esac
}
if [ "$MODE" = python ]; then
  stage python 300 python_gpu
elif [ "$MODE" = many ]; then
  stage many_views 120 many_views_check
elif [ "$MODE" = sweep ]; then
  FIRST=${2:?sweep needs FIRST LAST [N]}; LAST=${3:?and LAST}; N=${4:-128}
  stage "sweep-$FIRST-$LAST" 570 sweep_all_cuda "$FIRST" "$LAST" "$N"
  cp "$OUT/sweep-summary-$FIRST-$LAST.txt" "$FINAL/" 2>/dev/null
  cat "$OUT/sweep-summary-$FIRST-$LAST.txt" 2>/dev/null
elif [ "$MODE" = sanitize ]; then
  TOOL=${2:?sanitize needs TOOL (memcheck or racecheck)}; SECS=${3:?and SECS}
  shift 3
  N=${SHARDS:-32}
  list=("$@"); [ ${#list[@]} -eq 0 ] && list=($(seq 1 "$N"))
  extra=(); [ "$TOOL" = memcheck ] && extra=(--leak-check full)
  stage "$TOOL" "$SECS" run_shards "$TOOL" "$SECS" "$N" "${JOBS:-8}" "${list[@]}" -- \
    compute-sanitizer --tool "$TOOL" "${extra[@]}" --error-exitcode 9 \
    $B/kiln conform --backend cuda --timeout 600
elif [ "$MODE" = fuzz ]; then
  FIRST=${2:?fuzz needs FIRST COUNT SECS}; COUNT=${3:?and COUNT}; SECS=${4:?and SECS}
  BLK=${FUZZ_BLOCK:-250}; J=${JOBS:-12}
  t0=$(date +%s); deadline=$(( t0 + SECS )); mkdir -p "$OUT/fuzz"
  s=$FIRST; end=$(( FIRST + COUNT ))
  while [ "$s" -lt "$end" ]; do
    while [ "$(jobs -rp | wc -l)" -ge "$J" ]; do wait -n; done
    left=$(( deadline - $(date +%s) ))
    [ "$left" -le 20 ] && break
    n=$BLK; [ $(( s + n )) -gt "$end" ] && n=$(( end - s ))
    ( CK_FORK=no timeout -k 5 "$left" $B/kiln conform --backend cuda \
        --category fuzz --seed "$s" --count "$n" --timeout 120 \
        --tap "$OUT/fuzz/$s.tap" > "$OUT/fuzz/$s.log" 2>&1
      echo $? > "$OUT/fuzz/$s.rc" ) &
    s=$(( s + n ))
  done
  wait
  fz_ok=0; fz_bad=0; lost=""; first_missing=""
  for f in "$OUT"/fuzz/*.rc; do
    b=$(basename "$f" .rc); rc=$(cat "$f")
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then lost="$lost $b"; continue; fi
    if [ ! -s "$OUT/fuzz/$b.tap" ]; then # a crash ends the one process
      fz_bad=$(( fz_bad + 1 )); echo "fuzz: block $b ended with status $rc and no TAP:"
      tail -n 20 "$OUT/fuzz/$b.log"; continue
    fi
    fz_ok=$(( fz_ok + $(grep -c '^ok ' "$OUT/fuzz/$b.tap") ))
    fz_bad=$(( fz_bad + $(grep -c '^not ok ' "$OUT/fuzz/$b.tap") ))
  done
  for b in $lost; do
    if [ -z "$first_missing" ] || [ "$b" -lt "$first_missing" ]; then first_missing=$b; fi
  done
  [ -z "$first_missing" ] && first_missing=$s
  fz_dt=$(( $(date +%s) - t0 ))
  if [ "$fz_bad" = 0 ]; then
    echo "fuzz: CLEAN: $fz_ok tests (seeds $FIRST..$(( first_missing - 1 )) and any later finished blocks) in $fz_dt s" | tee -a "$OUT/summary.log"
  else
    echo "fuzz: FAILED: $fz_bad of $(( fz_ok + fz_bad )) tests in $fz_dt s" | tee -a "$OUT/summary.log"
    cat "$OUT"/fuzz/*.log | sed -n '/^---- fuzz\//,/^---- end of fuzz seed/p' | head -400 | tee -a "$OUT/summary.log"
    grep -h '^not ok ' "$OUT"/fuzz/*.tap | head -50 | tee -a "$OUT/summary.log"
  fi
  [ -n "$lost" ] && echo "fuzz: blocks not finished (first seeds):$lost" | tee -a "$OUT/summary.log"
  echo "fuzz: next call starts at seed $first_missing" | tee -a "$OUT/summary.log"
elif [ "$MODE" = stress ]; then
  SECS=${2:?stress needs SECS}
  end=$(( $(date +%s) + SECS )); round=0
  while [ $(( end - $(date +%s) )) -gt 70 ]; do
    round=$((round + 1)); left=$(( end - $(date +%s) ))
    stage "stress$round" "$left" run_shards "stress$round" "$left" 8 8 \
      1 2 3 4 5 6 7 8 -- $B/kiln conform --backend cuda
  done
else
  # only: the stages named after the mode, e.g. `gpu_run.sh only unit conform`
  # (device calls are limited to 10 minutes: split a long job over calls)
  if [ "$MODE" = only ]; then shift; list=("$@")
  else
    list=(nvrtc_cache conform many_views serde kdb)
    [ "$MODE" != final ] && list=(unit python "${list[@]}")
    [ "$MODE" = full ] && list+=(memcheck racecheck)
    { [ "$MODE" = full ] || [ "$MODE" = final ]; } && list+=(bench torch)
  fi
  for st in "${list[@]}"; do run_stage "$st"; done
fi
echo "=== summary"; printf '%s\n' "${summary[@]}" | tee -a "$OUT/summary.log"
tar czf "$FINAL/logs.tgz" -C "$OUT" .
for f in summary.log bench.json torch.json pyoverhead.json; do [ -f "$OUT/$f" ] && cp "$OUT/$f" "$FINAL/"; done
echo "logs: $FINAL/logs.tgz"
