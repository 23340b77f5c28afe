/* The back-ends served by raidkit's own NBD server in this process: "raidkit" (a volume of any
 * level on member files, wrapped in the device model with --model) and "noop" (an in-memory
 * device: what the harness moves with no device at all, the ceiling of every row). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/run.h"
#include "core/util.h"
#include "raidkit/nbd.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

/* Write size when filling members and the noop device before measuring. */
#define LOCAL_FILL_CHUNK (1u << 20)

/* The in-process NBD server of a configuration. */
struct local_server {
    struct rk_nbd_server *srv;
    pthread_t thread;
    bool thread_started;
};

/* State of a raidkit or noop configuration (t->priv). */
struct local_state {
    struct local_server server;
    struct rk_volume *vol; /* raidkit */
    struct rk_dev *memdev; /* noop */
    char paths[RK_MAX_MEMBERS][600];
    int npaths;
};

static void *local_server_thread(void *arg)
{
    rk_nbd_server_run(arg);
    return NULL;
}

/* Serve dev on the private socket from a thread of this process; t->uri names it. */
static int local_serve(struct run_ctx *x, struct rk_dev *dev, struct local_server *s,
                       struct run_target *t, char *err, size_t errlen)
{
    char sock[560], listen[600];
    run_socket_path(x, sock, sizeof(sock));
    snprintf(listen, sizeof(listen), "unix:%s", sock);
    int threads = 2 * x->max_iodepth;
    if (threads < 16)
        threads = 16;
    struct rk_nbd_opts no = {.listen = listen, .export_name = "bench", .threads = threads};
    int r = rk_nbd_server_create(dev, &no, &s->srv, err, errlen);
    if (r < 0)
        return r;
    /* The server thread must not take Ctrl-C: the main thread handles it and stops fio. */
    sigset_t all, old;
    sigemptyset(&all);
    sigaddset(&all, SIGINT);
    sigaddset(&all, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    r = -pthread_create(&s->thread, NULL, local_server_thread, s->srv);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r < 0) {
        rk_set_err(err, errlen, "server thread: %s", strerror(-r));
        return r;
    }
    s->thread_started = true;
    snprintf(t->uri, sizeof(t->uri), "nbd+unix:///bench?socket=%s", sock);
    return 0;
}

/* A zeroed buffer for filling members and the noop device (never freed). */
static const void *local_zero_buf(void)
{
    static void *buf;
    if (!buf)
        buf = rk_buf_alloc(LOCAL_FILL_CHUNK);
    if (buf)
        memset(buf, 0, LOCAL_FILL_CHUNK);
    return buf;
}

/*
 * Write every byte of a new member file (or the noop device) before it is measured. Sparse
 * memory costs a page allocation at the first write of each page, and on a VM that hands freed
 * memory back to the host (free page reporting) a host fault too: measured at 5-10x the cost of
 * a later write, so the first trials of the first write job ran at a quarter of the later ones
 * (randwrite noop 48 then 880 MB/s; raid1 on 4 members pays it 4x per request) and the rows
 * depended on which configuration ran before. Filled, every trial sees the steady state.
 */
int run_fill_file(const char *path, uint64_t size, char *err, size_t errlen)
{
    const void *zero = local_zero_buf();
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int r = 0;
    if (fd < 0 || !zero) {
        r = fd < 0 ? -errno : -ENOMEM;
        goto out;
    }
    for (uint64_t off = 0; off < size;) {
        size_t n = size - off < LOCAL_FILL_CHUNK ? (size_t)(size - off) : LOCAL_FILL_CHUNK;
        ssize_t k = pwrite(fd, zero, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            r = k < 0 ? -errno : -EIO;
            goto out;
        }
        off += (uint64_t)k;
    }
out:
    if (r)
        rk_set_err(err, errlen, "%s: %s", path, strerror(-r));
    if (fd >= 0)
        close(fd);
    return r;
}

static int local_fill_dev(struct rk_dev *dev, char *err, size_t errlen)
{
    const void *zero = local_zero_buf();
    if (!zero) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    for (uint64_t off = 0; off < dev->size;) {
        uint64_t n = dev->size - off < LOCAL_FILL_CHUNK ? dev->size - off : LOCAL_FILL_CHUNK;
        int r = rk_dev_write(dev, zero, n, off, 0);
        if (r < 0) {
            rk_set_err(err, errlen, "filling the in-memory device: %s", strerror(-r));
            return r;
        }
        off += n;
    }
    return 0;
}

static void local_stop(struct run_ctx *x, struct run_target *t)
{
    struct local_state *st = t->priv;
    if (!st)
        return;
    if (st->server.srv) {
        rk_nbd_server_stop(st->server.srv);
        if (st->server.thread_started)
            pthread_join(st->server.thread, NULL);
        rk_nbd_server_destroy(st->server.srv);
    }
    if (st->vol) {
        int r = rk_volume_close(st->vol);
        if (r < 0)
            rk_warn("bench: closing the volume: %s", strerror(-r));
    }
    if (st->memdev)
        rk_dev_close(st->memdev);
    for (int i = 0; i < st->npaths; i++)
        unlink(st->paths[i]);
    free(st);
    t->priv = NULL;
}

/* ---- raidkit: a volume on member files ---- */

static const struct {
    const char *name, *label;
    int level;
} raidkit_levels[] = {
    {"single", "Single Disk", RK_LEVEL_LINEAR}, {"linear", "Linear", RK_LEVEL_LINEAR},
    {"raid0", "RAID 0", RK_LEVEL_RAID0},        {"raid1", "RAID 1", RK_LEVEL_RAID1},
    {"raid10", "RAID 1+0", RK_LEVEL_RAID10},    {"raid5", "RAID 5", RK_LEVEL_RAID5},
    {"raid6", "RAID 6", RK_LEVEL_RAID6},
};

/* "single" is linear over one member; the others use --members members. */
static bool raidkit_describe(struct bench_config *bc, const char *name, int members)
{
    for (size_t i = 0; i < sizeof(raidkit_levels) / sizeof(raidkit_levels[0]); i++) {
        if (strcmp(name, raidkit_levels[i].name))
            continue;
        bc->level = raidkit_levels[i].level;
        bc->members = i == 0 ? 1 : members;
        if (i == 0)
            snprintf(bc->label, sizeof(bc->label), "%s", raidkit_levels[i].label);
        else
            snprintf(bc->label, sizeof(bc->label), "%s (%d)", raidkit_levels[i].label, members);
        return true;
    }
    return false;
}

static int raidkit_start(struct run_ctx *x, const struct bench_config *bc, struct run_target *t,
                         char *err, size_t errlen)
{
    const char *paths[RK_MAX_MEMBERS];
    int min = rk_level_min_members(bc->level);
    if (min < 0) {
        rk_set_err(err, errlen, "level not supported by this build");
        return -ENOTSUP;
    }
    if (bc->members < min) {
        rk_set_err(err, errlen, "%s needs at least %d members (--members %d)",
                   rk_level_name(bc->level), min, bc->members);
        return -EINVAL;
    }
    struct local_state *st = run_priv_new(t, sizeof(*st), err, errlen);
    if (!st)
        return -ENOMEM;
    for (int i = 0; i < bc->members; i++) {
        snprintf(st->paths[i], sizeof(st->paths[i]), "%s/%s-m%d.img", x->work, bc->name, i);
        paths[i] = st->paths[i];
        st->npaths = i + 1;
        int r = run_fill_file(st->paths[i], x->member_size, err, errlen);
        if (r < 0)
            return r;
    }
    struct rk_create_opts co = {
        .level = bc->level, .name = "bench", .size = x->member_size, .force = true};
    int r = rk_volume_create(paths, bc->members, &co, err, errlen);
    if (r < 0)
        return r;
    struct rk_open_opts oo = {.emul = x->have_emul ? &x->emul : NULL};
    r = rk_volume_open(paths, bc->members, &oo, &st->vol, err, errlen);
    if (r < 0)
        return r;
    struct rk_dev *dev = rk_volume_dev(st->vol);
    if (dev->size < bench_suite_max_size(&x->suite)) {
        rk_set_err(err, errlen, "volume of %" PRIu64 " bytes is smaller than the suite's size",
                   dev->size);
        return -ENOSPC;
    }
    return local_serve(x, dev, &st->server, t, err, errlen);
}

static void raidkit_counts(const struct run_target *t, struct run_counts *k)
{
    const struct local_state *st = t->priv;
    memset(k, 0, sizeof(*k));
    if (!st || !st->vol)
        return;
    struct rk_dev *dev = rk_volume_dev(st->vol), *raid = rk_volume_raid(st->vol);
    const struct rk_raid_geom *g = rk_raid_geometry(raid);
    k->bytes = atomic_load(&dev->stats.read_bytes) + atomic_load(&dev->stats.write_bytes);
    k->ops = atomic_load(&dev->stats.reads) + atomic_load(&dev->stats.writes);
    if (g)
        k->geom = *g;
    struct rk_raid_bitmap_stats bs;
    if (raid && rk_raid_bitmap_stats(raid, &bs) == 0 && bs.on_disk && bs.area_size) {
        k->bm_region = bs.region;
        k->bm_off = bs.area_offset;
        k->bm_size = bs.area_size;
        k->bm_bits = bs.bits_set;
        k->bm_sets = bs.area_sets;
    }
    for (uint32_t s = 0; g && s < g->members && s < RK_MAX_MEMBERS; s++) {
        struct rk_dev *m = rk_raid_member(raid, s);
        if (!m)
            continue;
        k->r[s] = atomic_load(&m->stats.reads);
        k->w[s] = atomic_load(&m->stats.writes);
        k->rb[s] = atomic_load(&m->stats.read_bytes);
        k->wb[s] = atomic_load(&m->stats.write_bytes);
        k->fw[s] = atomic_load(&m->stats.fua_writes);
        k->fwb[s] = atomic_load(&m->stats.fua_write_bytes);
        k->fl[s] = atomic_load(&m->stats.flushes);
        k->n = (int)s + 1;
    }
}

const struct bench_backend bench_backend_raidkit = {
    .kind = "raidkit",
    .names = "single, linear, raid0, raid1, raid10, raid5, raid6",
    .modelled = true,
    .describe = raidkit_describe,
    .start = raidkit_start,
    .stop = local_stop,
    .counts = raidkit_counts,
};

/* ---- noop: an in-memory device, the harness ceiling ---- */

static bool noop_describe(struct bench_config *bc, const char *name, int members)
{
    if (strcmp(name, "noop"))
        return false;
    snprintf(bc->label, sizeof(bc->label), "noop (ceiling)");
    return true;
}

static int noop_start(struct run_ctx *x, const struct bench_config *bc, struct run_target *t,
                      char *err, size_t errlen)
{
    struct local_state *st = run_priv_new(t, sizeof(*st), err, errlen);
    if (!st)
        return -ENOMEM;
    int r = rk_mem_open(bench_suite_max_size(&x->suite), 4096, &st->memdev);
    if (r < 0) {
        rk_set_err(err, errlen, "in-memory device: %s", strerror(-r));
        return r;
    }
    r = local_fill_dev(st->memdev, err, errlen);
    if (r < 0)
        return r;
    return local_serve(x, st->memdev, &st->server, t, err, errlen);
}

const struct bench_backend bench_backend_noop = {
    .kind = "noop",
    .names = "noop",
    .ceiling = true,
    .describe = noop_describe,
    .start = noop_start,
    .stop = local_stop,
};
