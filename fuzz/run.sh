#!/bin/bash
# Run one libFuzzer harness for SECONDS (CTest: a few seconds; bench/fuzz.sh: long runs) over a
# copy of its committed seed corpus fuzz/corpus/NAME (new inputs go to the copy, or to OUTDIR).
# Builds the clang project of fuzz/CMakeLists.txt into BUILD/fuzz first (once; serialized).
# Exit 0 no crash, 1 a crash (the reproducer is printed and kept in BUILD/fuzz/crashes), 77 when
# clang or libFuzzer is missing.
# Usage: fuzz/run.sh BUILD NAME SECONDS [OUTDIR]
set -u -o pipefail
B=$1 NAME=$2 SECS=$3 OUT=${4:-}
SRC=$(cd "$(dirname "$0")" && pwd)
CC_FZ=${CC_FUZZ:-clang}
command -v "$CC_FZ" >/dev/null || { echo "SKIP: $CC_FZ not installed (scripts/install-deps.sh)" >&2; exit 77; }
rt=$("$CC_FZ" -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
[ -f "$rt" ] || rt=$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null | head -n 1)
[ -n "$rt" ] && [ -f "$rt" ] || { echo "SKIP: libFuzzer (libfuzzer-14-dev) not installed" >&2; exit 77; }
FB="$B/fuzz"
mkdir -p "$FB"
(
    flock 9
    # Configure every time (cheap): the source globs must see files added since the last run.
    cmake -S "$SRC" -B "$FB" -DCMAKE_C_COMPILER="$CC_FZ" >"$FB/configure.log" 2>&1 ||
        { cat "$FB/configure.log" >&2; exit 1; }
    cmake --build "$FB" -j2 >"$FB/build.log" 2>&1 || { tail -n 30 "$FB/build.log" >&2; exit 1; }
) 9>"$FB/.lock" || exit 1
work=$(mktemp -d "${TMPDIR:-/tmp}/rk-fuzz-$NAME.XXXXXX")
trap 'rm -rf "$work"' EXIT
corpus=${OUT:-$work/corpus}
mkdir -p "$corpus" "$FB/crashes"
cp "$SRC/corpus/$NAME"/* "$corpus/" 2>/dev/null
echo "fuzz $NAME: ${SECS}s over $(ls "$corpus" | wc -l) seed inputs" >&2
TMPDIR=$work ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$FB/$NAME" -max_total_time="$SECS" -max_len=65536 -timeout=20 -rss_limit_mb=1024 \
    -artifact_prefix="$FB/crashes/$NAME-" -print_final_stats=1 "$corpus" >"$work/log" 2>&1
rc=$?
grep -E "DONE" "$work/log" | tail -n 1 >&2
if [ $rc -ne 0 ]; then
    tail -n 40 "$work/log" >&2
    echo "FAIL: $NAME crashed; reproducer in $FB/crashes (add it to fuzz/corpus/$NAME)" >&2
    exit 1
fi
echo PASS
