#!/usr/bin/env bash
# The man pages built from docs/CLI.md: raidkit(8) and one raidkit-COMMAND(8) per command of
# `raidkit --help`, each formatted by man without a single warning, each naming every option
# the command's --help lists (a short one as "-X, --long").
set -euo pipefail
: "${RAIDKIT:?}" "${RAIDKIT_BUILD_DIR:?}"
command -v scdoc >/dev/null || { echo "SKIP: scdoc not installed (man pages not built)"; exit 77; }
command -v man >/dev/null || { echo "SKIP: man not installed"; exit 77; }
dir=$RAIDKIT_BUILD_DIR/man
[ -f "$dir/raidkit.8" ] || { echo "FAIL: $dir/raidkit.8 not built" >&2; exit 1; }
fail=0
cmds=$("$RAIDKIT" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p')
for c in $cmds; do
    [ -f "$dir/raidkit-$c.8" ] || { echo "FAIL: no man page raidkit-$c(8)" >&2; fail=1; }
done
for f in "$dir"/*.8; do
    warn=$(MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l "$f" 2>&1 >/dev/null) || true
    if [ -n "$warn" ]; then
        echo "FAIL: $(basename "$f"): $warn" >&2
        fail=1
    fi
done
# Every long option of every command's --help is in its page, and every short one as "-X, --long"
# (raidkit(8): the options before a command).
for c in $cmds; do
    [ -f "$dir/raidkit-$c.8" ] || continue
    page=$(MANWIDTH=200 man -l "$dir/raidkit-$c.8" 2>/dev/null | sed 's/‐//g' | tr '\n' ' ' | tr -s ' ')
    for o in $("$RAIDKIT" "$c" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z][a-z-]*' | grep -o -- '--.*' | sort -u); do
        [ "$o" = --help ] && continue
        grep -q -- "$o" <<<"$page" || { echo "FAIL: raidkit-$c(8) lacks $o" >&2; fail=1; }
    done
    while read -r pair; do
        grep -qF -- "$pair" <<<"$page" || { echo "FAIL: raidkit-$c(8) lacks the short option '$pair'" >&2; fail=1; }
    done < <("$RAIDKIT" "$c" --help | grep -oE '^ +-[a-zA-Z], --[a-z][a-z-]*' | sed 's/^ *//' | grep -v -- '--help$')
done
page=$(MANWIDTH=200 man -l "$dir/raidkit.8" 2>/dev/null | sed 's/‐//g' | tr '\n' ' ' | tr -s ' ')
while read -r pair; do
    grep -qF -- "$pair" <<<"$page" || { echo "FAIL: raidkit(8) lacks the short option '$pair'" >&2; fail=1; }
done < <("$RAIDKIT" --help | grep -oE '^ +-[a-zA-Z], --[a-z][a-z-]*' | sed 's/^ *//')
# A user's page says nothing about its generator or the source tree.
for p in "$dir"/*.8; do
    t=$(MANWIDTH=200 man -l "$p" 2>/dev/null)
    if grep -Eq "cli2man|source of the man pages|src/(cli|meta|core)/" <<<"$t"; then
        echo "FAIL: $(basename "$p") carries developer notes: $(grep -Eo ".{0,40}(cli2man|src/(cli|meta|core)/).{0,20}" <<<"$t" | head -1)" >&2
        fail=1
    fi
done
[ $fail -eq 0 ] && echo "PASS: $(ls "$dir"/*.8 | wc -l) man pages, no warnings"
exit $fail
