/* `raidkit serve`: assemble the array from its members and export it over NBD until SIGINT or
 * SIGTERM, then finish in-flight requests, flush, mark the array clean and exit 0. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "cli/assemble.h"
#include "cli/config.h"
#include "cli/cli.h"
#include "cli/members.h"
#include "core/unixsock.h"
#include "cli/report.h"
#include "cli/serve_front.h"
#include "cli/serve_opts.h"
#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/emul.h"
#include "raidkit/member.h"
#include "raidkit/nbd.h"
#include "raidkit/volume.h"

static const char serve_usage[] =
    "Usage: raidkit serve [--listen unix:PATH|tcp:[HOST:]PORT] [--export NAME] [--read-only]\n"
    "                     [--degraded] [--force] [--threads N] [--emulate PROFILE]\n"
    "                     [--control PATH] [--rebuild-rate MIB] [--debug-fault SLOT:SPEC]...\n"
    "                     [--socket-mode MODE] [--socket-owner USER] [--socket-group GROUP]\n"
    "                     [--tls off|on|require] [--tls-certificates DIR] [--tls-psk FILE]\n"
    "                     [--cache CACHEDEV [--cache-emulate PROFILE] [--writeback-rate MIB]]\n"
    "                     [--max-connections N] [--request-memory SIZE]\n"
    "                     [--handshake-timeout SEC] [--idle-timeout SEC]\n"
    "                     [--single | --run CMD] [--exit-with-parent] [--pidfile PATH]\n"
    "                     [-v|-q] (MEMBER... | [--config FILE] NAME)\n"
    "\n"
    "Assemble the array from MEMBER files (any order; slots come from the superblocks) and\n"
    "serve it over NBD in the foreground, logging to stderr. SIGINT/SIGTERM: finish in-flight\n"
    "requests, flush, mark the array clean, exit 0. The socket is bound (or taken from systemd\n"
    "socket activation, LISTEN_FDS) before any member is opened.\n"
    "\n"
    "  -L, --listen ADDR   unix:PATH (default unix:raidkit.sock) or tcp:[HOST:]PORT;\n"
    "                      TCP binds 127.0.0.1 unless HOST is given\n"
    "  -e, --export NAME   export name (default \"raidkit\"; the default export \"\" also works)\n"
    "  -r, --read-only     refuse writes (NBD READ_ONLY, no TRIM/WRITE_ZEROES advertised;\n"
    "                      WRITE, TRIM and WRITE_ZEROES get EPERM)\n"
    "  -d, --degraded      start even if members are missing, while redundancy allows\n"
    "      --force         start an array that is both dirty and degraded\n"
    "  -f, --foreground    accepted for nbdkit compatibility: serve always runs in the\n"
    "                      foreground\n"
    "  -s, --single        serve one NBD connection on stdin/stdout (a socket: nbdfuse\n"
    "                      --command, libnbd connect_command) and exit when it closes\n"
    "      --run CMD       captive mode: once serving, run `sh -c CMD` with $uri, $exportname\n"
    "                      and $unixsocket (or $port) set; stop when it exits, with its status.\n"
    "                      Without --listen a private unix socket is used\n"
    "      --exit-with-parent\n"
    "                      stop cleanly (as on SIGTERM) when the parent process exits\n"
    "  -P, --pidfile PATH  write the pid to PATH once the socket listens; removed at exit\n"
    "  -v, --verbose       debug log lines too;  -q, --quiet: warnings and errors only\n"
    "      --config FILE   serve NAME: the configuration file (default\n"
    "                      " RK_CONF_DEFAULT ") whose [array NAME] names the members\n"
    "                      (found by superblock, as raidkit assemble --scan) and the settings\n"
    "                      (listen, control, export, pidfile, degraded, read-only, threads)\n"
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
    "                      for every such member; implied by all:). SLOT cache: the cache\n"
    "                      device (all: includes it). See docs/TORTURE.md\n"
    "      --socket-mode MODE\n"
    "                      octal mode of the unix NBD socket (default 0600), in place from\n"
    "                      the moment it appears (the umask plays no part)\n"
    "      --socket-owner USER, --socket-group GROUP\n"
    "                      owner and group of the unix NBD socket (default: the server's)\n"
    "      --tls off|on|require\n"
    "                      NBD STARTTLS: off (default) refuses it, on offers it, require\n"
    "                      refuses every option before it (NBD_REP_ERR_TLS_REQD)\n"
    "      --tls-certificates DIR\n"
    "                      X.509: DIR holds ca-cert.pem, server-cert.pem, server-key.pem\n"
    "      --tls-psk FILE  pre-shared keys, psktool format (identity:hexkey per line)\n"
    "                      (access: the control socket is always mode 0600 for the server's\n"
    "                      user; TCP on a non-loopback address without TLS is served with a\n"
    "                      warning; see docs/SECURITY.md)\n"
    "      --cache CACHEDEV\n"
    "                      serve through the SSD cache on CACHEDEV (made by raidkit cache\n"
    "                      create for this array), in its recorded mode\n"
    "      --cache-emulate PROFILE\n"
    "                      time the cache device like a modelled disk (as --emulate)\n"
    "      --writeback-rate MIB\n"
    "                      limit the cache's background write-back to MIB MiB/s (default\n"
    "                      unlimited; a drain for a mode switch or detach is never limited)\n"
    "      --max-connections N\n"
    "                      connections at once (default 256); more are closed at once\n"
    "      --request-memory SIZE\n"
    "                      cap on request buffers summed over all connections (default 1G,\n"
    "                      at least 64M): a connection holds at most 64M of it (or twice the\n"
    "                      32M max request) and stops reading requests at that bound\n"
    "      --handshake-timeout SEC\n"
    "                      close a connection that has not finished the handshake (default 10)\n"
    "      --idle-timeout SEC\n"
    "                      close a connection with nothing received, sent or running for SEC\n"
    "                      seconds (default 0: never), e.g. a client that stopped reading\n"
    "  -h, --help          show this help\n"
    "\n"
    "Clients: nbdinfo 'nbd+unix:///?socket=raidkit.sock', nbdcopy, fio --ioengine=nbd, qemu-img.\n";

static struct rk_nbd_server *serve_server;
static volatile sig_atomic_t serve_stopping; /* SIGINT/SIGTERM seen (maybe before the server) */

static void serve_on_signal(int sig)
{
    (void)sig;
    serve_stopping = 1;
    if (serve_server)
        rk_nbd_server_stop(serve_server);
}

/* SIGINT/SIGTERM stop the server cleanly, from the start on (a signal that comes while the
 * members are being opened stops the server as soon as it exists). */
static void serve_signals(void)
{
    struct sigaction sa = {.sa_handler = serve_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static pid_t serve_child;        /* --run: the captive command, 0 when none or reaped */
static volatile int serve_wstat; /* its wait status, valid once serve_reaped */
static volatile sig_atomic_t serve_reaped;

/* SIGCHLD: reap the captive command and stop the server (async-signal-safe calls only). */
static void serve_on_child(int sig)
{
    (void)sig;
    int st;
    if (serve_child > 0 && waitpid(serve_child, &st, WNOHANG) == serve_child) {
        serve_wstat = st;
        serve_reaped = 1;
        if (serve_server)
            rk_nbd_server_stop(serve_server);
    }
}

/* Parse the options into o (members start at optind). 0, -1 after --help, or an exit code. */
static int serve_parse(int argc, char **argv, struct serve_opts *o)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'L'},
        {"export", required_argument, NULL, 'e'},
        {"read-only", no_argument, NULL, 'r'},
        {"degraded", no_argument, NULL, 'd'},
        {"force", no_argument, NULL, OPT_FORCE}, /* -f is --foreground, as in nbdkit */
        {"foreground", no_argument, NULL, 'f'},
        {"single", no_argument, NULL, 's'},
        {"run", required_argument, NULL, OPT_RUN},
        {"exit-with-parent", no_argument, NULL, OPT_EXIT_WITH_PARENT},
        {"pidfile", required_argument, NULL, 'P'},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"config", required_argument, NULL, OPT_CONFIG},
        {"threads", required_argument, NULL, 't'},
        {"debug-fault", required_argument, NULL, OPT_DEBUG_FAULT},
        {"emulate", required_argument, NULL, OPT_EMULATE},
        {"control", required_argument, NULL, 'c'},
        {"rebuild-rate", required_argument, NULL, OPT_REBUILD_RATE},
        {"socket-mode", required_argument, NULL, OPT_SOCKET_MODE},
        {"socket-owner", required_argument, NULL, OPT_SOCKET_OWNER},
        {"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
        {"tls", required_argument, NULL, OPT_TLS},
        {"tls-certificates", required_argument, NULL, OPT_TLS_CERTS},
        {"tls-psk", required_argument, NULL, OPT_TLS_PSK},
        {"cache", required_argument, NULL, OPT_CACHE},
        {"cache-emulate", required_argument, NULL, OPT_CACHE_EMULATE},
        {"writeback-rate", required_argument, NULL, OPT_WB_RATE},
        {"max-connections", required_argument, NULL, OPT_MAX_CONNS},
        {"request-memory", required_argument, NULL, OPT_REQ_MEMORY},
        {"handshake-timeout", required_argument, NULL, OPT_HS_TIMEOUT},
        {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":L:e:rdft:c:hsP:vq", longopts, NULL)) != -1) {
        uint64_t v;
        int sec = serve_sec_opt(c, optarg, &o->no);
        if (sec == 1)
            continue;
        if (sec)
            return sec;
        if (c == 'f' && strncmp(argv[optind - 1], "--", 2))
            o->f_short = true; /* -f, perhaps meant as --force (docs/CLI.md "Short options") */
        int fr = serve_front_opt(o, c);
        if (fr == 1)
            continue;
        if (fr)
            return fr;
        switch (c) {
        case 'e':
            if (strlen(optarg) > 4096) {
                fprintf(stderr, "raidkit serve: export name longer than 4096 bytes\n");
                return CLI_EXIT_USAGE;
            }
            o->no.export_name = optarg;
            o->export_given = true;
            break;
        case 'r':
            o->oo.read_only = o->no.read_only = true;
            break;
        case 'd':
            o->oo.degraded = true;
            break;
        case OPT_FORCE:
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
        case OPT_CACHE:
        case OPT_CACHE_EMULATE:
        case OPT_WB_RATE:
            if (serve_cache_opt(o, c - OPT_CACHE, optarg))
                return CLI_EXIT_USAGE;
            break;
        case OPT_MAX_CONNS:
        case OPT_REQ_MEMORY:
        case OPT_HS_TIMEOUT:
        case OPT_IDLE_TIMEOUT:
            if (serve_limit(&o->no, c - OPT_MAX_CONNS, optarg))
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            fputs(serve_usage, stdout);
            return -1;
        case ':':
            fprintf(stderr, "raidkit %s: option '%s' needs a value\n", argv[0], argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default: /* argv[0] is "serve" or "fuse" (cli_serve_open) */
            fprintf(stderr, "raidkit %s: unknown option '%s' (see raidkit %s --help)\n", argv[0],
                    argv[optind - 1], argv[0]);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

/* Where the connections come from, decided and bound before any member is opened: stdin
 * (--single), a socket systemd passed (LISTEN_FDS), or --listen (a private socket for --run
 * without --listen, in rundir). Sets o->no.source/fd/listen. 0 or an exit code after a message. */
static int serve_source(struct serve_opts *o, char *rundir, size_t dlen, char *listen, size_t llen)
{
    char err[512] = "";
    int fd, act = o->single ? 0 : front_activation_fd(&fd, err, sizeof(err));
    if (o->single && (o->run || o->listen_given)) {
        fprintf(stderr, "raidkit serve: --single takes no --listen or --run\n");
        return CLI_EXIT_USAGE;
    }
    if (act > 0 && o->listen_given) {
        fprintf(stderr, "raidkit serve: --listen given but systemd passed a socket (LISTEN_FDS)\n");
        return CLI_EXIT_USAGE;
    }
    if (act < 0 || (o->single && front_single_fd(&fd, err, sizeof(err)))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        return CLI_EXIT_FAIL;
    }
    if (o->single || act > 0) {
        o->no.source = o->single ? RK_NBD_SOURCE_CONN_FD : RK_NBD_SOURCE_LISTEN_FD;
        o->no.fd = fd;
        o->no.listen = o->single ? "stdin" : "systemd socket";
        if (act > 0)
            o->no.listen = NULL;
        return 0;
    }
    if (o->run && !o->listen_given && !o->listen_conf) {
        if (front_private_listen(rundir, dlen, listen, llen, err, sizeof(err))) {
            fprintf(stderr, "raidkit serve: %s\n", err);
            return CLI_EXIT_FAIL;
        }
        o->no.listen = listen;
    }
    if (front_bind(o->no.listen, &o->no, &fd, o->hidden, sizeof(o->hidden), err, sizeof(err))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        return CLI_EXIT_FAIL;
    }
    o->no.source = RK_NBD_SOURCE_LISTEN_FD;
    o->no.fd = fd;
    return 0;
}

/* After the server listens: the pid file, then the captive command. 0 or CLI_EXIT_FAIL. */
static int serve_started(struct serve_opts *o)
{
    char err[600];
    if (o->pidfile && front_pidfile_write(o->pidfile, err, sizeof(err))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        o->pidfile = NULL; /* not ours: never removed at exit */
        return CLI_EXIT_FAIL;
    }
    if (o->run) {
        struct sigaction sc = {.sa_handler = serve_on_child, .sa_flags = SA_NOCLDSTOP};
        sigemptyset(&sc.sa_mask);
        sigaction(SIGCHLD, &sc, NULL);
        /* SIGCHLD is blocked in every thread (cli_serve blocked it before the first thread was
         * made), so it waits until this thread unblocks it: serve_child is set by then, and a
         * command that exits at once is still reaped (no lost SIGCHLD, no hang). */
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        pthread_sigmask(SIG_BLOCK, &chld, NULL);
        serve_child = front_run_start(o->run, o->no.listen, o->no.export_name, err, sizeof(err));
        pthread_sigmask(SIG_UNBLOCK, &chld, NULL);
        if (serve_child < 0) {
            fprintf(stderr, "raidkit serve: %s\n", err);
            serve_child = 0;
            return CLI_EXIT_FAIL;
        }
    }
    return 0;
}

/* The captive command's end: SIGTERM it if the server stopped first, wait, return the exit
 * status serve reports for it (front_run_status). */
static int serve_child_end(void)
{
    if (!serve_reaped) {
        kill(serve_child, SIGTERM);
        int st;
        while (waitpid(serve_child, &st, 0) < 0 && errno == EINTR)
            ;
        serve_wstat = serve_reaped ? serve_wstat : st;
    }
    serve_child = 0;
    return front_run_status(serve_wstat);
}

/* Assemble the n members, serve them (and the control socket) until a signal, close. */
static int serve_run(struct serve_opts *o, int n, char **members)
{
    struct rk_nbd_opts *no = &o->no;
    char err[512] = "";
    struct rk_volume *vol = NULL;
    /* Before any member is touched: the pid file is made once as a probe (its directory
     * takes a file of that name), the control socket is bound for real. */
    if (o->pidfile && front_pidfile_probe(o->pidfile, err, sizeof(err))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        close(no->fd);
        if (o->hidden[0])
            unlink(o->hidden);
        return CLI_EXIT_USAGE;
    }
    int ctl_fd = -1;
    if (o->control && (front_control_check(o->control, err, sizeof(err)) ||
                       rk_control_listen(o->control, &ctl_fd, err, sizeof(err)))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        close(no->fd);
        if (o->hidden[0])
            unlink(o->hidden);
        return CLI_EXIT_FAIL;
    }
    int r = rk_volume_open((const char *const *)members, n, &o->oo, &vol, err, sizeof(err));
    if (r) {
        char hint[4200];
        fprintf(stderr, "raidkit serve: %s%s%s\n", err[0] ? err : strerror(-r),
                cli_busy_hint((const char *const *)members, n, hint, sizeof(hint)),
                o->f_short && strstr(err, "--force") ? " (-f is --foreground in serve, not --force)"
                                                     : "");
        close(no->fd); /* and the socket file serve_source bound */
        if (o->hidden[0])
            unlink(o->hidden);
        rk_control_unlisten(ctl_fd, o->control);
        return CLI_EXIT_FAIL;
    }
    if (rk_volume_remote_watch(vol, o->oo.rebuild_rate)) /* URI members: fail, reconnect */
        fprintf(stderr, "raidkit serve: cannot watch the remote members\n");
    struct rk_dev *dev = rk_volume_dev(vol);
    char desc[320], sz[32];
    snprintf(desc, sizeof(desc), "raidkit %s, %s", dev->name,
             rk_format_size(dev->size, sz, sizeof(sz)));
    no->description = desc;

    struct rk_nbd_server *srv = NULL;
    r = rk_nbd_server_create(dev, no, &srv, err, sizeof(err));
    if (r && o->hidden[0])
        unlink(o->hidden);
    if (r) {
        fprintf(stderr, "raidkit serve: %s\n", err[0] ? err : strerror(-r));
        rk_control_unlisten(ctl_fd, o->control);
        rk_volume_close(vol);
        return CLI_EXIT_FAIL;
    }
    struct rk_control *ctl = NULL;
    if (o->control) {
        r = rk_control_start_fd(ctl_fd, o->control, vol, &ctl, err, sizeof(err));
        if (r) {
            fprintf(stderr, "raidkit serve: %s\n", err[0] ? err : strerror(-r));
            rk_nbd_server_destroy(srv);
            rk_volume_close(vol);
            if (o->hidden[0])
                unlink(o->hidden);
            return CLI_EXIT_FAIL;
        }
        rk_info("control socket on %s", o->control);
    }
    serve_server = srv;
    if (serve_stopping)
        rk_nbd_server_stop(srv);

    r = 0;
    if (front_publish(no->listen, o->hidden, err, sizeof(err))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        unlink(o->hidden);
        r = CLI_EXIT_FAIL;
    }
    const char *where = no->listen ? no->listen : "the socket systemd passed";
    if (!r)
        rk_info("serving %s (%s, block size %" PRIu32 ") as export '%s' on %s%s", dev->name, sz,
                dev->block_size, no->export_name, where, no->read_only ? ", read-only" : "");
    if (!r)
        r = serve_started(o);
    if (!r)
        front_notify("READY=1");
    if (!r)
        r = rk_nbd_server_run(srv);
    serve_server = NULL;
    front_notify("STOPPING=1");
    if (no->read_only)
        rk_info("stopping (read-only: nothing was written, the array's state stays as it was)");
    else
        rk_info("stopping: flushing members and marking the array clean");
    rk_nbd_server_destroy(srv);
    rk_control_stop(ctl);
    int rc = rk_volume_close(vol);
    int child = serve_child > 0 ? serve_child_end() : -1;
    if (o->pidfile)
        unlink(o->pidfile);
    if (r || rc) {
        if (r != CLI_EXIT_FAIL)
            fprintf(stderr, "raidkit serve: shutdown: %s\n", strerror(-(r ? r : rc)));
        return CLI_EXIT_FAIL;
    }
    rk_info("stopped cleanly");
    return child >= 0 ? child : CLI_EXIT_OK;
}

/* serve NAME: the settings of the configured array a, where the command line gave none. */
static void serve_apply_conf(struct serve_opts *o, const struct rk_conf_array *a)
{
    if (a->listen && !o->listen_given) {
        o->no.listen = a->listen;
        o->listen_conf = true;
    }
    if (a->control && !o->control)
        o->control = a->control;
    if (a->export_name && !o->export_given)
        o->no.export_name = a->export_name;
    if (a->pidfile && !o->pidfile)
        o->pidfile = a->pidfile;
    if (a->degraded == 1)
        o->oo.degraded = true;
    if (a->read_only == 1)
        o->oo.read_only = o->no.read_only = true;
    if (a->threads && !o->no.threads)
        o->no.threads = a->threads;
}

/* Is the single argument an array of the configuration (serve NAME) rather than a member? */
static bool serve_is_name(const struct serve_opts *o, int n, char **args)
{
    return n == 1 && (o->config || (!strchr(args[0], '/') && access(args[0], F_OK) != 0));
}

/* From the parsed options on: members (or NAME), the listening socket, the array. */
static int serve_main(struct serve_opts *o, int n, char **members)
{
    if (o->fault_all && serve_fault_all(&o->oo, o->fault_all, n, o->all_spec, sizeof(o->all_spec)))
        return CLI_EXIT_USAGE;
    if (o->fault_all && o->oo.cache_path && !o->oo.cache_fault_spec)
        o->oo.cache_fault_spec = o->all_spec; /* the cache device shares the power cut */
    char err[512];
    if (o->exit_with_parent && front_exit_with_parent(err, sizeof(err))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        return CLI_EXIT_FAIL;
    }
    char rundir[4096] = "", listen[4200];
    int r = serve_source(o, rundir, sizeof(rundir), listen, sizeof(listen));
    if (r)
        return r;
    r = serve_run(o, n, members);
    if (rundir[0]) { /* --run's private socket directory goes on every exit path */
        char sock[4300];
        if (o->hidden[0])
            unlink(o->hidden);
        snprintf(sock, sizeof(sock), "%s/socket", rundir);
        unlink(sock);
        rmdir(rundir);
    }
    return r;
}

int cli_serve(int argc, char **argv)
{
    struct serve_opts o = {
        .no = {.listen = "unix:raidkit.sock", .export_name = "raidkit", .fd = -1}};
    int r = serve_parse(argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    int n = argc - optind;
    if (n <= 0) {
        fprintf(stderr, "raidkit serve: no members given (see raidkit serve --help)\n");
        return CLI_EXIT_USAGE;
    }
    /* TLS credentials load before anything is opened, so a bad file writes nothing. */
    char err[512] = "";
    if (rk_nbd_tls_check(&o.no, err, sizeof(err))) {
        fprintf(stderr, "raidkit serve: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    rk_nbd_warn_exposed(&o.no);
    if ((o.oo.cache_emul || o.oo.cache_fault_spec || o.oo.cache_writeback_rate) &&
        !o.oo.cache_path) {
        fprintf(stderr, "raidkit serve: --cache-emulate, --writeback-rate and --debug-fault "
                        "cache: need --cache CACHEDEV\n");
        return CLI_EXIT_USAGE;
    }
    if (o.config && n != 1) {
        fprintf(stderr,
                "raidkit serve: --config %s serves a configured array: give its NAME alone, not "
                "member files (%s ...)\n",
                o.config, argv[optind]);
        return CLI_EXIT_USAGE;
    }
    serve_signals();
    if (o.run) { /* before any thread exists: see serve_started */
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        pthread_sigmask(SIG_BLOCK, &chld, NULL);
    }
    if (!serve_is_name(&o, n, argv + optind)) {
        if ((r = cli_check_duplicates("serve", (const char *const *)argv + optind, n)))
            return r;
        return serve_main(&o, n, argv + optind);
    }
    struct rk_conf conf = {0};
    struct asm_result res;
    const struct rk_conf_array *a = NULL;
    r = asm_for_serve(o.config, argv[optind], &conf, &a, &res);
    if (!r) {
        serve_apply_conf(&o, a);
        r = serve_main(&o, res.n, res.members);
    }
    asm_free(&res);
    rk_conf_free(&conf);
    return r;
}

/* Shared with `raidkit fuse` (cmd_fuse.c): serve's options and volume assembly, so both
 * commands take the same options. The parsed options live in one static struct (the emulation
 * parameters must outlive the volume). */
/* The serve options that configure the NBD server only, which a caller of cli_serve_open (fuse:
 * no socket) does not take: the first one in argv, or NULL. */
static const char *serve_nbd_only_opt(int argc, char **argv)
{
    static const char *const nbd_only[] = {
        "--listen",
        "-L",
        "--export",
        "-e",
        "--foreground",
        "-f",
        "--socket-mode",
        "--socket-owner",
        "--socket-group",
        "--tls",
        "--tls-certificates",
        "--tls-psk",
        "--max-connections",
        "--request-memory",
        "--handshake-timeout",
        "--idle-timeout",
    };
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        size_t len = strcspn(argv[i], "=");
        for (size_t k = 0; k < sizeof(nbd_only) / sizeof(nbd_only[0]); k++)
            if (strlen(nbd_only[k]) == len && !strncmp(argv[i], nbd_only[k], len))
                return nbd_only[k];
    }
    return NULL;
}

int cli_serve_open(int argc, char **argv, int skip, struct cli_serve_volume *out)
{
    static struct serve_opts o;
    const char *nbd = serve_nbd_only_opt(argc, argv);
    if (nbd) {
        fprintf(stderr,
                "raidkit %s: option '%s' does not apply to %s: it configures the NBD server "
                "(see raidkit %s --help)\n",
                argv[0], nbd, argv[0], argv[0]);
        return CLI_EXIT_USAGE;
    }
    o = (struct serve_opts){.no = {.listen = "unix:raidkit.sock", .export_name = "raidkit"}};
    int r = serve_parse(argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_USAGE : r;
    int n = argc - optind - skip;
    if (n <= 0) {
        fprintf(stderr, "raidkit %s: no members given (see raidkit %s --help)\n", argv[0], argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (o.config || o.single || o.run || o.pidfile || o.exit_with_parent) {
        fprintf(stderr, "raidkit %s: option %s does not apply to %s (see raidkit %s --help)\n",
                argv[0],
                o.config    ? "--config"
                : o.single  ? "--single"
                : o.run     ? "--run"
                : o.pidfile ? "--pidfile"
                            : "--exit-with-parent",
                argv[0], argv[0]);
        return CLI_EXIT_USAGE;
    }
    if (o.fault_all && serve_fault_all(&o.oo, o.fault_all, n, o.all_spec, sizeof(o.all_spec)))
        return CLI_EXIT_USAGE;
    char err[512] = "";
    out->control_fd = -1;
    if ((r = cli_check_duplicates(argv[0], (const char *const *)argv + optind + skip, n)))
        return r;
    if (out->check && out->check(argv + optind, skip))
        return CLI_EXIT_FAIL;
    /* The control socket is bound for real before any member is touched (as serve does). */
    if (o.control && (front_control_check(o.control, err, sizeof(err)) ||
                      rk_control_listen(o.control, &out->control_fd, err, sizeof(err)))) {
        fprintf(stderr, "raidkit %s: %s\n", argv[0], err);
        return CLI_EXIT_FAIL;
    }
    r = rk_volume_open((const char *const *)argv + optind + skip, n, &o.oo, &out->vol, err,
                       sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit %s: %s\n", argv[0], err[0] ? err : strerror(-r));
        rk_control_unlisten(out->control_fd, o.control);
        out->control_fd = -1;
        return CLI_EXIT_FAIL;
    }
    out->control = o.control;
    out->threads = o.no.threads;
    out->read_only = o.oo.read_only;
    out->rebuild_rate = o.oo.rebuild_rate;
    return CLI_EXIT_OK;
}
