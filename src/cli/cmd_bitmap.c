/* `raidkit bitmap --add`: give an array created without a write-intent bitmap (an older array,
 * or `create --bitmap none`) an internal one, offline. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/members.h"
#include "cli/report.h"
#include "core/util.h"
#include "raidkit/volume.h"

static const char bitmap_usage[] =
    "Usage: raidkit bitmap --add [--region SIZE] [--json] MEMBER...\n"
    "\n"
    "Add an internal write-intent bitmap to a stopped array that has none (created before\n"
    "bitmaps existed, or with --bitmap none), so that an unclean shutdown resyncs only the\n"
    "regions written around the crash. The array must be in sync (no resync pending) and\n"
    "every member must be given (the bitmap is written to each). Once every check passed, a\n"
    "warning on stderr says what is written: the bitmap into the metadata area of every member,\n"
    "then every superblock; keep the array stopped and do not interrupt it.\n"
    "\n"
    "      --add          add the bitmap (the only action)\n"
    "      --region SIZE  data bytes per bit (power of two >= 64K and >= the chunk; default\n"
    "                     the smallest that fits one 4 KiB block)\n"
    "      --json         print {\"result\": \"added\", \"members\": N} as JSON\n"
    "  -h, --help         show this help\n";

int cli_bitmap(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"add", no_argument, NULL, 'a'},
        {"region", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool add = false, json = false;
    uint64_t region = 0;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'a':
            add = true;
            break;
        case 'j':
            json = true;
            break;
        case 'r':
            if (rk_parse_size(optarg, &region) || region < 64 * 1024 || (region & (region - 1))) {
                fprintf(stderr,
                        "raidkit bitmap: bad --region '%s' (a power of two >= 64K, e.g. 1M)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'h':
            fputs(bitmap_usage, stdout);
            return CLI_EXIT_OK;
        case ':':
            fprintf(stderr, "raidkit bitmap: option '%s' needs a value\n", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default:
            fprintf(stderr, "raidkit bitmap: unknown option '%s' (see raidkit bitmap --help)\n",
                    argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    int n = argc - optind;
    if (!add || n <= 0) {
        fprintf(stderr, "raidkit bitmap: needs --add and the MEMBER files (see raidkit bitmap "
                        "--help)\n");
        return CLI_EXIT_USAGE;
    }
    if (cli_refuse_busy("bitmap", (const char *const *)argv + optind, n))
        return CLI_EXIT_FAIL;
    char err[512] = "";
    int r = rk_volume_bitmap_add((const char *const *)argv + optind, n, region, err, sizeof(err));
    if (r) {
        /* The open's advice for missing members names serve's --degraded, which bitmap does
         * not take: a bitmap has to be written to every member, so say that instead. */
        char *hint = strstr(err, "; start with --degraded");
        if (hint)
            snprintf(hint, sizeof(err) - (size_t)(hint - err),
                     "; bitmap --add writes every member: give them all (a missing member can "
                     "be put back first with re-add or replace)");
        fprintf(stderr, "raidkit bitmap: %s\n", err[0] ? err : strerror(-r));
        return CLI_EXIT_FAIL;
    }
    if (json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "result", "added");
        cJSON_AddNumberToObject(j, "members", n);
        return cli_print_json(j);
    }
    printf("write-intent bitmap added\n");
    return CLI_EXIT_OK;
}
