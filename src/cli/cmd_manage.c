/* `raidkit status|fail`: online requests to a served volume's control socket, and the option
 * parsing shared by every management command (status, fail, replace, re-add, scrub). */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/members.h"
#include "cli/manage.h"
#include "cli/report.h"
#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/member_nbd.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

#define MiB (1024.0 * 1024.0)

static const char status_usage[] =
    "Usage: raidkit status [--json] [--test] --control PATH\n"
    "\n"
    "Show the live state of a served array: level, size, members and their states (rebuild\n"
    "progress), degraded or not, the running rebuild/scrub with rate and ETA, the last scrub's\n"
    "result, unreadable ranges and per-member I/O counters.\n"
    "\n"
    "  -c, --control PATH  the control socket of `raidkit serve --control PATH`\n"
    "  -j, --json          print the JSON document (for scripts)\n"
    "  -t, --test          exit status = the array's state: 0 healthy, 3 degraded,\n"
    "                      4 recovering (rebuild or resync running, or needs resync),\n"
    "                      5 failed (data unreadable)\n"
    "  -h, --help          show this help\n";

static const char fail_usage[] =
    "Usage: raidkit fail --slot N [--json] --control PATH\n"
    "\n"
    "Mark the member in slot N of a served array failed (maintenance, tests). Refused when the\n"
    "array would lose data.\n"
    "\n"
    "  -s, --slot N        the slot to fail\n"
    "  -c, --control PATH  the control socket of a running `raidkit serve --control PATH`\n"
    "  -j, --json          print the server's reply as JSON\n"
    "  -h, --help          show this help\n";

int mgmt_parse(const char *cmd, const char *usage, int argc, char **argv, struct mgmt_opts *o)
{
    static const struct option longopts[] = {
        {"control", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"slot", required_argument, NULL, 's'},
        {"with", required_argument, NULL, 'w'},
        {"rate", required_argument, NULL, 'r'},
        {"wait", no_argument, NULL, 'W'},
        {"repair", no_argument, NULL, 'R'},
        {"no-wait", no_argument, NULL, 'n'},
        {"test", no_argument, NULL, 't'},
        {"progress", no_argument, NULL, 'P'},
        {"no-progress", no_argument, NULL, 'N'},
        {"degraded", no_argument, NULL, 'D'}, /* long option only */
        {"force", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, li;
    memset(o, 0, sizeof(*o));
    o->slot = -1;
    opterr = 0;
    optind = 1;
    while ((li = -1, c = getopt_long(argc, argv, ":c:js:w:r:WRntPfh", longopts, &li)) != -1) {
        uint64_t v;
        if (c != ':' && c != '?' && mgmt_applies_to(cmd, c, li >= 0 ? longopts[li].name : NULL))
            return CLI_EXIT_USAGE;
        switch (c) {
        case 'c':
            o->control = optarg;
            break;
        case 'j':
            o->json = mgmt_json = true;
            break;
        case 's':
            if (rk_parse_u64(optarg, &v) || v >= RK_MAX_MEMBERS) {
                fprintf(stderr, "raidkit %s: bad --slot '%s' (0..%d)\n", cmd, optarg,
                        RK_MAX_MEMBERS - 1);
                return CLI_EXIT_USAGE;
            }
            o->slot = (int64_t)v;
            break;
        case 'w':
            o->with = optarg;
            break;
        case 'r':
            if (rk_parse_u64(optarg, &v) || v > 1024 * 1024) {
                fprintf(stderr, "raidkit %s: bad --rate '%s' (MiB/s, 0 = unlimited)\n", cmd,
                        optarg);
                return CLI_EXIT_USAGE;
            }
            o->rate = v * 1024 * 1024;
            break;
        case 'W':
            o->wait = true;
            break;
        case 'R':
            o->repair = true;
            break;
        case 'n':
            o->no_wait = true;
            break;
        case 't':
            o->test = true;
            break;
        case 'P':
            mgmt_progress = CLI_PROGRESS_ON;
            break;
        case 'N':
            mgmt_progress = CLI_PROGRESS_OFF;
            break;
        case 'D':
            o->degraded = true;
            break;
        case 'f':
            o->force = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        case ':':
            fprintf(stderr, "raidkit %s: option '%s' needs a value\n", cmd, argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default:
            fprintf(stderr, "raidkit %s: unknown option '%s' (see raidkit %s --help)\n", cmd,
                    argv[optind - 1], cmd);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

int cli_status(int argc, char **argv)
{
    struct mgmt_opts o;
    int r = mgmt_parse("status", status_usage, argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    if (!o.control || optind != argc) {
        fprintf(stderr, "raidkit status: %s (see raidkit status --help)\n",
                o.control ? "unexpected arguments" : "--control PATH is required");
        return CLI_EXIT_USAGE;
    }
    cJSON *reply;
    cJSON *st = mgmt_status("status", o.control, &reply);
    int rc = st ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    if (st) {
        if (o.json) {
            char *t = cJSON_Print(st);
            if (t)
                puts(t);
            free(t);
        } else {
            mgmt_print_status(st);
        }
        if (o.test)
            rc = mgmt_state(st);
    }
    cJSON_Delete(reply);
    return rc;
}

int cli_fail(int argc, char **argv)
{
    struct mgmt_opts o;
    int r = mgmt_parse("fail", fail_usage, argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    if (!o.control || o.slot < 0 || optind != argc) {
        fprintf(stderr, "raidkit fail: --slot N and --control PATH are required, nothing else "
                        "(see raidkit fail --help)\n");
        return CLI_EXIT_USAGE;
    }
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "cmd", "fail");
    cJSON_AddNumberToObject(req, "slot", (double)o.slot);
    cJSON *reply = mgmt_call("fail", o.control, req);
    int rc = reply ? mgmt_check("fail", reply) : CLI_EXIT_FAIL;
    if (!rc && o.json) {
        cJSON_AddNumberToObject(reply, "slot", (double)o.slot);
        cJSON_AddStringToObject(reply, "state", "failed");
        return cli_print_json(reply);
    }
    if (!rc)
        printf("slot %" PRId64 " marked failed\n", o.slot);
    cJSON_Delete(reply);
    return rc;
}
