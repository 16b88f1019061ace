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
# Stage 2 (KILN_NVRTC_CONFORM=1, once the runner knows the "nvrtc" backend):
# `kiln conform --backend nvrtc`.
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
if [ -x "$BUILD/kiln" ] && "$BUILD/kiln" conform --help 2>&1 | grep -q -- "--backend"; then
    if ls conformance/vectors/*.json >/dev/null 2>&1 && [ "${KILN_NVRTC_CONFORM:-0}" = 1 ]; then
        echo "nvrtc-check: kiln conform --backend nvrtc"
        "$BUILD/kiln" conform --backend nvrtc
    fi
fi
echo "nvrtc-check: passed"
