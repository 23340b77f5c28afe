#!/bin/bash
# The bash completion agrees with --help: it completes every command of `raidkit --help` (and
# every cache subcommand), every option of each command's --help synopsis, and no option the
# command's --help does not name; array names of the configuration file where a command takes
# a NAME. No server, no member: runs in well under a second.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
rk_init
# shellcheck disable=SC1091
. "$RAIDKIT_SOURCE_DIR/completion/raidkit.bash"
compopt() { :; } # only valid inside a real completion; harmless here

# complete WORD...: COMPREPLY for the words (the last one is the word being completed).
complete_words()
{
    COMP_WORDS=(raidkit "$@")
    COMP_CWORD=$#
    COMPREPLY=()
    _raidkit
    printf '%s\n' "${COMPREPLY[@]}" | sort -u
}

cmds=$("$RAIDKIT" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' | sort -u)
[ -n "$cmds" ] || rk_fail "no commands in raidkit --help"
got=$(complete_words "" | grep -v '^-')
[ "$got" = "$cmds" ] || rk_fail "completed commands differ from --help: $(diff <(echo "$cmds") <(echo "$got") | tr '\n' ' ')"
subs=$("$RAIDKIT" cache --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' | sort -u)
got=$(complete_words cache "" | grep -v '^-')
[ "$got" = "$subs" ] || rk_fail "completed cache subcommands differ from cache --help: $got vs $subs"

checked=0
for c in $cmds "cache create" "cache mode" "cache detach" "cache attach" "cache fault"; do
    [ "$c" = cache ] && continue
    # shellcheck disable=SC2086
    help=$("$RAIDKIT" $c --help 2>&1) || rk_fail "raidkit $c --help failed"
    synopsis=$(sed '/^$/q' <<<"$help" | grep -oE -- '--[a-z][a-z-]*' | sort -u)
    named=$(grep -oE -- '--[a-z][a-z-]*' <<<"$help" | sort -u)
    # shellcheck disable=SC2086
    completed=$(complete_words $c -- | grep -vxE -- '--(help|verbose|quiet)')
    missing=$(comm -23 <(echo "$synopsis") <(echo "$completed") | tr '\n' ' ')
    [ -z "$missing" ] || rk_fail "raidkit $c: --help lists options the completion lacks: $missing"
    extra=$(comm -13 <(echo "$named") <(echo "$completed") | tr '\n' ' ')
    [ -z "$extra" ] || rk_fail "raidkit $c: the completion offers options --help does not name: $extra"
    checked=$((checked + 1))
done
rk_log "checked $checked commands"
[ "$(complete_words serve --tls "")" = "$(printf 'off\non\nrequire')" ] || rk_fail "serve --tls values"

# Array names of the configuration file where a command takes a NAME (serve NAME, assemble
# --scan NAME...), and its control sockets for --control.
cat >"$T/c.conf" <<EOC
[scan]
members = /dev/nonexistent*
[array home]
control = $T/run/home.ctl  # the control socket (no such directory: no file matches)
[ array  backup ]
  [array media] ; comment
EOC
got=$(complete_words assemble --scan --config "$T/c.conf" "" | tr '\n' ' ')
[ "$got" = "backup home media " ] || rk_fail "assemble NAME completion: '$got'"
got=$(complete_words assemble --scan -C "$T/c.conf" m | tr '\n' ' ')
[ "$got" = "media " ] || rk_fail "assemble -C FILE m completion: '$got'"
cd "$T" || rk_fail "cd $T"
got=$(complete_words serve --config "$T/c.conf" h)
[ "$got" = home ] || rk_fail "serve NAME completion: '$got'"
got=$(complete_words serve --config "$T/c.conf" --control "$T/run/")
[ "$got" = "$T/run/home.ctl" ] || rk_fail "--control completion from the configuration: '$got'"
echo "PASS: bash completion agrees with --help"
