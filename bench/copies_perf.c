/* In-process cost of the copy levels' write path (bench/RESULTS.md "Copies"): CPU time and
 * context switches per random write of raid0, raid10 and raid1 (4 members) through
 * rk_volume_open + rk_dev_write, beside a bare pwrite to one member file, so the RAID layer's
 * own cost (what is not the member writes themselves) shows without the NBD hop and fio.
 *
 * Usage: copies_perf [DIR [SECONDS [THREADS]]]   (defaults /dev/shm, 0.5, 4)
 * Member files DIR/copies_perf.mN (4 x 64 MiB, written in full first, removed at the end);
 * every volume is written in full once before its timed runs (bitmap bits set, blocks there).
 * Rounds interleave the configurations; the median of 5 rounds is printed. */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "raidkit/device.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

#define NMEM   4
#define MSIZE  (64ull << 20)
#define ROUNDS 5

struct cfg {
    const char *name;
    int level;   /* RK_LEVEL_*, or -100 = bare pwrite to one member file */
    bool bitmap; /* write-intent bitmap (levels with redundancy) */
    int copies;  /* member writes per host write */
};

static const struct cfg cfgs[] = {
    {"pwrite (1 member)", -100, false, 1},       {"raid0", RK_LEVEL_RAID0, false, 1},
    {"raid10 bitmap", RK_LEVEL_RAID10, true, 2}, {"raid10 no bitmap", RK_LEVEL_RAID10, false, 2},
    {"raid1 bitmap", RK_LEVEL_RAID1, true, 4},   {"raid1 no bitmap", RK_LEVEL_RAID1, false, 4},
};
#define NCFG (sizeof(cfgs) / sizeof(cfgs[0]))

struct run {
    struct rk_dev *dev; /* NULL: pwrite to fd */
    int fd;
    uint64_t size, bs;
    double secs;
    atomic_bool stop;
    atomic_ullong writes;
    atomic_int errors;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *writer(void *arg)
{
    struct run *r = arg;
    void *buf = rk_buf_alloc(r->bs);
    uint64_t x = (uint64_t)(uintptr_t)&buf ^ (uint64_t)time(NULL), n = 0;
    if (!buf)
        return NULL;
    memset(buf, 0x5a, r->bs);
    while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t off = (x >> 16) % (r->size / r->bs) * r->bs;
        int e = r->dev ? rk_dev_write(r->dev, buf, r->bs, off, 0)
                       : (pwrite(r->fd, buf, r->bs, (off_t)off) == (ssize_t)r->bs ? 0 : -EIO);
        if (e)
            atomic_fetch_add(&r->errors, 1);
        n++;
    }
    atomic_fetch_add(&r->writes, n);
    free(buf);
    return NULL;
}

/* Process CPU seconds and context switches so far. */
static void usage_now(double *cpu, long *cs)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    *cs = ru.ru_nvcsw + ru.ru_nivcsw;
}

/* One timed run with nthreads writers: CPU us and context switches per write. */
static int timed(struct run *r, int nthreads, double *us, double *cs_per)
{
    pthread_t t[64];
    double c0, c1;
    long s0, s1;
    atomic_store(&r->stop, false);
    atomic_store(&r->writes, 0);
    usage_now(&c0, &s0);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, writer, r);
    double end = mono() + r->secs;
    while (mono() < end)
        usleep(10000);
    atomic_store(&r->stop, true);
    for (int i = 0; i < nthreads; i++)
        pthread_join(t[i], NULL);
    usage_now(&c1, &s1);
    unsigned long long n = atomic_load(&r->writes);
    if (!n || atomic_load(&r->errors))
        return -1;
    *us = (c1 - c0) * 1e6 / (double)n;
    *cs_per = (double)(s1 - s0) / (double)n;
    return 0;
}

static int fill(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    static char z[1 << 20];
    for (uint64_t o = 0; o < MSIZE; o += sizeof(z))
        if (pwrite(fd, z, sizeof(z), (off_t)o) != (ssize_t)sizeof(z)) {
            close(fd);
            return -1;
        }
    close(fd);
    return 0;
}

/* Create and open configuration c over the member files; *v NULL for the bare pwrite. */
static int cfg_open(const struct cfg *c, const char *const *paths, struct rk_volume **v, int *fd)
{
    char err[256];
    *v = NULL;
    *fd = -1;
    if (c->level == -100) {
        /* As the file member opens it: O_DIRECT where the file system takes it. */
        *fd = open(paths[0], O_RDWR | O_DIRECT);
        if (*fd < 0)
            *fd = open(paths[0], O_RDWR);
        return *fd < 0 ? -1 : 0;
    }
    struct rk_create_opts co = {.level = c->level,
                                .chunk = 64 * 1024,
                                .force = true,
                                .assume_clean = c->level != RK_LEVEL_RAID0,
                                .no_bitmap = !c->bitmap};
    if (rk_volume_create(paths, NMEM, &co, err, sizeof(err))) {
        fprintf(stderr, "copies_perf: create %s: %s\n", c->name, err);
        return -1;
    }
    struct rk_open_opts oo = {0};
    if (rk_volume_open(paths, NMEM, &oo, v, err, sizeof(err))) {
        fprintf(stderr, "copies_perf: open %s: %s\n", c->name, err);
        return -1;
    }
    return 0;
}

/* Write the whole volume once in 1 MiB pieces: every write-intent bitmap region is set and
 * every member block allocated before the timed runs (the steady state, not first writes). */
static int warm(struct rk_dev *dev)
{
    const uint64_t piece = 1 << 20;
    void *buf = rk_buf_alloc(piece);
    int e = buf ? 0 : -1;
    if (buf)
        memset(buf, 0, piece);
    for (uint64_t o = 0; !e && o < dev->size; o += piece)
        e = rk_dev_write(dev, buf, dev->size - o < piece ? dev->size - o : piece, o, 0);
    free(buf);
    return e;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/dev/shm";
    double secs = argc > 2 ? atof(argv[2]) : 0.5;
    int nthreads = argc > 3 ? atoi(argv[3]) : 4;
    static const uint64_t sizes[] = {4096, 16384};
    char pbuf[NMEM][512];
    const char *paths[NMEM];
    double us[2][NCFG][ROUNDS], cs[2][NCFG][ROUNDS];
    int ret = 1;

    if (secs <= 0 || nthreads < 1 || nthreads > 64) {
        fprintf(stderr, "usage: copies_perf [DIR [SECONDS [THREADS (1..64)]]]\n");
        return 2;
    }
    for (int i = 0; i < NMEM; i++) {
        snprintf(pbuf[i], sizeof(pbuf[i]), "%s/copies_perf.m%d", dir, i);
        paths[i] = pbuf[i];
        if (fill(paths[i])) {
            fprintf(stderr, "copies_perf: %s: %s\n", paths[i], strerror(errno));
            goto out;
        }
    }
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t k = 0; k < NCFG; k++) {
            size_t ci = (k + (size_t)round) % NCFG; /* who goes first rotates */
            const struct cfg *c = &cfgs[ci];
            struct rk_volume *v;
            int fd;
            if (cfg_open(c, paths, &v, &fd))
                goto out;
            struct run r = {.dev = v ? rk_volume_dev(v) : NULL, .fd = fd, .secs = secs};
            r.size = v ? r.dev->size : MSIZE - (1 << 20);
            if (v && warm(r.dev)) {
                fprintf(stderr, "copies_perf: %s: warm-up write failed\n", c->name);
                goto out;
            }
            for (int s = 0; s < 2; s++) {
                r.bs = sizes[s];
                if (timed(&r, nthreads, &us[s][ci][round], &cs[s][ci][round])) {
                    fprintf(stderr, "copies_perf: %s: write errors\n", c->name);
                    goto out;
                }
            }
            if (v)
                rk_volume_close(v);
            else
                close(fd);
        }
    }
    printf("copy levels in process: %d writer threads, %.2f s per run, %d rounds (median), members "
           "%d x %llu MiB in %s\n",
           nthreads, secs, ROUNDS, NMEM, (unsigned long long)(MSIZE >> 20), dir);
    for (int s = 0; s < 2; s++) {
        double med[NCFG], csm[NCFG];
        for (size_t ci = 0; ci < NCFG; ci++) {
            qsort(us[s][ci], ROUNDS, sizeof(double), cmp_d);
            qsort(cs[s][ci], ROUNDS, sizeof(double), cmp_d);
            med[ci] = us[s][ci][ROUNDS / 2];
            csm[ci] = cs[s][ci][ROUNDS / 2];
        }
        printf("\n%lluK random write     cpu us/write  x raid0  ctx sw/write  raid layer us "
               "(cpu - copies x pwrite)\n",
               (unsigned long long)(sizes[s] >> 10));
        for (size_t ci = 0; ci < NCFG; ci++)
            printf("%-22s %12.2f %8.2f %13.3f %14.2f\n", cfgs[ci].name, med[ci], med[ci] / med[1],
                   csm[ci], med[ci] - cfgs[ci].copies * med[0]);
    }
    ret = 0;
out:
    for (int i = 0; i < NMEM; i++)
        unlink(pbuf[i]);
    return ret;
}
