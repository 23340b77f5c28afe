#!/usr/bin/env bash
# readme_tour: the commands of README.md's "Five-minute tour" block, run verbatim in a scratch
# directory (the `make` line is the build CTest has done already; RK is the binary under test).
# Every command must succeed, the tour must print what it promises, and nothing may be left in
# the checkout.
set -euo pipefail
: "${RAIDKIT:?}" "${RAIDKIT_SOURCE_DIR:?}"
for t in nbdinfo nbdcopy cmp; do
    command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
readme=$RAIDKIT_SOURCE_DIR/README.md
sed -n '/^## Five-minute tour/,/^## /p' "$readme" | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d' >"$work/tour.sh"
[ "$(wc -l <"$work/tour.sh")" -gt 10 ] || { echo "FAIL: no tour block in README.md" >&2; exit 1; }
head -n 2 "$work/tour.sh" | grep -qx 'make' || { echo "FAIL: the tour does not start with make" >&2; exit 1; }
before=$(cd "$RAIDKIT_SOURCE_DIR" && git status --porcelain 2>/dev/null || true)
# `make` is the build CTest already did; RK= names the binary under test.
sed -e '/^make$/d' -e "s|^RK=.*|RK=$RAIDKIT|" "$work/tour.sh" >"$work/run.sh"
(cd "$RAIDKIT_SOURCE_DIR" && TMPDIR=$work timeout 180 bash -e "$work/run.sh") >"$work/out" 2>"$work/err" ||
    { echo "FAIL: the tour failed:" >&2; tail -n 30 "$work/out" "$work/err" >&2; exit 1; }
for want in "state 3 = degraded" "scrub finished: 0 mismatches" "the array gave back what was written" \
            "array tour: .* raid5, [0-9]+ members found: healthy" "skipped .*m1.img: stale" "skipped .*disk.img"; do
    grep -Eq "$want" "$work/out" "$work/err" || { echo "FAIL: the tour did not print /$want/:" >&2; cat "$work/out" >&2; exit 1; }
done
after=$(cd "$RAIDKIT_SOURCE_DIR" && git status --porcelain 2>/dev/null || true)
[ "$before" = "$after" ] || { echo "FAIL: the tour left files in the checkout: $after" >&2; exit 1; }
echo "PASS: README tour ($(wc -l <"$work/run.sh") commands)"
