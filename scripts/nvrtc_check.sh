#!/usr/bin/env bash
# scripts/nvrtc_check.sh BUILD -- `make nvrtc-check`: compile every kernel
# the CUDA code generator produces with NVRTC, without a GPU, and fail on
# any compile error or warning.
#
# Stage 1 (here): the cuda unit suite with the full sweep switched on --
# every op x dtype, every cast pair, sum/max/min over inner, outer and
# mixed axes, matmul standalone / epilogue / fallback, under the default
# options, fast_math + disable=fma with strided 64-bit-indexed views, and
# the lineinfo / PTX (disable=compile_to_sass) / expr_simplify-off / -G
# option sets, each compiled for sm_90 and sm_80.
# Stage 2: `kiln conform --serde --backend nvrtc`, the whole suite, run
# twice through the kernel database (below).
#
# NVRTC that cannot be loaded is a failure, never a silent pass
# (KILN_TEST_NVRTC_REQUIRED).  KILN_NVRTC_PATH selects a libnvrtc.
set -euo pipefail
BUILD=${1:-build}
if [ ! -x "$BUILD/unit_tests" ]; then
    make -j2 BUILD="$BUILD" unit
fi
echo "nvrtc-check: full codegen sweep (sm_90, sm_80) with $BUILD/unit_tests"
KILN_TEST_NVRTC_REQUIRED=1 KILN_TEST_NVRTC_FULL=1 KILN_TEST_FILTER=cuda \
    "$BUILD/unit_tests"
# Stage 2: the whole conformance suite through the compile-only backend:
# every kernel the suite generates, under every option set it uses, for
# sm_90 and sm_80 (results still checked, on ref).  Two shards run side by
# side; identical kernels are compiled once per run (the memo keeps the full
# text and compares it, so a hash collision cannot skip a check).
# Each shard runs with --serde (docs/conformance.md, "--serde"): pass 1 is
# the compile check above and fills a fresh kernel database; pass 2, a new
# process, must load every kernel pass 1 compiled from the database
# (counters) and reproduce every output bit for bit.  The round trip costs
# pass 2 only (about a sixth of pass 1: no NVRTC), so the whole suite runs
# it rather than a selection.
if ls conformance/vectors/*.json >/dev/null 2>&1; then
    memo="$BUILD/nvrtc-memo"
    rm -rf "$memo" && mkdir -p "$memo"
    echo "nvrtc-check: kiln conform --serde --backend nvrtc (2 shards)"
    pids=()
    for i in 1 2; do
        KILN_NVRTC_CHECK_CACHE="$memo" "$BUILD/kiln" conform --serde --backend nvrtc \
            --shard "$i/2" --timeout 300 > "$BUILD/nvrtc-conform-$i.log" 2>&1 &
        pids+=($!)
    done
    rc=0
    for i in 1 2; do
        if ! wait "${pids[$((i-1))]}"; then rc=1; fi
        sed -n -e '/^category  *pass/,/^total /p' -e '/Checks:/p' -e '/^kiln conform: \(PASS\|FAIL\)/p' -e '/^kiln conform --serde/p' \
            "$BUILD/nvrtc-conform-$i.log"
        # evidence: both passes ran, and the round trip held
        if ! grep -q "^kiln conform --serde: pass 1 exit 0, pass 2 exit 0" \
            "$BUILD/nvrtc-conform-$i.log"; then rc=1; fi
    done
    if [ $rc -ne 0 ]; then
        echo "nvrtc-check: FAILED (logs: $BUILD/nvrtc-conform-*.log)"; exit 1
    fi
fi
echo "nvrtc-check: passed"
