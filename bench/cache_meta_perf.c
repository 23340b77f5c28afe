/* Cache metadata costs (bench/RESULTS.md "Cache metadata"): resident memory of the index per
 * TiB of cache, commit rate of one thread and of several sharing group commits, and the open
 * (checkpoint load + journal replay) time.
 * Usage: cache_meta_perf FILE [CACHE_SIZE [BLOCK]] — FILE is created sparse (default 64G, 64K
 * blocks) and removed at the end. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/meta.h"
#include "core/util.h"
#include "raidkit/member.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident set size in bytes (/proc/self/statm). */
static double rss(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &res) != 2)
            res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE);
}

struct worker {
    struct rk_cache_meta *m;
    uint64_t base, n, commits;
};

/* Map n blocks at bblocks base.., one commit each. */
static void *worker_run(void *arg)
{
    struct worker *w = arg;
    for (uint64_t i = 0; i < w->n; i++) {
        uint64_t c;
        if (rk_cache_meta_alloc(w->m, &c))
            break;
        rk_cache_meta_map(w->m, c, w->base + i, true);
        if (rk_cache_meta_commit(w->m))
            break;
        w->commits++;
    }
    return NULL;
}

static double commit_rate(struct rk_cache_meta *m, int threads, uint64_t base, uint64_t each)
{
    pthread_t th[16];
    struct worker w[16];
    double t0 = now();
    for (int i = 0; i < threads; i++) {
        w[i] = (struct worker){m, base + (uint64_t)i * each, each, 0};
        pthread_create(&th[i], NULL, worker_run, &w[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        total += w[i].commits;
    }
    return (double)total / (now() - t0);
}

static int open_file(const char *path, uint64_t size, struct rk_dev **dev)
{
    FILE *f = fopen(path, "w");
    if (!f || ftruncate(fileno(f), (off_t)size)) {
        perror(path);
        return 1;
    }
    fclose(f);
    return rk_file_open(path, 0, dev);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cache_meta_perf FILE [CACHE_SIZE [BLOCK]]\n");
        return 2;
    }
    uint64_t size = 64ull << 30, block = 64 * 1024;
    if ((argc > 2 && rk_parse_size(argv[2], &size)) || (argc > 3 && rk_parse_size(argv[3], &block)))
        return 2;
    rk_log_set_level(RK_LOG_ERROR);
    struct rk_dev *dev = NULL;
    if (open_file(argv[1], size, &dev))
        return 1;
    char err[512];
    struct rk_cache_format_params p = {
        .array_size = 1ull << 50, .block_size = (uint32_t)block, .mode = RK_CACHE_WRITEBACK};
    memset(p.array_uuid, 0x5a, 16);
    struct rk_cache_meta *m = NULL;
    double r0 = rss();
    if (rk_cache_meta_format(dev, argv[1], &p, err, sizeof(err)) ||
        rk_cache_meta_open(dev, argv[1], p.array_uuid, p.array_size, &m, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    uint64_t n = rk_cache_meta_blocks(m);
    double c1 = commit_rate(m, 1, 0, 2000), c4 = commit_rate(m, 4, 1000000, 2000);
    /* Fill every block (one commit per 4096 maps), dirty. */
    for (uint64_t i = 8000; i < n; i++) {
        uint64_t c;
        if (rk_cache_meta_alloc(m, &c))
            break;
        rk_cache_meta_map(m, c, 2000000 + i, true);
        if (i % 4096 == 0)
            rk_cache_meta_commit(m);
    }
    rk_cache_meta_commit(m);
    double r1 = rss();
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    double t0 = now();
    rk_cache_meta_close(m);
    double tclose = now() - t0;
    t0 = now();
    if (rk_cache_meta_open(dev, argv[1], p.array_uuid, p.array_size, &m, err, sizeof(err))) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    double topen = now() - t0;
    double per_tib = (r1 - r0) * (double)(1ull << 40) / ((double)n * (double)block);
    printf("cache %llu blocks of %llu KiB (%.0f GiB), %llu mapped, %llu dirty\n",
           (unsigned long long)n, (unsigned long long)block / 1024,
           (double)n * (double)block / (double)(1ull << 30), (unsigned long long)st.mapped,
           (unsigned long long)st.dirty);
    printf("resident growth %.1f MiB = %.0f MiB per TiB of cache (%.1f bytes per block)\n",
           (r1 - r0) / 1048576.0, per_tib / 1048576.0, (r1 - r0) / (double)n);
    printf("commits/s: 1 thread %.0f, 4 threads %.0f (one map each, FUA journal write)\n", c1, c4);
    printf("close (checkpoint) %.2f s, open (load + replay + checkpoint) %.2f s\n", tclose, topen);
    rk_cache_meta_close(m);
    rk_dev_close(dev);
    unlink(argv[1]);
    return 0;
}
