# bash completion for raidkit(8): commands, each command's options, files for MEMBER arguments,
# the array names of the configuration file where a command takes a NAME (serve, assemble) and its
# control sockets for --control.

# The configuration file the command line names (--config FILE, -C FILE), else the one the
# binary was built with (`raidkit assemble --help` prints it).
_raidkit_conf()
{
    local i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case ${COMP_WORDS[i]} in
        --config | -C) echo "${COMP_WORDS[i+1]}"; return ;;
        --config=*) echo "${COMP_WORDS[i]#--config=}"; return ;;
        esac
    done
    local bin=${COMP_WORDS[0]:-raidkit}
    command -v "$bin" >/dev/null 2>&1 || bin=raidkit
    "$bin" assemble --help 2>/dev/null | sed -n 's/.*--config FILE .*(default \([^)]*\)).*/\1/p'
}

# The names of the [array NAME] sections of the configuration file.
_raidkit_arrays()
{
    local conf
    conf=$(_raidkit_conf)
    [ -r "$conf" ] || return 0
    sed -n 's/^[[:space:]]*\[[[:space:]]*array[[:space:]]\{1,\}\([^][:space:]]\{1,\}\)[[:space:]]*\].*/\1/p' "$conf"
}

# The control sockets (`control = PATH`) the configuration file names.
_raidkit_controls()
{
    local conf
    conf=$(_raidkit_conf)
    [ -r "$conf" ] || return 0
    sed -n 's/^[[:space:]]*control[[:space:]]*=[[:space:]]*\([^#;[:space:]]\{1,\}\).*/\1/p' "$conf"
}

_raidkit()
{
    local cur prev cmd opts
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="create info bitmap serve status fail replace re-add scrub cache assemble fuse
                    bench"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    if [ "$cmd" = cache ]; then
        if [ "$COMP_CWORD" -eq 2 ]; then
            COMPREPLY=($(compgen -W "create mode detach attach fault --help" -- "$cur"))
            return
        fi
        cmd="cache-${COMP_WORDS[2]}"
    fi
    case $prev in
    --level | -l)
        COMPREPLY=($(compgen -W "linear raid0 raid1 raid10 raid5 raid6" -- "$cur"))
        return ;;
    --bitmap)
        COMPREPLY=($(compgen -W "internal none" -- "$cur")); return ;;
    --write-hole)
        COMPREPLY=($(compgen -W "ppl none" -- "$cur")); return ;;
    --emulate | --cache-emulate)
        COMPREPLY=($(compgen -W "sata-ssd-2014 hdd-7200" -f -- "$cur")); return ;;
    --tls)
        COMPREPLY=($(compgen -W "off on require" -- "$cur")); return ;;
    --mode)
        COMPREPLY=($(compgen -W "writethrough writeback writearound none" -- "$cur")); return ;;
    --listen | -L)
        COMPREPLY=($(compgen -W "unix: tcp:" -- "$cur")); compopt -o nospace 2>/dev/null; return ;;
    --control | -c)
        COMPREPLY=($(compgen -W "$(_raidkit_controls)" -f -- "$cur")); return ;;
    --with | -w | --pidfile | --config | -C | --cache | --tls-psk | --out | --dir)
        COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --tls-certificates)
        COMPREPLY=($(compgen -d -- "$cur")); return ;;
    esac
    local common="--help --verbose --quiet"
    # Each command's options, as its --help synopsis lists them (tests/integration/
    # cli_completion.sh keeps the two in agreement).
    case $cmd in
    create) opts="--level --chunk --name --size --force --assume-clean --bitmap --bitmap-region
                  --write-hole --json" ;;
    info) opts="--json --test" ;;
    bitmap) opts="--add --region --json" ;;
    serve) opts="--listen --export --read-only --degraded --force --foreground --threads --emulate
                 --control --rebuild-rate --debug-fault --max-connections --request-memory
                 --handshake-timeout --idle-timeout --socket-mode --socket-owner --socket-group
                 --tls --tls-certificates --tls-psk --cache --cache-emulate --writeback-rate
                 --single --run --exit-with-parent --pidfile --config" ;;
    status) opts="--control --json --test" ;;
    fail) opts="--control --slot --json" ;;
    replace) opts="--control --slot --with --force --rate --wait --degraded --json --progress
                   --no-progress" ;;
    re-add) opts="--control --slot --rate --wait --degraded --json --progress --no-progress" ;;
    scrub) opts="--control --repair --rate --no-wait --degraded --json --progress --no-progress" ;;
    cache-create) opts="--mode --block --force --json" ;;
    cache-mode | cache-detach | cache-attach | cache-fault) opts="--control --json" ;;
    assemble) opts="--scan --config --json" ;;
    fuse) opts="--name --allow-other --max-io --json --read-only --degraded --force --threads
                --emulate --control --rebuild-rate --debug-fault" ;;
    bench) opts="--suite --configs --members --dir --model --out --format --trials --json" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $common" -- "$cur"))
    elif [ "$cmd" = assemble ]; then
        COMPREPLY=($(compgen -W "$(_raidkit_arrays)" -- "$cur")) # NAME...: no files
    elif [ "$cmd" = serve ]; then
        COMPREPLY=($(compgen -W "$(_raidkit_arrays)" -f -- "$cur")) # NAME or MEMBER...
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _raidkit raidkit
