/* `raidkit create` and `raidkit info`: build a new array on member files, and describe the
 * superblocks of existing members. Validation happens in rk_volume_create before any write. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/util.h"
#include "raidkit/volume.h"

static const char create_usage[] =
    "Usage: raidkit create --level LEVEL [--chunk SIZE] [--name NAME] [--size SIZE] [--force]\n"
    "                      [--assume-clean] [--bitmap internal|none] [--bitmap-region SIZE]\n"
    "                      [--write-hole ppl|none] MEMBER...\n"
    "\n"
    "Write a raidkit superblock to every MEMBER (in slot order) and build a new array.\n"
    "\n"
    "  -l, --level LEVEL  linear, 0|raid0, 1|raid1, 10|raid10, 5|raid5, 6|raid6\n"
    "  -c, --chunk SIZE   chunk size, a power of two from 4K to 64M (default 64K)\n"
    "  -n, --name NAME    array name, up to 31 bytes (default: none)\n"
    "  -s, --size SIZE    create missing member files (sparse) or extend them to SIZE first\n"
    "  -f, --force        overwrite members that hold a raidkit superblock or a file system\n"
    "      --assume-clean don't zero the data areas (raid1/10/5/6): you promise the members\n"
    "                     already agree (mirrors equal, parity valid); else scrub and degraded "
    "reads fail\n"
    "      --bitmap internal|none\n"
    "                     write-intent bitmap in every member's metadata area (default\n"
    "                     internal, raid1/10/5/6): after a crash only marked regions resync\n"
    "      --bitmap-region SIZE\n"
    "                     data bytes per bitmap bit, a power of two >= 64K and >= the chunk\n"
    "                     (default: the smallest that fits one 4 KiB bitmap block)\n"
    "      --write-hole ppl|none  raid5/raid6: close the write hole with a partial parity log\n"
    "                     in every member's metadata area (default ppl), or not (none: a crash\n"
    "                     while degraded can corrupt data, and such a start needs --force)\n"
    "  -h, --help         show this help\n"
    "\n"
    "Members need at least 1 MiB (superblock and metadata area) plus one chunk. Every argument\n"
    "and member is checked before anything is written. With redundancy (raid1/10/5/6) the\n"
    "members' data areas are zeroed (hole punch / BLKZEROOUT) so the array starts consistent.\n"
    "Example: raidkit create --level 10 --size 1G m0.img m1.img m2.img m3.img\n";

/* --write-hole ppl|none; 0, or -1 after a usage message. */
static int create_write_hole_opt(const char *arg, int *mode)
{
    if (!strcmp(arg, "ppl"))
        *mode = RK_WRITE_HOLE_PPL;
    else if (!strcmp(arg, "none"))
        *mode = RK_WRITE_HOLE_NONE;
    else {
        fprintf(stderr, "raidkit create: bad --write-hole '%s' (ppl or none)\n", arg);
        return -1;
    }
    return 0;
}

/* Parse create's options into *o (members start at optind). 0, -1 after --help, or
 * CLI_EXIT_USAGE after a message. */
static int create_parse(int argc, char **argv, struct rk_create_opts *o)
{
    static const struct option longopts[] = {
        {"level", required_argument, NULL, 'l'},
        {"chunk", required_argument, NULL, 'c'},
        {"name", required_argument, NULL, 'n'},
        {"size", required_argument, NULL, 's'},
        {"force", no_argument, NULL, 'f'},
        {"assume-clean", no_argument, NULL, 'A'}, /* long option only */
        {"bitmap", required_argument, NULL, 'B'},
        {"bitmap-region", required_argument, NULL, 'R'},
        {"write-hole", required_argument, NULL, 'W'}, /* long option only */
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *level = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":l:c:n:s:fh", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case 'l':
            level = optarg;
            if (rk_level_parse(optarg, &o->level)) {
                fprintf(
                    stderr,
                    "raidkit create: unknown level '%s' (linear, 0, 1, 10, 5, 6 — or raid0...)\n",
                    optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 'c':
            if (rk_parse_size(optarg, &v) || v < RK_CHUNK_MIN || v > RK_CHUNK_MAX ||
                (v & (v - 1))) {
                fprintf(stderr,
                        "raidkit create: bad chunk size '%s' (a power of two from 4K to 64M)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            o->chunk = (uint32_t)v;
            break;
        case 'n':
            if (strlen(optarg) > 31) {
                fprintf(stderr, "raidkit create: name '%s' is longer than 31 bytes\n", optarg);
                return CLI_EXIT_USAGE;
            }
            o->name = optarg;
            break;
        case 's':
            if (rk_parse_size(optarg, &v) || v == 0) {
                fprintf(stderr, "raidkit create: bad size '%s' (e.g. 512M, 4G)\n", optarg);
                return CLI_EXIT_USAGE;
            }
            o->size = v;
            break;
        case 'f':
            o->force = true;
            break;
        case 'A':
            o->assume_clean = true;
            break;
        case 'B':
            if (strcmp(optarg, "internal") && strcmp(optarg, "none")) {
                fprintf(stderr, "raidkit create: bad --bitmap '%s' (internal or none)\n", optarg);
                return CLI_EXIT_USAGE;
            }
            o->no_bitmap = !strcmp(optarg, "none");
            break;
        case 'R':
            if (rk_parse_size(optarg, &v) || v == 0) {
                fprintf(stderr, "raidkit create: bad --bitmap-region '%s' (e.g. 1M)\n", optarg);
                return CLI_EXIT_USAGE;
            }
            o->bitmap_region = v;
            break;
        case 'W':
            if (create_write_hole_opt(optarg, &o->write_hole))
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            fputs(create_usage, stdout);
            return -1;
        case ':':
            fprintf(stderr, "raidkit create: option '%s' needs a value\n", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default:
            fprintf(stderr, "raidkit create: unknown option '%s' (see raidkit create --help)\n",
                    argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    if (!level) {
        fprintf(stderr, "raidkit create: --level is required (see raidkit create --help)\n");
        return CLI_EXIT_USAGE;
    }
    return 0;
}

int cli_create(int argc, char **argv)
{
    struct rk_create_opts o = {.level = -100};
    int r = create_parse(argc, argv, &o);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    int n = argc - optind;
    if (n <= 0) {
        fprintf(stderr, "raidkit create: no members given (see raidkit create --help)\n");
        return CLI_EXIT_USAGE;
    }
    char err[512] = "";
    r = rk_volume_create((const char *const *)argv + optind, n, &o, err, sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit create: %s\n", err[0] ? err : strerror(-r));
        return CLI_EXIT_FAIL;
    }
    printf("created %s array over %d member%s\n", rk_level_name(o.level), n, n == 1 ? "" : "s");
    return CLI_EXIT_OK;
}

static const char info_usage[] =
    "Usage: raidkit info [--json] MEMBER...\n"
    "\n"
    "Read the superblocks of MEMBER files (read-only) and show the array they belong to: UUID,\n"
    "name, level, chunk, size, event counter, clean/dirty, and each member's slot and state.\n"
    "Unreadable, foreign, stale or corrupt members are named with the reason.\n"
    "\n"
    "  -j, --json   print one JSON document (for scripts)\n"
    "  -h, --help   show this help\n";

int cli_info(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bool json = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(info_usage, stdout);
            return CLI_EXIT_OK;
        default:
            fprintf(stderr, "raidkit info: unknown option '%s' (see raidkit info --help)\n",
                    argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    int n = argc - optind;
    if (n <= 0) {
        fprintf(stderr, "raidkit info: no members given (see raidkit info --help)\n");
        return CLI_EXIT_USAGE;
    }
    char err[512] = "";
    char *text = rk_volume_info((const char *const *)argv + optind, n, json, err, sizeof(err));
    if (!text) {
        fprintf(stderr, "raidkit info: %s\n", err[0] ? err : "cannot read any member");
        return CLI_EXIT_FAIL;
    }
    fputs(text, stdout);
    size_t len = strlen(text);
    if (len && text[len - 1] != '\n')
        fputc('\n', stdout);
    free(text);
    return CLI_EXIT_OK;
}
