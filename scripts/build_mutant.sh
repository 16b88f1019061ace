#!/usr/bin/env bash
# scripts/build_mutant.sh -- build one conformance mutant from its patch
# (conformance/mutants/README.md; `make mutants-build` runs it per patch).
#
#   scripts/build_mutant.sh PATCH           build the mutant
#   scripts/build_mutant.sh --header PATCH  check the header only and print
#                                           "NAME KIND CATCHES" (mutants.sh)
#
# A mutant is conformance/mutants/NAME.patch: a header (Mutant, Kind,
# Catches, Defect) and a unified diff against the tree, git-style a/ b/
# paths.  The build copies the files the patch touches into
# BUILD/mutants/NAME/src, applies the patch there with no fuzz (a hunk whose
# context no longer matches exactly fails the build, naming the mutant),
# compiles the patched sources, and links them with the normal build's other
# objects (BUILD/obj, so `make` must have run):
#   Kind: backend -> BUILD/mutants/NAME.so, a plugin exporting only
#                    kiln_backend_entry (conformance/mutants/entry.c) that
#                    returns the patched ref backend as "mutant_NAME";
#   Kind: runtime -> BUILD/mutants/NAME/kiln, the patched kiln tool;
#   Kind: serde   -> built as runtime; mutants.sh judges it with --serde on
#                    the nvrtc backend (a kernel-database defect).
# A patch that touches a header mirrors every source and header of the
# runtime and the conformance runner and recompiles all of them, since any
# of them may include it.
#
# The Makefile passes its own settings in the environment: BUILD, CC,
# CFLAGS, LDFLAGS, SYSLIBS, STATIC_DEPS, LIB_SRC (libkiln's sources),
# CLI_SRC (the kiln tool's other sources), JOBS.
# Word lists (flags, file lists) are split on purpose.
# shellcheck disable=SC2086
set -euo pipefail

die() {
    echo "build_mutant: $*" >&2
    exit 1
}

mode=build
if [ "${1:-}" = --header ]; then
    mode=header
    shift
fi
[ $# -eq 1 ] || die "usage: scripts/build_mutant.sh [--header] conformance/mutants/NAME.patch"
PATCH=$1
[ -f "$PATCH" ] || die "$PATCH: no such file"
file_name=$(basename "$PATCH" .patch)

# ------------------------------------------------------------------ header
# The header is every line before the diff (`diff `, `--- ` or `Index:`);
# `patch` ignores it.  Fields are "Word: value"; an indented line continues
# the field above it.
m_name="" m_kind="" m_catches="" m_defect="" field=""
while IFS= read -r line; do
    case "$line" in
    "diff "* | "--- "* | "Index:"*) break ;;
    "" | "#"*) field="" ;;
    [[:space:]]*)
        [ "$field" = Defect ] && m_defect="$m_defect ${line#"${line%%[![:space:]]*}"}"
        ;;
    *:*)
        field=${line%%:*}
        value=${line#*:}
        value=${value#"${value%%[![:space:]]*}"}
        value=${value%"${value##*[![:space:]]}"}
        case "$field" in
        Mutant) m_name=$value ;;
        Kind) m_kind=$value ;;
        Catches) m_catches=${value// /} ;;
        Defect) m_defect=$value ;;
        *) die "$PATCH: unknown header field '$field' (Mutant, Kind, Catches, Defect)" ;;
        esac
        ;;
    *) die "$PATCH: header line '$line' is not 'Field: value'" ;;
    esac
done <"$PATCH"
[ -n "$m_name" ] || die "$PATCH: header has no 'Mutant:' line"
[ "$m_name" = "$file_name" ] ||
    die "$PATCH: 'Mutant: $m_name' does not match the file name ($file_name)"
[[ "$m_name" =~ ^[a-z][a-z0-9_]*$ ]] ||
    die "$PATCH: mutant name '$m_name' is not [a-z][a-z0-9_]*"
case "$m_kind" in
backend | runtime | serde) ;;
*) die "$m_name: 'Kind: $m_kind' is not backend, runtime or serde" ;;
esac
[[ "$m_catches" =~ ^[a-z0-9_.]+(\|[a-z0-9_.]+)*$ ]] ||
    die "$m_name: 'Catches: $m_catches' is not a |-separated list of categories"
[ -n "$m_defect" ] || die "$m_name: header has no 'Defect:' line"

if [ "$mode" = header ]; then
    echo "$m_name $m_kind $m_catches"
    exit 0
fi

# ------------------------------------------------------------ touched files
BUILD=${BUILD:-build}
CC=${CC:-cc}
JOBS=${JOBS:-2}
: "${CFLAGS:?set by the Makefile (make mutants-build)}"
: "${LIB_SRC:?set by the Makefile (make mutants-build)}"
: "${CLI_SRC:?set by the Makefile (make mutants-build)}"
LDFLAGS=${LDFLAGS:-} SYSLIBS=${SYSLIBS:-} STATIC_DEPS=${STATIC_DEPS:-}

if [ "$m_kind" = backend ]; then
    set_src=$LIB_SRC          # what the plugin is built from
else
    set_src="$LIB_SRC $CLI_SRC"
fi
in_list() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }

# "--- a/P" followed by "+++ b/P": the files of the diff.
touched=()
prev=""
while IFS= read -r line; do
    if [[ "$prev" == "--- "* && "$line" == "+++ "* ]]; then
        old=${prev#--- }
        old=${old%%$'\t'*}
        new=${line#+++ }
        new=${new%%$'\t'*}
        [[ "$old" == a/* && "$new" == b/* ]] ||
            die "$m_name: '$prev' / '$line': the patch must use git-style a/ b/ paths (git diff)"
        [ "${old#a/}" = "${new#b/}" ] ||
            die "$m_name: the patch renames, creates or deletes ${old#a/}; a mutant only edits existing files"
        f=${new#b/}
        [ -f "$f" ] || die "$m_name: the patch edits $f, which is not in the tree"
        if [[ "$f" == *.h ]]; then
            [[ "$f" == runtime/* || ("$m_kind" != backend && "$f" == conformance/*) ]] ||
                die "$m_name: $f is not a header of the $m_kind mutant's sources"
        else
            in_list "$f" "$set_src" ||
                die "$m_name: $f is not a C source a $m_kind mutant is built from (backend: libkiln; runtime: libkiln and the kiln tool)"
        fi
        in_list "$f" "${touched[*]:-}" || touched+=("$f")
    fi
    prev=$line
done <"$PATCH"
[ ${#touched[@]} -gt 0 ] || die "$m_name: $PATCH contains no diff"

# -------------------------------------------------------------- apply it
MB=$BUILD/mutants/$m_name
SRC=$MB/src
if [ "$m_kind" = backend ]; then
    OUT=$BUILD/mutants/$m_name.so
else
    OUT=$MB/kiln
fi
rm -rf "$SRC" "$MB/obj" "$OUT" "$BUILD/mutants/$m_name.so" "$MB/kiln"
mkdir -p "$SRC" "$MB/obj"

header_touched=0
for f in "${touched[@]}"; do
    [[ "$f" == *.h ]] && header_touched=1
done
if [ "$header_touched" = 1 ]; then
    # A header may be included from anywhere (and from a header, which
    # looks beside itself first): mirror every source and header.
    read -ra compile <<<"$set_src"
    mapfile -t copy < <(find runtime conformance -name '*.h' -not -path 'conformance/mutants/*' | sort)
    copy+=("${compile[@]}")
else
    copy=("${touched[@]}")
    compile=("${touched[@]}")
fi
for f in "${copy[@]}"; do
    mkdir -p "$SRC/$(dirname "$f")"
    cp -p "$f" "$SRC/$f"
done

# No fuzz: every context line must match exactly (an offset, the same
# lines found elsewhere in the file, is accepted).  --forward refuses a
# patch that looks already applied.
if ! log=$(patch -p1 --forward --batch --fuzz=0 --no-backup-if-mismatch \
    -r - -d "$SRC" <"$PATCH" 2>&1); then
    printf '%s\n' "$log" >&2
    die "$m_name: $PATCH NO LONGER APPLIES to the tree (the code it changes moved or changed); regenerate it (conformance/mutants/README.md)"
fi
changed=0
for f in "${touched[@]}"; do
    cmp -s "$f" "$SRC/$f" || changed=1
done
[ "$changed" = 1 ] || die "$m_name: $PATCH changes nothing"

# ------------------------------------------------------------ compile it
if [ "$header_touched" = 1 ]; then
    inc=(-I"$SRC/runtime/include" -I"$SRC/runtime")
else
    inc=()
fi
objects_of() { # SOURCES...: the objects to link, patched ones from $MB/obj
    for s in "$@"; do
        if in_list "$s" "${compile[*]}"; then
            echo "$MB/obj/${s%.c}.o"
        else
            [ -f "$BUILD/obj/${s%.c}.o" ] ||
                die "$m_name: $BUILD/obj/${s%.c}.o is missing (run make first)"
            echo "$BUILD/obj/${s%.c}.o"
        fi
    done
}
running=0
for s in "${compile[@]}"; do
    [[ "$s" == *.c ]] || continue
    o=$MB/obj/${s%.c}.o
    mkdir -p "$(dirname "$o")"
    # Without a mirror, -iquote adds the source's own folder in the tree,
    # for the headers beside it that were not copied.
    iq=()
    [ "$header_touched" = 1 ] || iq=(-iquote "$(dirname "$s")")
    $CC "${inc[@]}" $CFLAGS "${iq[@]}" -fPIC -c "$SRC/$s" -o "$o" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n || die "$m_name: the patched sources do not compile"
        running=$((running - 1))
    fi
done
while [ "$running" -gt 0 ]; do
    wait -n || die "$m_name: the patched sources do not compile"
    running=$((running - 1))
done

# --------------------------------------------------------------- link it
lib_objs=$(objects_of $LIB_SRC)
rm -f "$MB/libkiln.a"
ar rcs "$MB/libkiln.a" $lib_objs
if [ "$m_kind" = backend ]; then
    # Like tests/plugins: libkiln's objects linked privately (all hidden).
    $CC "${inc[@]}" $CFLAGS -fPIC -shared "-DKILN_MUTANT_NAME=\"$m_name\"" \
        -o "$OUT.tmp" conformance/mutants/entry.c "$MB/libkiln.a" \
        -Wl,--exclude-libs,ALL $LDFLAGS $SYSLIBS ||
        die "$m_name: the plugin does not link"
    exported=$(nm -D --defined-only "$OUT.tmp" | awk '{print $3}' | tr '\n' ' ')
    [ "$exported" = "kiln_backend_entry " ] ||
        die "$m_name: the plugin exports '$exported', not just kiln_backend_entry"
else
    cli_objs=$(objects_of $CLI_SRC)
    $CC -o "$OUT.tmp" $cli_objs "$MB/libkiln.a" $LDFLAGS $STATIC_DEPS $SYSLIBS ||
        die "$m_name: the kiln tool does not link"
fi
mv "$OUT.tmp" "$OUT"
n_c=0
for s in "${compile[@]}"; do [[ "$s" == *.c ]] && n_c=$((n_c + 1)); done
echo "mutant $m_name ($m_kind): ${touched[*]} patched, $n_c file(s) compiled -> $OUT"
