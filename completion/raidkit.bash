# bash completion for raidkit(8): commands, each command's options, files for MEMBER arguments.
_raidkit()
{
    local cur prev cmd opts
    COMPREPLY=()
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="create info bitmap serve status fail replace scrub assemble bench"
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    case $prev in
    --level | -l)
        COMPREPLY=($(compgen -W "linear raid0 raid1 raid10 raid5 raid6" -- "$cur"))
        return ;;
    --bitmap)
        COMPREPLY=($(compgen -W "internal none" -- "$cur")); return ;;
    --write-hole)
        COMPREPLY=($(compgen -W "ppl none" -- "$cur")); return ;;
    --emulate)
        COMPREPLY=($(compgen -W "sata-ssd-2014 hdd-7200" -f -- "$cur")); return ;;
    --listen | -L)
        COMPREPLY=($(compgen -W "unix: tcp:" -- "$cur")); compopt -o nospace 2>/dev/null; return ;;
    --control | -c | --with | -w | --pidfile | --config)
        COMPREPLY=($(compgen -f -- "$cur")); return ;;
    esac
    local common="--help --verbose --quiet"
    case $cmd in
    create) opts="--level --chunk --name --size --force --assume-clean --bitmap --bitmap-region
                  --write-hole --json" ;;
    info) opts="--json --test" ;;
    bitmap) opts="--add --region" ;;
    serve) opts="--listen --export --read-only --degraded --force --threads --emulate --control
                 --rebuild-rate --debug-fault --single --run --exit-with-parent --pidfile
                 --config" ;;
    status) opts="--control --json --test" ;;
    fail) opts="--control --slot --json" ;;
    replace) opts="--control --slot --with --rate --wait --json --progress --no-progress" ;;
    scrub) opts="--control --repair --rate --no-wait --json --progress --no-progress" ;;
    assemble) opts="--scan --config --json" ;;
    bench) opts="--suite --configs --members --dir --model --out --format --trials --json" ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $common" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}
complete -F _raidkit raidkit
