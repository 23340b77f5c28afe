#!/bin/bash
# cli_bad_input: every command-line mistake gives exactly one line on stderr, a non-zero exit and
# leaves the member files unchanged; --help and --version work.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init

rk_members 2 8M h # h0 h1 hold an array (superblocks)
H=("${M[@]}")
rk_create --level raid1 "${H[@]}"
rk_members 3 8M    # m0 m1 m2 blank (small: checksummed after every command)
mkdir "$T/adir"
NOFILE="$T/no/such/dir/member"
ALL=("${M[@]}" "${H[@]}")
sums=$(rk_sums "${ALL[@]}")
nfail=0

# bad [--lines N] WHAT ARGS...: raidkit ARGS must exit non-zero (not crash) with one stderr line.
bad()
{
    local what=$1 rc lines
    shift
    timeout 10 "$RAIDKIT" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    rc_last=$rc
    lines=$(wc -l <"$T/err")
    rk_no_sanitizer "$T/err" "raidkit $*"
    if [ "$rc" -eq 0 ]; then
        echo "FAIL ($what): raidkit $* exited 0" >&2
        nfail=$((nfail + 1))
    elif [ "$rc" -ge 124 ]; then
        echo "FAIL ($what): raidkit $* died with status $rc: $(head -c 600 "$T/err")" >&2
        nfail=$((nfail + 1))
    elif [ "$lines" -ne 1 ]; then
        echo "FAIL ($what): raidkit $* printed $lines lines on stderr (want 1):" >&2
        sed 's/^/    | /' "$T/err" | head -n 8 >&2
        nfail=$((nfail + 1))
    else
        echo "ok ($what, status $rc): $(cat "$T/err")" >&2
    fi
    if [ "$(rk_sums "${ALL[@]}")" != "$sums" ]; then
        echo "FAIL ($what): raidkit $* changed a member file" >&2
        nfail=$((nfail + 1))
        sums=$(rk_sums "${ALL[@]}")
    fi
    [ ! -e "$NOFILE" ] || { echo "FAIL ($what): created $NOFILE" >&2; nfail=$((nfail + 1)); }
}

m0=${M[0]} m1=${M[1]}
bad "unknown level" create --level raid7 "$m0" "$m1"
bad "unknown level word" create --level mirror "$m0" "$m1"
bad "bad size 12Q" create --level 1 --size 12Q "$m0" "$m1"
bad "bad size word" create --level 1 --size lots "$m0" "$m1"
bad "chunk 3K not a power of two" create --level 0 --chunk 3K "$m0" "$m1"
bad "chunk 1000 not a multiple of 512" create --level 0 --chunk 1000 "$m0" "$m1"
bad "raid1 with 1 member" create --level 1 "$m0"
bad "raid10 with 1 member" create --level 10 "$m0"
bad "member holds a superblock" create --level 1 "$m0" "${H[1]}"
bad "member is a directory" create --level 1 "$m0" "$T/adir"
bad "member in a missing directory" create --level 1 "$m0" "$NOFILE"
bad "member given twice" create --level 1 "$m0" "$m0"
bad "name too long" create --level 1 --name "$(printf 'n%.0s' $(seq 40))" "$m0" "$m1"
bad "unknown create option" create --level 1 --bogus "$m0" "$m1"
bad "create without --level" create "$m0" "$m1"
bad "--level without value" create "$m0" "$m1" --level
bad "create without members" create --level 1
bad "unknown command" frobnicate "$m0"
bad "unknown top option" --bogus
bad "serve without members" serve --listen "unix:$T/sock.x"
bad "serve unknown option" serve --bogus "${H[@]}"
bad "serve bad listen address" serve --listen "carrier-pigeon:x" "${H[@]}"
bad "serve bad fault spec" serve --listen "unix:$T/sock.y" --debug-fault 0:explode "${H[@]}"
bad "serve blank members" serve --listen "unix:$T/sock.z" "$m0" "$m1"
bad "serve a directory" serve --listen "unix:$T/sock.w" "$T/adir"
bad "create --bitmap-region 4K (exit 2)" create --level 1 --bitmap-region 4K "$m0" "$m1"
[ "$rc_last" = 2 ] || { echo "FAIL: create --bitmap-region 4K exited $rc_last, want 2" >&2; nfail=$((nfail + 1)); }
bad "bitmap --region 3M (exit 2)" bitmap --add --region 3M "${H[@]}"
[ "$rc_last" = 2 ] || { echo "FAIL: bitmap --region 3M exited $rc_last, want 2" >&2; nfail=$((nfail + 1)); }
bad "serve a member twice" serve --listen "unix:$T/sock.d" "${H[0]}" "${H[0]}"
[ "$rc_last" = 2 ] || { echo "FAIL: serve a member twice exited $rc_last, want 2" >&2; nfail=$((nfail + 1)); }
bad "fuse --config" fuse "$T/adir" --config "$T/x.conf" "${H[@]}"
# Serve options of the NBD server only do not apply to fuse (no socket): usage errors.
for o in "--listen unix:$T/x.sock" "--tls on" "--export x" "--max-connections 4" "--idle-timeout=5" -f; do
    # shellcheck disable=SC2086
    bad "fuse $o" fuse "$T/adir" $o "${H[@]}"
    [ "$rc_last" = 2 ] || { echo "FAIL: fuse $o exited $rc_last, want 2" >&2; nfail=$((nfail + 1)); }
done
bad "info without members" info
bad "info unknown option" info --bogus "${H[@]}"

# Help and version: exit 0, usage on stdout.
for args in "--help" "-h" "create --help" "info --help" "serve --help"; do
    # shellcheck disable=SC2086
    if "$RAIDKIT" $args >"$T/out" 2>"$T/err" && grep -qi 'usage' "$T/out"; then
        echo "ok: raidkit $args" >&2
    else
        echo "FAIL: raidkit $args: status/usage wrong: $(head -n 3 "$T/out" "$T/err")" >&2
        nfail=$((nfail + 1))
    fi
done
if "$RAIDKIT" --version >"$T/out" 2>"$T/err" && grep -Eq '^raidkit [0-9]+\.[0-9]+' "$T/out"; then
    echo "ok: raidkit --version: $(cat "$T/out")" >&2
else
    echo "FAIL: raidkit --version: $(cat "$T/out" "$T/err")" >&2
    nfail=$((nfail + 1))
fi

[ "$nfail" -eq 0 ] || rk_fail "$nfail CLI checks failed"
echo PASS
