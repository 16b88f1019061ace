#!/usr/bin/env bash
# scripts/mutants.sh BUILD -- prove that the conformance suite has teeth
# (`make mutants`; docs/conformance.md, "The mutant check").
#
#  (a) the real backends usable here (ref always; cuda/nvrtc when usable)
#      must pass the whole suite;
#  (b) every backend mutant BUILD/mutants/NAME.so (conformance/mutants/*.c,
#      one deliberate defect each) must FAIL at least one test in the
#      category its defect belongs to;
#  (c) every runtime mutant (the runtime built with -DKILN_MUTANT_X) must
#      fail at least one test in its category too;
#  (d) every kernel-database mutant must fail `kiln conform --serde` on the
#      nvrtc backend (the database tests of cache.isolation).
# Mutants run only the categories that should catch them, to stay fast.
# Prints a table and exits 1 unless every mutant is caught and the real
# backends pass.
# Category lists travel as space-separated words and are split on purpose.
# shellcheck disable=SC2086
set -u
BUILD=${1:-build}
KILN="$BUILD/kiln"
VECTORS=${KILN_VECTORS:-conformance/vectors}
JOBS=${JOBS:-2}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-mutants.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$KILN" ]; then
    echo "mutants: $KILN not built (run make first)" >&2
    exit 1
fi

# name | expected categories (|-separated; the first failure in any counts)
BACKEND_MUTANTS="
contract_always|cache.isolation|numerics
max_drops_nan|numerics
naive_f32_sum|numerics
tail_unwritten|numerics
"
RUNTIME_MUTANTS="
IGNORE_KERNEL_OPTIONS|cache.isolation
DROP_EXEC_OPTIONS|options.precedence|cache.isolation
LEAK_EXEC_OPTIONS|options.precedence
"
# judged with --serde on nvrtc, on the tests whose comment says "pass 1"
SERDE_MUTANTS="
KDB_IGNORE_OPTIONS|cache.isolation
"

rows=()
status=0

row() { # subject expected failed verdict
    rows+=("$(printf '%-36s %-34s %6s   %s' "$1" "$2" "$3" "$4")")
}

# run_suite KILN BACKEND LOG [CATEGORY...]: runs the suite, leaves the TAP
# stream in LOG.tap and the text in LOG; echoes the exit status.
run_suite() {
    local kiln=$1 backend=$2 log=$3
    shift 3
    local cats=()
    for c in "$@"; do cats+=(--category "$c"); done
    # shellcheck disable=SC2086
    "$kiln" conform --backend "$backend" --vectors "$VECTORS" --timeout 30 \
        ${cats[@]+"${cats[@]}"} ${SUITE_EXTRA:-} --tap "$log.tap" >"$log" 2>&1
    echo $?
}

# failures LOG CATEGORY...: failed tests of LOG.tap in those categories.
failures() {
    local log=$1
    shift
    local pat
    pat=$(printf '%s|' "$@")
    pat=${pat%|}
    grep -cE "^not ok [0-9]+ - ($pat)/" "$log.tap" 2>/dev/null || true
}

present_categories() {
    for f in "$VECTORS"/*.json; do
        [ -f "$f" ] || continue
        sed -n 's/^ *"category": "\(.*\)",*$/\1/p' "$f" | head -1
    done
}
PRESENT=" $(present_categories | tr '\n' ' ') "

# Keep only the categories that exist in the vectors.
existing() {
    local out=()
    for c in "$@"; do
        case "$PRESENT" in *" $c "*) out+=("$c") ;; esac
    done
    echo "${out[@]:-}"
}

# ------------------------------------------------------------ (a) real ones
# real_row BACKEND WHAT LOG RC: the row of a real backend's run; a failed
# run fails this script and shows its tail.
real_row() {
    local nf
    nf=$(grep -c '^not ok' "$3.tap" 2>/dev/null || true)
    if [ "$4" = 0 ]; then
        row "$1 (real backend)" "$2" "$nf" "pass"
    else
        row "$1 (real backend)" "$2" "$nf" "FAIL"
        status=1
        echo "---- $1 run (tail) ----"; tail -n 30 "$3"
    fi
}
log="$TMP/ref"
rc=$(run_suite "$KILN" ref "$log")
real_row ref "(every category passes)" "$log" "$rc"
for be in cuda nvrtc; do
    log="$TMP/$be"
    # usable? a run of one test says SKIP with the reason when it is not
    "$KILN" conform --backend "$be" --vectors "$VECTORS" --shard 1/100000 \
        >"$log.probe" 2>&1
    if grep -q '^SKIP' "$log.probe"; then
        row "$be (real backend)" "$(sed -n 's/^SKIP[^:]*: //p' "$log.probe" | head -1 | cut -c1-34)" "-" "not usable here"
        continue
    fi
    # Device/NVRTC backends compile every kernel afresh in each test's
    # process, so they run in one process (CK_FORK=no; a crash shows as a
    # failed run), and nvrtc, which compiles each test's kernels with NVRTC
    # (~0.2 s a test on two cores), on a deterministic tenth of the suite;
    # `kiln conform --backend nvrtc` runs all of it.
    extra=""
    what="(every category passes)"
    if [ "$be" = nvrtc ]; then
        extra="--shard 1/10"
        what="(shard 1/10 passes)"
    fi
    rc=$(CK_FORK=no SUITE_EXTRA="$extra" run_suite "$KILN" "$be" "$log")
    real_row "$be" "$what" "$log" "$rc"
done

# judge SUBJECT KILN BACKEND EXPECTED...: a mutant must fail in EXPECTED.
judge() {
    local subject=$1 kiln=$2 backend=$3
    shift 3
    local want="$*"
    local cats
    cats=$(existing "$@")
    if [ -z "$cats" ]; then
        row "$subject" "${want// /|}" "-" "NOT CAUGHT (no vectors for it)"
        status=1
        return
    fi
    local log
    log="$TMP/m-$(basename "$subject")"
    # Mutants run in one process (CK_FORK=no: several times faster); if
    # the mutant crashes that process, the run is repeated in fork mode,
    # where a crash fails one test.
    local rc
    # shellcheck disable=SC2086
    rc=$(CK_FORK=no run_suite "$kiln" "$backend" "$log" $cats)
    if [ "$rc" -gt 2 ] || [ ! -s "$log.tap" ]; then
        rm -f "$log.tap"
        # shellcheck disable=SC2086
        run_suite "$kiln" "$backend" "$log" $cats >/dev/null
    fi
    # shellcheck disable=SC2086
    local n
    n=$(failures "$log" $cats)
    if [ "$n" -gt 0 ]; then
        row "$subject" "${want// /|}" "$n" "caught"
    else
        row "$subject" "${want// /|}" "0" "NOT CAUGHT"
        status=1
        echo "---- $subject run (tail) ----"; tail -n 15 "$log"
    fi
}

# ------------------------------------------------------ (b) backend mutants
while IFS='|' read -r name cats; do
    [ -n "$name" ] || continue
    so="$BUILD/mutants/$name.so"
    if [ ! -f "$so" ]; then
        row "$name.so" "$cats" "-" "MISSING ($so not built)"
        status=1
        continue
    fi
    judge "$name.so" "$KILN" "$so" ${cats//|/ }
done <<<"$BACKEND_MUTANTS"
# Mutants present but not in the list above: any failure catches them.
for so in "$BUILD"/mutants/*.so; do
    [ -f "$so" ] || continue
    name=$(basename "$so" .so)
    case "$BACKEND_MUTANTS" in *"$name|"*) continue ;; esac
    judge "$name.so" "$KILN" "$so" $PRESENT
done

# ------------------------------------------------------ (c) runtime mutants
# A mutant build starts from copies of BUILD's objects; only the objects of
# sources that mention the mutant's macro are rebuilt with it.
judge_runtime() { # MACRO BACKEND CATEGORY...
    local macro=$1 backend=$2
    shift 2
    local cats="$*"
    local lower
    lower=$(echo "$macro" | tr '[:upper:]' '[:lower:]')
    mb="$BUILD/mut-$lower"
    srcs=$(grep -l "KILN_MUTANT_$macro" runtime/*.c runtime/backends/*.c 2>/dev/null)
    if [ -z "$srcs" ]; then
        row "KILN_MUTANT_$macro" "$cats" "-" "MISSING (no source uses it)"
        status=1
        return
    fi
    mkdir -p "$mb"
    if [ -d "$BUILD/obj" ] && [ ! -d "$mb/obj" ]; then
        cp -pr "$BUILD/obj" "$mb/obj"
    fi
    for s in $srcs; do
        rm -f "$mb/obj/${s%.c}.o"
    done
    if ! make -s -j"$JOBS" BUILD="$mb" EXTRA_CFLAGS="-DKILN_MUTANT_$macro" cli \
        >"$TMP/build-$lower.log" 2>&1; then
        row "KILN_MUTANT_$macro" "$cats" "-" "BUILD FAILED"
        status=1
        tail -n 20 "$TMP/build-$lower.log"
        return
    fi
    judge "KILN_MUTANT_$macro" "$mb/kiln" "$backend" $cats
}
while IFS='|' read -r macro cats; do
    [ -n "$macro" ] || continue
    judge_runtime "$macro" ref ${cats//|/ }
done <<<"$RUNTIME_MUTANTS"

# ---------------------------------------------- (d) kernel-database mutants
while IFS='|' read -r macro cats; do
    [ -n "$macro" ] || continue
    SUITE_EXTRA="--serde --filter pass.1" judge_runtime "$macro" nvrtc ${cats//|/ }
done <<<"$SERDE_MUTANTS"

echo
printf '%-36s %-34s %6s   %s\n' "mutant" "expected category" "failed" "verdict"
printf '%s\n' "--------------------------------------------------------------------------------------------"
printf '%s\n' "${rows[@]}"
echo
if [ "$status" = 0 ]; then
    echo "mutants: every mutant caught; the real backends pass"
else
    echo "mutants: FAILED (a mutant survived, is missing, or a real backend failed)"
fi
exit "$status"
