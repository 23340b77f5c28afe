/* `raidkit cache mode|detach|attach|fault` (docs/CLI.md "cache"): online requests to a served
 * volume's control socket (dispatched by cmd_cache.c), and the cache lines of `raidkit status`. */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cache/meta.h"
#include "cli/cli.h"
#include "cli/report.h"

static const char online_usage[] =
    "Usage: raidkit cache mode MODE [--json] --control PATH\n"
    "       raidkit cache detach [--json] --control PATH\n"
    "       raidkit cache attach CACHEDEV [--json] --control PATH\n"
    "       raidkit cache fault SPEC [--json] --control PATH\n"
    "\n"
    "Online, on a volume served with --cache (docs/CLI.md \"cache\"):\n"
    "  mode MODE      switch to writethrough, writeback, writearound or none (leaving\n"
    "                 writeback writes the dirty blocks back first; waits for that)\n"
    "  detach         write back every dirty block, flush the array, detach the cache durably\n"
    "                 (the array keeps being served, uncached)\n"
    "  attach DEV     attach a cache device again (after detach; or retry a failed one: give its\n"
    "                 own path)\n"
    "  fault SPEC     testing only: change the fault spec of the cache device (serve\n"
    "                 --debug-fault cache:...; SPEC clear removes every fault)\n"
    "\n"
    "      --control PATH  the control socket of the server (required)\n"
    "      --json          print the server's reply as JSON ({\"ok\": true, \"op\": ...,\n"
    "                      \"message\": ...}; a refusal {\"ok\": false, \"error\":\n"
    "                      {\"code\": 1, \"message\": ..., \"command\": ...}})\n"
    "  -h, --help          show this help\n";

/* Parse [ARG] [--json] --control PATH of an online subcommand: 0 with *control and *arg (NULL
 * when nargs is 0; --json goes to mgmt_set_json), -1 after --help, or CLI_EXIT_USAGE after a
 * message. */
static int cache_online_args(const char *sub, int nargs, int argc, char **argv,
                             const char **control, const char **arg)
{
    static const struct option longopts[] = {
        {"control", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    *control = *arg = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":c:h", longopts, NULL)) != -1) {
        if (c == 'c') {
            *control = optarg;
        } else if (c == 'j') {
            mgmt_set_json(true);
        } else if (c == 'h') {
            fputs(online_usage, stdout);
            return -1;
        } else {
            fprintf(stderr, "raidkit cache %s: %s '%s' (see raidkit cache --help)\n", sub,
                    c == ':' ? "option needs a value:" : "unknown option", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    if (argc - optind != nargs || !*control) {
        fprintf(stderr, "raidkit cache %s: %s (see raidkit cache --help)\n", sub,
                !*control ? "--control PATH is required" : "wrong number of arguments");
        return CLI_EXIT_USAGE;
    }
    if (nargs)
        *arg = argv[optind];
    return 0;
}

/* Send {"cmd":"cache","op":op, key:val} and print the reply's message (--json: the reply
 * with "op" and key: val added, on stdout). */
static int cache_call(const char *sub, const char *control, const char *key, const char *val)
{
    cJSON *req = cJSON_CreateObject();
    if (!req)
        return CLI_EXIT_FAIL;
    cJSON_AddStringToObject(req, "cmd", "cache");
    cJSON_AddStringToObject(req, "op", sub);
    if (key)
        cJSON_AddStringToObject(req, key, val);
    char name[32];
    snprintf(name, sizeof(name), "cache %s", sub);
    cJSON *reply = mgmt_call(name, control, req);
    if (!reply)
        return CLI_EXIT_FAIL;
    int r = mgmt_check(name, reply);
    const cJSON *m = cJSON_GetObjectItem(reply, "message");
    if (!r && mgmt_json_on()) {
        if (!cJSON_GetObjectItem(reply, "op"))
            cJSON_AddStringToObject(reply, "op", sub);
        if (key && !cJSON_GetObjectItem(reply, key))
            cJSON_AddStringToObject(reply, key, val);
        return cli_print_json(reply);
    }
    if (!r && cJSON_IsString(m))
        fprintf(stderr, "raidkit %s: %s\n", name, m->valuestring);
    cJSON_Delete(reply);
    return r;
}

/* An online subcommand with no argument (key NULL) or one sent as key; check (optional)
 * refuses a bad argument with a usage error first. */
static int cache_simple(const char *sub, const char *key, int argc, char **argv,
                        bool (*check)(const char *arg))
{
    const char *control, *arg;
    int r = cache_online_args(sub, key ? 1 : 0, argc, argv, &control, &arg);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    if (check && !check(arg))
        return CLI_EXIT_USAGE;
    return cache_call(sub, control, key, arg);
}

static bool cache_mode_ok(const char *mode)
{
    enum rk_cache_mode m;
    if (!rk_cache_mode_parse(mode, &m))
        return true;
    fprintf(stderr,
            "raidkit cache mode: bad mode '%s' (writethrough, writeback, writearound, "
            "none)\n",
            mode);
    return false;
}

int cli_cache_mode(int argc, char **argv)
{
    return cache_simple("mode", "mode", argc, argv, cache_mode_ok);
}

int cli_cache_detach(int argc, char **argv)
{
    return cache_simple("detach", NULL, argc, argv, NULL);
}

int cli_cache_fault(int argc, char **argv)
{
    return cache_simple("fault", "spec", argc, argv, NULL);
}

int cli_cache_attach(int argc, char **argv)
{
    const char *control, *dev;
    int r = cache_online_args("attach", 1, argc, argv, &control, &dev);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    char abs[PATH_MAX];
    if (!realpath(dev, abs)) {
        fprintf(stderr, "raidkit cache attach: %s: %s\n", dev, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    return cache_call("attach", control, "device", abs);
}

static double cache_num(const cJSON *o, const char *key)
{
    const cJSON *n = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(n) ? n->valuedouble : 0;
}

void cli_cache_print_status(const cJSON *c)
{
    if (!cJSON_IsObject(c))
        return;
    const cJSON *mode = cJSON_GetObjectItem(c, "mode"), *state = cJSON_GetObjectItem(c, "state");
    const cJSON *dev = cJSON_GetObjectItem(c, "device");
    printf("cache:    %s %s on %s, %.0f of %.0f blocks of %.0f KiB used (%.1f%%), %.1f MiB "
           "dirty\n",
           cJSON_IsString(mode) ? mode->valuestring : "?",
           cJSON_IsString(state) ? state->valuestring : "?",
           cJSON_IsString(dev) && dev->valuestring[0] ? dev->valuestring : "-",
           cache_num(c, "used_blocks"), cache_num(c, "blocks"), cache_num(c, "block_size") / 1024,
           100.0 * cache_num(c, "occupancy"), cache_num(c, "dirty_bytes") / (1024.0 * 1024.0));
    printf("          read hits %.1f%%, write hits %.1f%%, write-back %.1f MiB/s, eta %.0f s\n",
           100.0 * cache_num(c, "read_hit_ratio"), 100.0 * cache_num(c, "write_hit_ratio"),
           cache_num(c, "writeback_rate_mib_s"), cache_num(c, "writeback_eta_s"));
    const cJSON *b = cJSON_GetObjectItem(c, "bypass"), *it;
    printf("          requests by reason:");
    cJSON_ArrayForEach(it, b)
    {
        if (cJSON_IsNumber(it))
            printf(" %s %.0f", it->string, it->valuedouble);
    }
    printf("\n");
}
