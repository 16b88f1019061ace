#!/usr/bin/env bash
# scripts/mutants.sh BUILD -- prove that the conformance suite has teeth
# (`make mutants`; docs/conformance.md, "The mutant check").
#
#  (a) the real backends usable here (ref always, with --strict: it claims
#      the whole contract; cuda/nvrtc when available) must pass the whole
#      suite;
#  (b) every mutant conformance/mutants/NAME.patch (one deliberate defect
#      each; conformance/mutants/README.md) must FAIL at least one test in
#      one of the categories its header names ("Catches:").  `make
#      mutants-build` has built it (scripts/build_mutant.sh): "Kind:
#      backend" is the plugin BUILD/mutants/NAME.so, run by BUILD/kiln;
#      "Kind: runtime" is the tool BUILD/mutants/NAME/kiln, run on ref;
#      "Kind: serde" (a kernel-database defect) is that tool run with
#      --serde on nvrtc, on the tests whose comment says "pass 1".
# Mutants run only the categories that should catch them, to stay fast.
# Prints a table, with the categories that caught each mutant, and exits 1
# unless every mutant is built and caught and the real backends pass.
# Category lists travel as space-separated words and are split on purpose.
# shellcheck disable=SC2086
set -u
BUILD=${1:-build}
KILN="$BUILD/kiln"
VECTORS=${KILN_VECTORS:-conformance/vectors}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kiln-mutants.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$KILN" ]; then
    echo "mutants: $KILN not built (run make first)" >&2
    exit 1
fi

MUTANTS=${MUTANTS:-conformance/mutants}

rows=()
status=0

row() { # subject expected failed verdict
    rows+=("$(printf '%-32s %-34s %6s   %s' "$1" "$2" "$3" "$4")")
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

# failures LOG CATEGORY: failed tests of LOG.tap in that category.
failures() {
    grep -cE "^not ok [0-9]+ - $2/" "$1.tap" 2>/dev/null || true
}

present_categories() {
    for f in "$VECTORS"/*.json; do
        [ -f "$f" ] || continue
        sed -n 's/^ *"category": "\(.*\)",*$/\1/p' "$f" | head -1
    done
}
# fuzz is made by the runner itself (random fusions from --seed/--count,
# conformance/fuzz.c): always present.
PRESENT=" $(present_categories | tr '\n' ' ') fuzz "

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
rc=$(SUITE_EXTRA=--strict run_suite "$KILN" ref "$log")
real_row ref "(every category passes, --strict)" "$log" "$rc"
for be in cuda nvrtc; do
    log="$TMP/$be"
    # available here?  --allow-unavailable makes "not available" exit 77
    # (with the reason on stderr) instead of 1; one numerics test runs.
    prc=0
    "$KILN" conform --backend "$be" --vectors "$VECTORS" --category numerics \
        --shard 1/100000 --allow-unavailable >"$log.probe" 2>&1 || prc=$?
    if [ "$prc" -eq 77 ]; then
        row "$be (real backend)" "$(sed -n 's/^.*is not available here: //p' "$log.probe" | head -1 | cut -c1-34)" "-" "not available here"
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

# judge SUBJECT KILN BACKEND EXPECTED...: a mutant must fail in EXPECTED;
# the row names the categories that caught it, with their failed tests.
judge() {
    local subject=$1 kiln=$2 backend=$3
    shift 3
    local want=${WANT:-$*}
    want=${want//|/ }
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
    rc=$(CK_FORK=no run_suite "$kiln" "$backend" "$log" $cats)
    if [ "$rc" -gt 2 ] || [ ! -s "$log.tap" ]; then
        rm -f "$log.tap"
        run_suite "$kiln" "$backend" "$log" $cats >/dev/null
    fi
    # only the categories the header names decide; the others run for
    # information (fuzz, added to every backend and runtime mutant)
    local n total=0 by=""
    for c in $cats; do
        n=$(failures "$log" "$c")
        case " $want " in
        *" $c "*)
            if [ "$n" -gt 0 ]; then
                total=$((total + n))
                by="$by${by:+, }$c $n"
            fi ;;
        *) by="$by${by:+, }(also $c $n)" ;;
        esac
    done
    # a fuzz failure must come with its minimised .kf and replay commands
    local nf
    nf=$(failures "$log" fuzz)
    if [ "$nf" -gt 0 ] && ! grep -q '^---- end of fuzz seed' "$log"; then
        row "$subject" "${want// /|}" "$nf" "FUZZ FAILURE WITHOUT ITS .kf REPORT"
        status=1
        return
    fi
    if [ "$total" -gt 0 ]; then
        row "$subject" "${want// /|}" "$total" "caught by $by"
    else
        row "$subject" "${want// /|}" "0" "NOT CAUGHT${by:+ $by}"
        status=1
        echo "---- $subject run (tail) ----"; tail -n 15 "$log"
    fi
}

# ----------------------------------------------------------- (b) mutants
n_mutants=0
for patch in "$MUTANTS"/*.patch; do
    [ -f "$patch" ] || continue
    n_mutants=$((n_mutants + 1))
    if ! header=$(bash scripts/build_mutant.sh --header "$patch" 2>&1); then
        row "$(basename "$patch")" "-" "-" "BAD HEADER: $header"
        status=1
        continue
    fi
    read -r name kind cats <<<"$header"
    extra=""
    if [ "$kind" = backend ]; then
        bin=$KILN backend=$BUILD/mutants/$name.so built=$BUILD/mutants/$name.so
    elif [ "$kind" = serde ]; then
        bin=$BUILD/mutants/$name/kiln backend=nvrtc built=$bin
        extra="--serde --filter pass.1"
    else
        bin=$BUILD/mutants/$name/kiln backend=ref built=$bin
    fi
    if [ ! -f "$built" ]; then
        row "$name ($kind)" "$cats" "-" "NOT BUILT (its make mutants-build failed)"
        status=1
        continue
    fi
    # Every backend and runtime mutant also runs the fuzz category (its
    # default seed and count): the table shows what the random fusions
    # catch besides the categories the header names.
    run=${cats//|/ }
    if [ "$kind" != serde ] && [ -n "${run##*fuzz*}" ]; then
        run="$run fuzz"
    fi
    SUITE_EXTRA="$extra" WANT="$cats" judge "$name ($kind)" "$bin" "$backend" $run
done
if [ "$n_mutants" = 0 ]; then
    row "(no mutants)" "-" "-" "FAIL: no $MUTANTS/*.patch"
    status=1
fi

echo
printf '%-32s %-34s %6s   %s\n' "mutant" "expected category" "failed" "verdict"
printf '%s\n' "--------------------------------------------------------------------------------------------"
printf '%s\n' "${rows[@]}"
echo
if [ "$status" = 0 ]; then
    echo "mutants: every mutant caught; the real backends pass"
else
    echo "mutants: FAILED (a mutant survived or was not built, or a real backend failed)"
fi
exit "$status"
