/* nbdkit plugin serving a raidkit volume through libraidkit's public API (include/raidkit/
 * volume.h, device.h): `nbdkit raidkit member=A member=B ... [readonly=1] [degraded=1]
 * [force=1]` (docs/CLI.md, "nbdkit plugin"). The volume is assembled once per nbdkit process
 * after nbdkit forks (.after_fork: libraidkit starts threads) and closed clean at .cleanup.
 * Thread model PARALLEL: every rk_dev operation may run from many threads at once. */
#define NBDKIT_API_VERSION 2
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>
#include <sys/stat.h>

#include <nbdkit-plugin.h>

#include "cli/report.h"

#include "raidkit/device.h"
#include "raidkit/volume.h"

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

static char *rkp_members[RK_MAX_MEMBERS];
static int rkp_nmembers;
static bool rkp_readonly, rkp_degraded, rkp_force;
static struct rk_volume *rkp_vol;
static struct rk_dev *rkp_dev;

/* member=PATH (repeated, any order), readonly=BOOL, degraded=BOOL, force=BOOL. */
static int rkp_config(const char *key, const char *value)
{
    int b;
    if (!strcmp(key, "member")) {
        if (rkp_nmembers == RK_MAX_MEMBERS) {
            nbdkit_error("raidkit: more than %d member= parameters", RK_MAX_MEMBERS);
            return -1;
        }
        if (!(rkp_members[rkp_nmembers] = nbdkit_realpath(value)))
            return -1;
        rkp_nmembers++;
        return 0;
    }
    bool *flag = !strcmp(key, "readonly")   ? &rkp_readonly
                 : !strcmp(key, "degraded") ? &rkp_degraded
                 : !strcmp(key, "force")    ? &rkp_force
                                            : NULL;
    if (!flag) {
        nbdkit_error("raidkit: unknown parameter '%s' (member, readonly, degraded, force)", key);
        return -1;
    }
    if ((b = nbdkit_parse_bool(value)) < 0)
        return -1;
    *flag = b;
    return 0;
}

/* Why the volume could not be opened (after_fork), reported by every .open; "" when open. */
static char rkp_open_err[4800];

static int rkp_config_complete(void)
{
    if (rkp_nmembers == 0) {
        nbdkit_error("raidkit: no member= given (member=PATH, once per member file)");
        return -1;
    }
    /* the same file twice (also through a symlink or hard link): said so, not "busy" */
    for (int i = 0; i < rkp_nmembers; i++)
        for (int j = 0; j < i; j++) {
            struct stat a, b;
            if (!strcmp(rkp_members[i], rkp_members[j]) ||
                (!stat(rkp_members[i], &a) && !stat(rkp_members[j], &b) && a.st_dev == b.st_dev &&
                 a.st_ino == b.st_ino)) {
                nbdkit_error("raidkit: member=%s given twice (the same file)", rkp_members[i]);
                return -1;
            }
        }
    return 0;
}

/* Say the library's advice in the plugin's terms: `serve` options become this plugin's
 * parameters (the message of rk_volume_open names --degraded, --force, --read-only). */
static void rkp_plugin_terms(char *msg, size_t size)
{
    static const char *const map[][2] = {{"--degraded", "degraded=true"},
                                         {"--force", "force=true"},
                                         {"--read-only", "readonly=true"}};
    char out[sizeof(rkp_open_err)];
    size_t o = 0;
    for (const char *p = msg; *p && o + 1 < sizeof(out);) {
        size_t k, n = 0;
        for (k = 0; k < sizeof(map) / sizeof(map[0]); k++) {
            n = strlen(map[k][0]);
            if (!strncmp(p, map[k][0], n) && !(p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z')))
                break;
        }
        if (k < sizeof(map) / sizeof(map[0])) {
            o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", map[k][1]);
            if (o >= sizeof(out))
                o = sizeof(out) - 1;
            p += n;
        } else
            out[o++] = *p++;
    }
    out[o] = '\0';
    snprintf(msg, size, "%s", out);
}

/* Assemble the volume. On failure every connection's .open fails with the reason, so a client
 * (and `nbdkit --run CMD`) gets the error at once (an after_fork error alone left a connecting
 * client waiting for ever). */
static int rkp_after_fork(void)
{
    struct rk_open_opts o = {
        .degraded = rkp_degraded, .read_only = rkp_readonly, .force = rkp_force};
    char err[512] = "", hint[4200];
    int r = rk_volume_open((const char *const *)rkp_members, rkp_nmembers, &o, &rkp_vol, err,
                           sizeof(err));
    if (r) {
        snprintf(rkp_open_err, sizeof(rkp_open_err), "raidkit: %s%s", err[0] ? err : strerror(-r),
                 cli_busy_hint((const char *const *)rkp_members, rkp_nmembers, hint, sizeof(hint)));
        rkp_plugin_terms(rkp_open_err, sizeof(rkp_open_err));
        nbdkit_error("%s", rkp_open_err);
        return 0;
    }
    rkp_dev = rk_volume_dev(rkp_vol);
    return 0;
}

static void rkp_cleanup(void)
{
    if (rkp_vol && rk_volume_close(rkp_vol))
        nbdkit_error("raidkit: closing the volume failed; the array stays marked dirty");
    rkp_vol = NULL;
    for (int i = 0; i < rkp_nmembers; i++)
        free(rkp_members[i]);
}

static void *rkp_open(int readonly)
{
    if (!rkp_dev) {
        nbdkit_error("%s", rkp_open_err[0] ? rkp_open_err : "raidkit: the volume is not open");
        return NULL;
    }
    return rkp_dev; /* one shared device; connections need no state of their own */
}

static int64_t rkp_get_size(void *h)
{
    return (int64_t)rkp_dev->size;
}

static int rkp_block_size(void *h, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
    *minimum = rkp_dev->block_size;
    *preferred = rkp_dev->opt_io_size > 4096 ? rkp_dev->opt_io_size : 4096;
    if (*preferred > 2 * 1024 * 1024)
        *preferred = 2 * 1024 * 1024;
    *maximum = 0xffffffff;
    return 0;
}

static int rkp_can_write(void *h)
{
    return !rkp_readonly;
}

static int rkp_yes(void *h)
{
    return 1;
}

static int rkp_can_fua(void *h)
{
    return NBDKIT_FUA_NATIVE;
}

static int rkp_can_fast_zero(void *h)
{
    return 1; /* .zero answers ENOTSUP for FAST_ZERO when the stack cannot zero fast */
}

/* The result of an rk_dev call as nbdkit wants it. */
static int rkp_ret(int r)
{
    if (!r)
        return 0;
    nbdkit_set_error(-r);
    return -1;
}

/* O_DIRECT members need 4096-aligned buffers; nbdkit's are not always. */
static bool rkp_bounce(const void *buf)
{
    return rkp_dev->direct && ((uintptr_t)buf & 4095);
}

static int rkp_pread(void *h, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
    if (!rkp_bounce(buf))
        return rkp_ret(rk_dev_read(rkp_dev, buf, count, offset));
    void *b = rk_buf_alloc(count);
    if (!b)
        return rkp_ret(-ENOMEM);
    int r = rk_dev_read(rkp_dev, b, count, offset);
    if (!r)
        memcpy(buf, b, count);
    free(b);
    return rkp_ret(r);
}

static int rkp_pwrite(void *h, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
    uint32_t f = flags & NBDKIT_FLAG_FUA ? RK_WRITE_FUA : 0;
    if (!rkp_bounce(buf))
        return rkp_ret(rk_dev_write(rkp_dev, buf, count, offset, f));
    void *b = rk_buf_alloc(count);
    if (!b)
        return rkp_ret(-ENOMEM);
    memcpy(b, buf, count);
    int r = rk_dev_write(rkp_dev, b, count, offset, f);
    free(b);
    return rkp_ret(r);
}

static int rkp_flush(void *h, uint32_t flags)
{
    return rkp_ret(rk_dev_flush(rkp_dev));
}

static int rkp_trim(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
    int r = rk_dev_discard(rkp_dev, count, offset);
    if (!r && (flags & NBDKIT_FLAG_FUA))
        r = rk_dev_flush(rkp_dev);
    return rkp_ret(r);
}

static int rkp_zero(void *h, uint32_t count, uint64_t offset, uint32_t flags)
{
    if ((flags & NBDKIT_FLAG_FAST_ZERO) && !rk_dev_zero_fast(rkp_dev))
        return rkp_ret(-ENOTSUP);
    uint32_t f = (flags & NBDKIT_FLAG_FUA ? RK_WRITE_FUA : 0) |
                 (flags & NBDKIT_FLAG_MAY_TRIM ? 0 : RK_ZERO_NO_HOLE);
    return rkp_ret(rk_dev_write_zeroes(rkp_dev, count, offset, f));
}

/* base:allocation from the members' holes (rk_dev_map), as the built-in server answers it. */
static int rkp_extents(void *h, uint32_t count, uint64_t offset, uint32_t flags,
                       struct nbdkit_extents *ext)
{
    uint64_t end = offset + count;
    while (offset < end) {
        uint64_t len;
        bool hole;
        int r = rk_dev_map(rkp_dev, offset, end - offset, &len, &hole);
        if (r)
            return rkp_ret(r);
        if (nbdkit_add_extent(ext, offset, len, hole ? NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO : 0))
            return -1;
        offset += len;
        if (flags & NBDKIT_FLAG_REQ_ONE)
            break;
    }
    return 0;
}

static struct nbdkit_plugin plugin = {
    .name = "raidkit",
    .longname = "raidkit software RAID volume",
    .description = "Serves a raidkit array assembled from its member files",
    .config = rkp_config,
    .config_complete = rkp_config_complete,
    .config_help = "member=PATH      (required, once per member, any order)\n"
                   "readonly=BOOL    open the members read-only\n"
                   "degraded=BOOL    allow members to be missing\n"
                   "force=BOOL       start a dirty and degraded array",
    .after_fork = rkp_after_fork,
    .cleanup = rkp_cleanup,
    .open = rkp_open,
    .get_size = rkp_get_size,
    .block_size = rkp_block_size,
    .can_write = rkp_can_write,
    .can_flush = rkp_yes,
    .can_trim = rkp_yes,
    .can_zero = rkp_yes,
    .can_fast_zero = rkp_can_fast_zero,
    .can_fua = rkp_can_fua,
    .can_multi_conn = rkp_yes,
    .can_extents = rkp_yes,
    .pread = rkp_pread,
    .pwrite = rkp_pwrite,
    .flush = rkp_flush,
    .trim = rkp_trim,
    .zero = rkp_zero,
    .extents = rkp_extents,
};

NBDKIT_REGISTER_PLUGIN(plugin)
