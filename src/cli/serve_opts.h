/* The parsed command line of `raidkit serve` and the option helpers shared by its parser
 * (serve_opts.c): fault specs, socket and TLS options, cache options, NBD limits, front-end
 * conventions. Each helper writes into the struct and prints its own one-line error. */
#ifndef RK_CLI_SERVE_OPTS_H
#define RK_CLI_SERVE_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#include "raidkit/emul.h"
#include "raidkit/nbd.h"
#include "raidkit/volume.h"

/* The parsed command line of serve. */
struct serve_opts {
    struct rk_open_opts oo;
    struct rk_emul_params emul; /* oo.emul points here with --emulate */
    struct rk_nbd_opts no;
    const char *control;   /* --control PATH, NULL without */
    const char *fault_all; /* --debug-fault all:SPEC, expanded once the members are known */
    char all_spec[512];
    struct rk_emul_params cache_emul; /* oo.cache_emul points here with --cache-emulate */
    bool listen_given, single, exit_with_parent, export_given;
    bool listen_conf; /* serve NAME: the configuration's listen (systemd's socket wins) */
    bool f_short;     /* -f given (--foreground, not --force): named when a start needs --force */
    const char *run, *pidfile, *config;
    char hidden[128]; /* the socket's name until the array is open (front_bind) */
};

/* getopt_long codes of the long-only options. */
enum {
    OPT_DEBUG_FAULT = 1000,
    OPT_EMULATE,
    OPT_REBUILD_RATE,
    OPT_SOCKET_MODE,
    OPT_SOCKET_OWNER,
    OPT_SOCKET_GROUP,
    OPT_TLS,
    OPT_TLS_CERTS,
    OPT_TLS_PSK,
    OPT_CACHE,
    OPT_CACHE_EMULATE,
    OPT_WB_RATE,
    OPT_FORCE,
    OPT_MAX_CONNS,
    OPT_REQ_MEMORY,
    OPT_HS_TIMEOUT,
    OPT_IDLE_TIMEOUT,
};

/* The options without a value check (front-end conventions, logging, --config). */
enum { OPT_RUN = 1100, OPT_EXIT_WITH_PARENT, OPT_CONFIG };

/* --debug-fault all:SPEC expanded for n members into oo (buf, len bytes, holds the specs).
 * 0 or CLI_EXIT_USAGE with a message. */
int serve_fault_all(struct rk_open_opts *oo, const char *spec, int n, char *buf, size_t len);
/* --debug-fault SLOT:SPEC into oo (all:SPEC into *fault_all, cache:SPEC the cache device).
 * 0 or CLI_EXIT_USAGE with a message. */
int serve_fault(struct rk_open_opts *oo, const char **fault_all, const char *arg);
/* The socket and TLS options (docs/SECURITY.md): 1 when c was one of them, 0 when not, or
 * CLI_EXIT_USAGE after a message. */
int serve_sec_opt(int c, const char *arg, struct rk_nbd_opts *no);
/* --cache (which 0), --cache-emulate (1), --writeback-rate (2) into o: 0, or -1 after a message. */
int serve_cache_opt(struct serve_opts *o, int which, const char *arg);
/* Front-end conventions, logging, --config and --listen (optarg) into o: 1 done, 0 when c is
 * not one of them, CLI_EXIT_USAGE after a message. */
int serve_front_opt(struct serve_opts *o, int c);
/* NBD limit which (0 --max-connections, 1 --request-memory, 2 --handshake-timeout,
 * 3 --idle-timeout) from arg into no: 0, or -1 after a message. */
int serve_limit(struct rk_nbd_opts *no, int which, const char *arg);

#endif
