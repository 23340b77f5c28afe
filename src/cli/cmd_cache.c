/* `raidkit cache SUB`: the SSD cache tier's offline commands (docs/CLI.md "cache"). One dispatch
 * table of subcommands; `create` formats a cache device for an array and binds them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache/meta.h"
#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/members.h"
#include "cli/report.h"
#include "core/util.h"
#include "meta/superblock.h"
#include "meta/volume_cache.h"
#include "raidkit/member.h"
#include "raidkit/volume.h"

_Static_assert(RK_CACHE_BIND_BOUND == RK_SB_CACHE_BOUND && RK_CACHE_BIND_DIRTY == RK_SB_CACHE_DIRTY,
               "one set of binding bits");

static const char create_usage[] =
    "Usage: raidkit cache create --mode MODE [--block SIZE] [--force] [--json] CACHEDEV MEMBER...\n"
    "\n"
    "Format CACHEDEV (a file or block device, typically an SSD) as the cache of the array on\n"
    "MEMBER... and bind them: the cache's superblock names the array, the array's superblocks\n"
    "name the cache. The array is checked first (its members must assemble, as for `info`);\n"
    "nothing is written unless every check passes.\n"
    "\n"
    "      --mode MODE   writethrough, writeback, writearound or none\n"
    "      --block SIZE  cache block, a power of two from 4K to 1M (default 64K)\n"
    "      --force       overwrite a CACHEDEV that holds a raidkit cache or array member, and\n"
    "                    rebind an array whose current cache may hold dirty data (that data is\n"
    "                    lost)\n"
    "      --json        print {device, uuid, mode, block_size, blocks, array_uuid} as JSON\n"
    "  -h, --help        show this help\n";

struct create_args {
    enum rk_cache_mode mode;
    bool mode_set, force, json;
    uint32_t block;
    const char *cachedev;
    const char *const *members;
    int n;
};

static int create_parse(int argc, char **argv, struct create_args *a)
{
    static const struct option longopts[] = {
        {"mode", required_argument, NULL, 'm'}, {"block", required_argument, NULL, 'b'},
        {"force", no_argument, NULL, 'f'},      {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    uint64_t v;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (rk_cache_mode_parse(optarg, &a->mode)) {
                fprintf(stderr,
                        "raidkit cache create: unknown --mode '%s' (writethrough, "
                        "writeback, writearound, none)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            a->mode_set = true;
            break;
        case 'b':
            if (rk_parse_size(optarg, &v) || v < 4096 || v > 1024 * 1024 || (v & (v - 1))) {
                fprintf(stderr,
                        "raidkit cache create: bad --block '%s' (a power of two from 4K to "
                        "1M)\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            a->block = (uint32_t)v;
            break;
        case 'f':
            a->force = true;
            break;
        case 'j':
            a->json = true;
            break;
        case 'h':
            fputs(create_usage, stdout);
            return -1;
        case ':':
            fprintf(stderr, "raidkit cache create: option '%s' needs a value\n", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default:
            fprintf(stderr, "raidkit cache create: unknown option '%s' (see --help)\n",
                    argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    if (!a->mode_set || argc - optind < 2 || argc - optind - 1 > RK_MAX_MEMBERS) {
        fprintf(stderr,
                "raidkit cache create: needs --mode, CACHEDEV and 1..%d MEMBER files "
                "(see --help)\n",
                RK_MAX_MEMBERS);
        return CLI_EXIT_USAGE;
    }
    a->cachedev = argv[optind];
    a->members = (const char *const *)argv + optind + 1;
    a->n = argc - optind - 1;
    return 0;
}

/* CACHEDEV must not be one of the members (same file). */
static int create_check_distinct(const struct create_args *a)
{
    struct stat cs, ms;
    if (stat(a->cachedev, &cs))
        return 0; /* the open reports it */
    for (int i = 0; i < a->n; i++)
        if (!stat(a->members[i], &ms) && ms.st_dev == cs.st_dev && ms.st_ino == cs.st_ino) {
            fprintf(stderr, "raidkit cache create: %s is also given as member %s\n", a->cachedev,
                    a->members[i]);
            return -EINVAL;
        }
    return 0;
}

/* Foreign content of CACHEDEV's first len bytes that `cache create` must not overwrite without
 * --force (the signatures `raidkit create` refuses for members), or NULL. */
static const char *create_foreign(const uint8_t *b, size_t len)
{
    if (rk_cache_meta_has_magic(b))
        return "a raidkit cache";
    if (rk_sb_has_magic(b))
        return "a raidkit array member superblock";
    if (memcmp(b, "LUKS\xba\xbe", 6) == 0)
        return "a LUKS header";
    if (memcmp(b, "XFSB", 4) == 0)
        return "an XFS file system";
    if (len >= 65608 && memcmp(b + 65600, "_BHRfS_M", 8) == 0)
        return "a btrfs file system";
    if (rk_get_le16(b + 1080) == 0xEF53)
        return "an ext2/3/4 file system";
    if (b[510] == 0x55 && b[511] == 0xAA)
        return "a partition table or boot sector (0x55AA at 510)";
    return NULL;
}

/* What CACHEDEV holds now: refuse a raidkit cache, an array member or a file system without
 * --force. */
static int create_check_device(const struct create_args *a, struct rk_dev *dev)
{
    if (dev->size < RK_SB_SIZE)
        return 0; /* too small: the format check says so */
    size_t len = dev->size < 128 * 1024 ? RK_SB_SIZE : 128 * 1024;
    uint8_t *blk = rk_buf_alloc(len);
    if (!blk)
        return -ENOMEM;
    int r = rk_dev_read(dev, blk, len, 0);
    const char *what = r ? NULL : create_foreign(blk, len);
    if (r) {
        fprintf(stderr, "raidkit cache create: %s: cannot read: %s\n", a->cachedev, strerror(-r));
    } else if (!a->force && what) {
        fprintf(stderr, "raidkit cache create: %s already holds %s; --force overwrites it\n",
                a->cachedev, what);
        r = -EEXIST;
    }
    free(blk);
    return r;
}

/* Assemble the array read-only: its identity, and whether its binding allows a new cache. */
static int create_check_array(const struct create_args *a, struct rk_cache_format_params *p)
{
    char err[512] = "";
    struct rk_volume *v = NULL;
    struct rk_open_opts ro = {.read_only = true, .cache_rebind = true};
    int r = rk_volume_open(a->members, a->n, &ro, &v, err, sizeof(err));
    if (r) {
        fprintf(stderr, "raidkit cache create: %s\n", err);
        return r;
    }
    uint32_t flags;
    uint8_t bound[16];
    rk_volume_cache_binding(v, p->array_uuid, &p->array_size, &flags, bound);
    rk_volume_close(v);
    if ((flags & RK_CACHE_BIND_DIRTY) && !a->force) {
        char u[RK_CACHE_UUID_STR];
        fprintf(stderr,
                "raidkit cache create: the array is bound to cache %s, which may hold dirty "
                "data: detach it first (or --force, losing that data)\n",
                rk_cache_uuid_format(bound, u));
        return -EUCLEAN;
    }
    return 0;
}

/* Format, then bind the array to the new cache (the array is open writable meanwhile, so no
 * server can start on it between the two). */
static int create_write(const struct create_args *a, struct rk_dev *dev,
                        const struct rk_cache_format_params *p)
{
    char err[512] = "", u[RK_CACHE_UUID_STR], au[RK_CACHE_UUID_STR];
    struct rk_volume *v = NULL;
    struct rk_open_opts o = {.degraded = false, .cache_rebind = true};
    int r = rk_volume_open(a->members, a->n, &o, &v, err, sizeof(err));
    if (!r)
        r = rk_cache_meta_format(dev, a->cachedev, p, err, sizeof(err));
    struct rk_cache_meta *m = NULL;
    if (!r)
        r = rk_cache_meta_open_ro(dev, a->cachedev, p->array_uuid, p->array_size, &m, err,
                                  sizeof(err));
    if (!r) {
        r = rk_volume_cache_bind(v, RK_CACHE_BIND_BOUND, rk_cache_meta_uuid(m));
        if (r)
            snprintf(err, sizeof(err), "cache %s formatted, but binding the array failed: %s",
                     a->cachedev, strerror(-r));
    }
    int rc = v ? rk_volume_close(v) : 0;
    if (!r && rc) {
        r = rc;
        snprintf(err, sizeof(err), "closing the array failed: %s", strerror(-rc));
    }
    if (r) {
        fprintf(stderr, "raidkit cache create: %s\n", err);
    } else if (a->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "device", a->cachedev);
        cJSON_AddStringToObject(j, "uuid", rk_cache_uuid_format(rk_cache_meta_uuid(m), u));
        cJSON_AddStringToObject(j, "mode", rk_cache_mode_name(p->mode));
        cJSON_AddNumberToObject(j, "block_size", p->block_size);
        cJSON_AddNumberToObject(j, "blocks", (double)rk_cache_meta_blocks(m));
        cJSON_AddStringToObject(j, "array_uuid", rk_cache_uuid_format(p->array_uuid, au));
        cli_print_json(j);
    } else {
        printf("cache %s created: uuid %s, mode %s, %u KiB blocks, %llu blocks, array %s\n",
               a->cachedev, rk_cache_uuid_format(rk_cache_meta_uuid(m), u),
               rk_cache_mode_name(p->mode), p->block_size / 1024,
               (unsigned long long)rk_cache_meta_blocks(m),
               rk_cache_uuid_format(p->array_uuid, au));
    }
    rk_cache_meta_close(m);
    return r;
}

static int cache_create(int argc, char **argv)
{
    struct create_args a = {.block = 64 * 1024};
    int r = create_parse(argc, argv, &a);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    if (create_check_distinct(&a))
        return CLI_EXIT_FAIL;
    struct rk_cache_format_params p = {.block_size = a.block, .mode = a.mode};
    if (cli_refuse_busy("cache create", a.members, a.n) ||
        cli_refuse_busy("cache create", &a.cachedev, 1) || create_check_array(&a, &p))
        return CLI_EXIT_FAIL;
    struct rk_dev *dev = NULL;
    r = rk_file_open(a.cachedev, 0, &dev);
    if (r) {
        fprintf(stderr, "raidkit cache create: %s: %s\n", a.cachedev, strerror(-r));
        return CLI_EXIT_FAIL;
    }
    char err[512] = "";
    r = create_check_device(&a, dev);
    if (!r) {
        r = rk_cache_meta_format_check(dev, a.cachedev, &p, err, sizeof(err));
        if (r)
            fprintf(stderr, "raidkit cache create: %s\n", err);
    }
    if (!r)
        r = create_write(&a, dev, &p);
    rk_dev_close(dev);
    return r ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* ---- dispatch ---- */

struct cache_cmd {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand's name */
    const char *summary;
};

/* One entry per subcommand; cache-io adds mode, detach and attach here. */
static const struct cache_cmd cache_cmds[] = {
    {"create", cache_create, "format CACHEDEV as the cache of the array on MEMBER... and bind"},
    {"mode", cli_cache_mode, "online: switch a served array's cache mode (--control PATH)"},
    {"detach", cli_cache_detach, "online: write back, flush, detach the cache durably"},
    {"attach", cli_cache_attach, "online: attach CACHEDEV again, or retry a failed one"},
    {"fault", cli_cache_fault, "testing: change the cache device's fault spec (--control)"},
};

static void cache_usage(FILE *f)
{
    fputs("Usage: raidkit cache SUBCOMMAND [OPTIONS] ...\n\nSubcommands:\n", f);
    for (size_t i = 0; i < sizeof(cache_cmds) / sizeof(cache_cmds[0]); i++)
        fprintf(f, "  %-8s %s\n", cache_cmds[i].name, cache_cmds[i].summary);
    fputs("\n`raidkit cache SUBCOMMAND --help` describes each one (docs/CLI.md \"cache\").\n", f);
}

int cli_cache(int argc, char **argv)
{
    if (argc < 2) {
        cache_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        cache_usage(stdout);
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(cache_cmds) / sizeof(cache_cmds[0]); i++)
        if (!strcmp(argv[1], cache_cmds[i].name))
            return cache_cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "raidkit cache: unknown subcommand '%s' (see raidkit cache --help)\n", argv[1]);
    return CLI_EXIT_USAGE;
}
