/* Option helpers of `raidkit serve` (serve_opts.h): each parses one option into the parsed
 * command line and prints a one-line error naming the option and value when it is bad. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "cli/serve_front.h"
#include "cli/serve_opts.h"
#include "core/unixsock.h"
#include "core/util.h"
#include "raidkit/member.h"

/* --debug-fault all:SPEC: "power=shared,SPEC" on slots 0..n-1 (one per member given), so
 * every member is cut by one shared trigger. buf holds the spec. 0, or -1 after a message. */
int serve_fault_all(struct rk_open_opts *oo, const char *spec, int n, char *buf, size_t len)
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
int serve_fault(struct rk_open_opts *oo, const char **fault_all, const char *arg)
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
    char serr[512];
    if (rk_fault_check_spec(colon + 1, serr, sizeof(serr))) {
        fprintf(stderr, "raidkit serve: --debug-fault %s: %s\n", arg, serr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(slot, "cache")) {
        oo->cache_fault_spec = colon + 1;
        return 0;
    }
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

/* The socket and TLS options (docs/SECURITY.md). 1 when c was one of them, 0 when not, or
 * CLI_EXIT_USAGE after a message. */
int serve_sec_opt(int c, const char *arg, struct rk_nbd_opts *no)
{
    mode_t mode;
    uid_t uid;
    gid_t gid;
    switch (c) {
    case OPT_SOCKET_MODE:
        if (rk_unix_parse_mode(arg, &mode) || mode == 0) {
            fprintf(stderr, "raidkit serve: bad --socket-mode '%s' (octal, 1..0777)\n", arg);
            return CLI_EXIT_USAGE;
        }
        no->socket_mode = mode;
        return 1;
    case OPT_SOCKET_OWNER:
        if (rk_unix_parse_user(arg, &uid)) {
            fprintf(stderr, "raidkit serve: bad --socket-owner '%s' (unknown user)\n", arg);
            return CLI_EXIT_USAGE;
        }
        no->socket_uid = uid;
        no->socket_uid_set = true;
        return 1;
    case OPT_SOCKET_GROUP:
        if (rk_unix_parse_group(arg, &gid)) {
            fprintf(stderr, "raidkit serve: bad --socket-group '%s' (unknown group)\n", arg);
            return CLI_EXIT_USAGE;
        }
        no->socket_gid = gid;
        no->socket_gid_set = true;
        return 1;
    case OPT_TLS:
        if (!strcmp(arg, "off"))
            no->tls = RK_NBD_TLS_OFF;
        else if (!strcmp(arg, "on"))
            no->tls = RK_NBD_TLS_ON;
        else if (!strcmp(arg, "require"))
            no->tls = RK_NBD_TLS_REQUIRE;
        else {
            fprintf(stderr, "raidkit serve: bad --tls '%s' (off, on or require)\n", arg);
            return CLI_EXIT_USAGE;
        }
        return 1;
    case OPT_TLS_CERTS:
        no->tls_certificates = arg;
        return 1;
    case OPT_TLS_PSK:
        no->tls_psk = arg;
        return 1;
    default:
        return 0;
    }
}

/* --cache (which 0), --cache-emulate (1), --writeback-rate (2) into o. 0, or -1 after a
 * message. */
int serve_cache_opt(struct serve_opts *o, int which, const char *arg)
{
    uint64_t v;
    char eerr[512] = "";
    switch (which) {
    case 0:
        o->oo.cache_path = arg;
        return 0;
    case 1:
        if (rk_emul_profile_load(arg, &o->cache_emul, eerr, sizeof(eerr))) {
            fprintf(stderr, "raidkit serve: --cache-emulate: %s\n", eerr);
            return -1;
        }
        o->oo.cache_emul = &o->cache_emul;
        return 0;
    default:
        if (rk_parse_u64(arg, &v) || v > 1024 * 1024) {
            fprintf(stderr, "raidkit serve: bad --writeback-rate '%s' (MiB/s, 0 = unlimited)\n",
                    arg);
            return -1;
        }
        o->oo.cache_writeback_rate = v * 1024 * 1024;
        return 0;
    }
}

/* Option c of serve_front_opt's set (and --listen) into o: 1 done, 0 when c is not one of
 * them, CLI_EXIT_USAGE after a message. */
int serve_front_opt(struct serve_opts *o, int c)
{
    char err[512];
    switch (c) {
    case 'L':
        if (front_check_listen(optarg, err, sizeof(err))) {
            fprintf(stderr, "raidkit serve: %s\n", err);
            return CLI_EXIT_USAGE;
        }
        o->no.listen = optarg;
        o->listen_given = true;
        break;
    case 'f':
        break; /* always in the foreground */
    case 's':
        o->single = true;
        break;
    case OPT_RUN:
        o->run = optarg;
        break;
    case OPT_EXIT_WITH_PARENT:
        o->exit_with_parent = true;
        break;
    case 'P':
        o->pidfile = optarg;
        break;
    case OPT_CONFIG:
        o->config = optarg;
        break;
    case 'v':
        rk_log_set_level(RK_LOG_DEBUG);
        break;
    case 'q':
        rk_log_set_level(RK_LOG_WARN);
        break;
    default:
        return 0;
    }
    return 1;
}

/* One of the NBD limits into no: which 0 --max-connections (1..65536), 1 --request-memory
 * (64M..1T), 2 --handshake-timeout (seconds, 0.1..3600; fractions allowed), 3 --idle-timeout
 * (seconds, 0..86400, 0 = never). 0, or -1 after a message. */
int serve_limit(struct rk_nbd_opts *no, int which, const char *arg)
{
    static const char *const names[] = {"--max-connections", "--request-memory",
                                        "--handshake-timeout", "--idle-timeout"};
    static const char *const ranges[] = {"1..65536", "64M..1T", "0.1..3600 s", "0..86400 s"};
    uint64_t v = 0;
    bool ok;
    if (which == 0) {
        ok = !rk_parse_u64(arg, &v) && v >= 1 && v <= 65536;
        no->max_connections = (int)v;
    } else if (which == 1) {
        ok = !rk_parse_size(arg, &v) && v >= (64ull << 20) && v <= (1ull << 40);
        no->max_memory = v;
    } else {
        char *end = NULL;
        double sec = strtod(arg, &end);
        double lo = which == 2 ? 0.1 : 0, hi = which == 2 ? 3600 : 86400;
        ok = end != arg && *end == '\0' && sec >= lo && sec <= hi;
        uint32_t ms = ok ? (uint32_t)(sec * 1000 + 0.5) : 0;
        if (which == 2)
            no->handshake_ms = ms;
        else
            no->idle_timeout_ms = ms;
    }
    if (!ok)
        fprintf(stderr, "raidkit serve: bad %s '%s' (%s)\n", names[which], arg, ranges[which]);
    return ok ? 0 : -1;
}
