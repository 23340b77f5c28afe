/* `raidkit serve`: assemble the array from its members and export it over NBD until SIGINT or
 * SIGTERM, then finish in-flight requests, flush, mark the array clean and exit 0. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/emul.h"
#include "raidkit/nbd.h"
#include "raidkit/volume.h"

static const char serve_usage[] =
    "Usage: raidkit serve [--listen unix:PATH|tcp:[HOST:]PORT] [--export NAME] [--read-only]\n"
    "                     [--degraded] [--force] [--threads N] [--emulate PROFILE]\n"
    "                     [--control PATH] [--rebuild-rate MIB] [--debug-fault SLOT:SPEC]...\n"
    "                     MEMBER...\n"
    "\n"
    "Assemble the array from MEMBER files (any order; slots come from the superblocks) and\n"
    "serve it over NBD in the foreground, logging to stderr. SIGINT/SIGTERM: finish in-flight\n"
    "requests, flush, mark the array clean, exit 0.\n"
    "\n"
    "  -L, --listen ADDR   unix:PATH (default unix:raidkit.sock) or tcp:[HOST:]PORT;\n"
    "                      TCP binds 127.0.0.1 unless HOST is given\n"
    "  -e, --export NAME   export name (default \"raidkit\"; the default export \"\" also works)\n"
    "  -r, --read-only     refuse writes (NBD READ_ONLY; writes get EPERM)\n"
    "  -d, --degraded      start even if members are missing, while redundancy allows\n"
    "  -f, --force         start an array that is both dirty and degraded\n"
    "  -t, --threads N     worker threads serving requests (default 32)\n"
    "      --emulate PROFILE\n"
    "                      time every member like a modelled disk: a built-in profile\n"
    "                      (sata-ssd-2014, hdd-7200) or an INI file path (docs/BENCHMARKS.md)\n"
    "  -c, --control PATH  serve the control socket at PATH (raidkit status/fail/replace/scrub)\n"
    "      --rebuild-rate MIB\n"
    "                      limit a rebuild resumed at start to MIB MiB/s (default unlimited)\n"
    "      --debug-fault SLOT:SPEC\n"
    "                      testing only: wrap the member of SLOT (or every member given: all)\n"
    "                      in the fault-injection member. SPEC items (comma-separated):\n"
    "                      fail-all, read-eio=OFF+LEN, write-eio=OFF+LEN, eio=OFF+LEN (member\n"
    "                      offsets), fail-after-writes=N, cut-after=N (power cut after N member\n"
    "                      writes: the member then fails every I/O, its unflushed writes kept\n"
    "                      per 4 KiB block as keep=none|all|random says, seed=S; on-cut=hang:\n"
    "                      never answer after the cut), latency=USEC, power=shared (one cut\n"
    "                      for every such member; implied by all:). See docs/TORTURE.md\n"
    "  -h, --help          show this help\n"
    "\n"
    "Clients: nbdinfo 'nbd+unix:///?socket=raidkit.sock', nbdcopy, fio --ioengine=nbd, qemu-img.\n";

static struct rk_nbd_server *serve_server;

static void serve_on_signal(int sig)
{
    (void)sig;
    if (serve_server)
        rk_nbd_server_stop(serve_server);
}

/* The parsed command line of serve. */
struct serve_opts {
    struct rk_open_opts oo;
    struct rk_emul_params emul; /* oo.emul points here with --emulate */
    struct rk_nbd_opts no;
    const char *control;   /* --control PATH, NULL without */
    const char *fault_all; /* --debug-fault all:SPEC, expanded once the members are known */
    char all_spec[512];
};

/* --debug-fault all:SPEC: "power=shared,SPEC" on slots 0..n-1 (one per member given), so
 * every member is cut by one shared trigger. buf holds the spec. 0, or -1 after a message. */
static int serve_fault_all(struct rk_open_opts *oo, const char *spec, int n, char *buf, size_t len)
{
    if ((size_t)snprintf(buf, len, "power=shared%s%s", *spec ? "," : "", spec) >= len ||
        oo->nfaults + n > RK_MAX_MEMBERS) {
        fprintf(stderr, "raidkit serve: --debug-fault all:%s: spec too long or too many faults\n",
                spec);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        oo->fault_slot[oo->nfaults] = (uint32_t)i;
        oo->fault_spec[oo->nfaults++] = buf;
    }
    return 0;
}

/* --debug-fault SLOT:SPEC into oo (all:SPEC into *fault_all). 0 or CLI_EXIT_USAGE with a message.
 */
static int serve_fault(struct rk_open_opts *oo, const char **fault_all, const char *arg)
{
    const char *colon = strchr(arg, ':');
    char slot[16];
    uint64_t v;
    size_t sl = colon ? (size_t)(colon - arg) : 0;
    if (!colon || sl == 0 || sl >= sizeof(slot) || oo->nfaults >= RK_MAX_MEMBERS) {
        fprintf(stderr, "raidkit serve: bad --debug-fault '%s' (SLOT:SPEC)\n", arg);
        return CLI_EXIT_USAGE;
    }
    memcpy(slot, arg, sl);
    slot[sl] = '\0';
    if (!strcmp(slot, "all") && !*fault_all) {
        *fault_all = colon + 1;
        return 0;
    }
    if (rk_parse_u64(slot, &v) || v >= RK_MAX_MEMBERS) {
        fprintf(stderr, "raidkit serve: bad slot in --debug-fault '%s'\n", arg);
        return CLI_EXIT_USAGE;
    }
    oo->fault_slot[oo->nfaults] = (uint32_t)v;
    oo->fault_spec[oo->nfaults] = colon + 1;
    oo->nfaults++;
    return 0;
}

/* Parse the options into o (members start at optind). 0, -1 after --help, or an exit code. */
static int serve_parse(int argc, char **argv, struct serve_opts *o)
{
    enum { OPT_DEBUG_FAULT = 1000, OPT_EMULATE, OPT_REBUILD_RATE };
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'L'},
        {"export", required_argument, NULL, 'e'},
        {"read-only", no_argument, NULL, 'r'},
        {"degraded", no_argument, NULL, 'd'},
        {"force", no_argument, NULL, 'f'},
        {"threads", required_argument, NULL, 't'},
        {"debug-fault", required_argument, NULL, OPT_DEBUG_FAULT},
        {"emulate", required_argument, NULL, OPT_EMULATE},
        {"control", required_argument, NULL, 'c'},
        {"rebuild-rate", required_argument, NULL, OPT_REBUILD_RATE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":L:e:rdft:c:h", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case 'L':
            if (strncmp(optarg, "unix:", 5) && strncmp(optarg, "tcp:", 4)) {
                fprintf(stderr, "raidkit serve: bad --listen '%s' (unix:PATH or tcp:[HOST:]PORT)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            o->no.listen = optarg;
            break;
        case 'e':
            if (strlen(optarg) > 4096) {
                fprintf(stderr, "raidkit serve: export name longer than 4096 bytes\n");
                return CLI_EXIT_USAGE;
            }
            o->no.export_name = optarg;
            break;
        case 'r':
            o->oo.read_only = o->no.read_only = true;
            break;
        case 'd':
            o->oo.degraded = true;
            break;
        case 'f':
            o->oo.force = true;
            break;
        case 't':
            if (rk_parse_u64(optarg, &v) || v < 1 || v > 1024) {
                fprintf(stderr, "raidkit serve: bad --threads '%s' (1..1024)\n", optarg);
                return CLI_EXIT_USAGE;
            }
            o->no.threads = (int)v;
            break;
        case OPT_DEBUG_FAULT:
            if (serve_fault(&o->oo, &o->fault_all, optarg))
                return CLI_EXIT_USAGE;
            break;
        case OPT_EMULATE: {
            char eerr[512] = "";
            if (rk_emul_profile_load(optarg, &o->emul, eerr, sizeof(eerr))) {
                fprintf(stderr, "raidkit serve: --emulate: %s\n", eerr);
                return CLI_EXIT_USAGE;
            }
            o->oo.emul = &o->emul;
            break;
        }
        case 'c':
            o->control = optarg;
            break;
        case OPT_REBUILD_RATE:
            if (rk_parse_u64(optarg, &v) || v > 1024 * 1024) {
                fprintf(stderr, "raidkit serve: bad --rebuild-rate '%s' (MiB/s, 0 = unlimited)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            o->oo.rebuild_rate = v * 1024 * 1024;
            break;
        case 'h':
            fputs(serve_usage, stdout);
            return -1;
        case ':':
            fprintf(stderr, "raidkit serve: option '%s' needs a value\n", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default:
            fprintf(stderr, "raidkit serve: unknown option '%s' (see raidkit serve --help)\n",
                    argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

/* Assemble the n members, serve them (and the control socket) until a signal, close. */
static int serve_run(struct serve_opts *o, int n, char **members)
{
    struct rk_nbd_opts *no = &o->no;
    char err[512] = "";
    struct rk_volume *vol = NULL;
    int r = rk_volume_open((const char *const *)members, n, &o->oo, &vol, err, sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit serve: %s\n", err[0] ? err : strerror(-r));
        return CLI_EXIT_FAIL;
    }
    struct rk_dev *dev = rk_volume_dev(vol);
    char desc[320], sz[32];
    snprintf(desc, sizeof(desc), "raidkit %s, %s", dev->name,
             rk_format_size(dev->size, sz, sizeof(sz)));
    no->description = desc;

    struct rk_nbd_server *srv = NULL;
    r = rk_nbd_server_create(dev, no, &srv, err, sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit serve: %s\n", err[0] ? err : strerror(-r));
        rk_volume_close(vol);
        return CLI_EXIT_FAIL;
    }
    struct rk_control *ctl = NULL;
    if (o->control) {
        r = rk_control_start(o->control, vol, &ctl, err, sizeof(err));
        if (r) {
            fprintf(stderr, "raidkit serve: %s\n", err[0] ? err : strerror(-r));
            rk_nbd_server_destroy(srv);
            rk_volume_close(vol);
            return CLI_EXIT_FAIL;
        }
        rk_info("control socket on %s", o->control);
    }
    serve_server = srv;
    struct sigaction sa = {.sa_handler = serve_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    rk_info("serving %s (%s, block size %" PRIu32 ") as export '%s' on %s%s", dev->name, sz,
            dev->block_size, no->export_name, no->listen, no->read_only ? ", read-only" : "");
    r = rk_nbd_server_run(srv);
    serve_server = NULL;
    rk_info("stopping: flushing members and marking the array clean");
    rk_nbd_server_destroy(srv);
    rk_control_stop(ctl);
    int rc = rk_volume_close(vol);
    if (r || rc) {
        fprintf(stderr, "raidkit serve: shutdown: %s\n", strerror(-(r ? r : rc)));
        return CLI_EXIT_FAIL;
    }
    rk_info("stopped cleanly");
    return CLI_EXIT_OK;
}

int cli_serve(int argc, char **argv)
{
    struct serve_opts o = {.no = {.listen = "unix:raidkit.sock", .export_name = "raidkit"}};
    int r = serve_parse(argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    int n = argc - optind;
    if (n <= 0) {
        fprintf(stderr, "raidkit serve: no members given (see raidkit serve --help)\n");
        return CLI_EXIT_USAGE;
    }
    if (o.fault_all && serve_fault_all(&o.oo, o.fault_all, n, o.all_spec, sizeof(o.all_spec)))
        return CLI_EXIT_USAGE;
    return serve_run(&o, n, argv + optind);
}

/* Shared with `raidkit fuse` (cmd_fuse.c): serve's options and volume assembly, so both
 * commands take the same options. The parsed options live in one static struct (the emulation
 * parameters must outlive the volume). */
int cli_serve_open(int argc, char **argv, int skip, struct cli_serve_volume *out)
{
    static struct serve_opts o;
    o = (struct serve_opts){.no = {.listen = "unix:raidkit.sock", .export_name = "raidkit"}};
    int r = serve_parse(argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_USAGE : r;
    int n = argc - optind - skip;
    if (n <= 0) {
        fprintf(stderr, "raidkit %s: no members given (see raidkit %s --help)\n", argv[0], argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (o.fault_all && serve_fault_all(&o.oo, o.fault_all, n, o.all_spec, sizeof(o.all_spec)))
        return CLI_EXIT_USAGE;
    char err[512] = "";
    r = rk_volume_open((const char *const *)argv + optind + skip, n, &o.oo, &out->vol, err,
                       sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit %s: %s\n", argv[0], err[0] ? err : strerror(-r));
        return CLI_EXIT_FAIL;
    }
    out->control = o.control;
    out->threads = o.no.threads;
    out->read_only = o.oo.read_only;
    return CLI_EXIT_OK;
}
