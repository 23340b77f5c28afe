/* The honest ceiling of an initial sync on emulated members (bench/RESULTS.md "Initial sync vs
 * member bandwidth"): the emulation alone moving the bytes a resync moves, with the resync's
 * shape (steps of STEP bytes, DEPTH in flight, each step's reads in parallel then its writes in
 * parallel, src/raid/resync_fast.c) but no RAID code, no compare and no parity math.
 *
 * Usage: sync_ceiling DIR PROFILE MEMBER_BYTES PATTERN...
 * PATTERN: "read" / "write" (one member alone: its sequential bandwidth as the sync's steps see
 * it), "copy N" (N members, even slots read, odd slots written: raid1 / raid10 near-2),
 * "parity N P" (N members all read, then P/N of each step written per member: raid5 P=1, raid6
 * P=2, the parity of random members). Member files DIR/ceil.mK (made at MEMBER_BYTES, removed at
 * the end). Prints per pattern: seconds, MB/s per member, CPU seconds of the process. */

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
#include "raidkit/emul.h"
#include "raidkit/member.h"

#ifndef STEP
#define STEP (4ull << 20)
#endif
#ifndef DEPTH
#define DEPTH 4
#endif
#define CHUNK (64ull << 10)
#define NMAX  16

struct pat {
    int n, parity; /* parity < 0: copy; 0 with n == 1: one member; read or write */
    bool write;
    struct rk_dev *m[NMAX];
    uint64_t size;
    atomic_ullong next;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* One step at off: the resync fast path's member I/O (reads, then writes). */
static void step(struct pat *p, char *buf, struct rk_io *io, uint64_t off)
{
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    int k = 0;
    if (p->n == 1) {
        rk_io_init(&io[0], p->m[0], p->write ? RK_OP_WRITE : RK_OP_READ, buf, STEP, off, 0);
        rk_io_run(&b, io, 1);
    } else if (p->parity < 0) {
        for (int s = 0; s < p->n; s += 2)
            rk_io_init(&io[k++], p->m[s], RK_OP_READ, buf + s * STEP, STEP, off, 0);
        rk_io_run(&b, io, k);
        k = 0;
        for (int s = 1; s < p->n; s += 2)
            rk_io_init(&io[k++], p->m[s], RK_OP_WRITE, buf + (s - 1) * STEP, STEP, off, 0);
        rk_io_run(&b, io, k);
    } else {
        for (int s = 0; s < p->n; s++)
            rk_io_init(&io[k++], p->m[s], RK_OP_READ, buf + s * STEP, STEP, off, 0);
        rk_io_run(&b, io, k);
        k = 0;
        /* Row r's parity on slots (r + j) % n, j < P (the rotation does not matter here). */
        for (uint64_t r = 0; r < STEP / CHUNK; r++)
            for (int j = 0; j < p->parity; j++) {
                int s = (int)((r + (uint64_t)j) % (uint64_t)p->n);
                rk_io_init(&io[k++], p->m[s], RK_OP_WRITE, buf + s * STEP + r * CHUNK, CHUNK,
                           off + r * CHUNK, 0);
            }
        rk_io_run(&b, io, k);
    }
    rk_io_batch_destroy(&b);
}

/* A worker's scratch, allocated and touched before the clock starts (like the sync's pool after
 * its first step). */
struct wk {
    struct pat *p;
    char *buf;
    struct rk_io *io;
};

static void *worker(void *arg)
{
    struct wk *w = arg;
    for (;;) {
        uint64_t off = atomic_fetch_add(&w->p->next, STEP);
        if (off + STEP > w->p->size)
            break;
        step(w->p, w->buf, w->io, off);
    }
    return NULL;
}

static int run(const char *dir, const struct rk_emul_params *prof, uint64_t size, struct pat *p,
               const char *name)
{
    for (int s = 0; s < p->n; s++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/ceil.m%d", dir, s);
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)size)) {
            perror(path);
            return 1;
        }
        /* Written in full (pages present, like the random members of bench/initial-sync.sh). */
        char *z = malloc(1 << 20);
        memset(z, 0xa5, 1 << 20);
        for (uint64_t o = 0; o < size; o += 1 << 20)
            if (pwrite(fd, z, 1 << 20, (off_t)o) != 1 << 20)
                return 1;
        free(z);
        close(fd);
        struct rk_dev *f;
        if (rk_file_open(path, 0, &f) || rk_emul_open(f, true, prof, &p->m[s])) {
            fprintf(stderr, "%s: cannot open\n", path);
            return 1;
        }
    }
    p->size = size;
    atomic_store(&p->next, 0);
    pthread_t th[DEPTH];
    struct wk w[DEPTH];
    for (int i = 0; i < DEPTH; i++) {
        w[i].p = p;
        w[i].buf = rk_buf_alloc((size_t)p->n * STEP);
        w[i].io = calloc(NMAX * STEP / CHUNK * 2, sizeof(*w[i].io));
        if (!w[i].buf || !w[i].io)
            return 1;
        memset(w[i].buf, 0x5a, (size_t)p->n * STEP);
    }
    double c0 = cpu_s(), t0 = now_s();
    for (int i = 0; i < DEPTH; i++)
        pthread_create(&th[i], NULL, worker, &w[i]);
    for (int i = 0; i < DEPTH; i++)
        pthread_join(th[i], NULL);
    double dt = now_s() - t0, cpu = cpu_s() - c0;
    for (int i = 0; i < DEPTH; i++) {
        free(w[i].io);
        free(w[i].buf);
    }
    uint64_t bytes = size / STEP * STEP;
    printf("%-12s %7.3f s  %7.1f MB/s per member  cpu %.2f s\n", name, dt, bytes / dt / 1e6, cpu);
    for (int s = 0; s < p->n; s++) {
        char path[4096];
        rk_dev_close(p->m[s]);
        snprintf(path, sizeof(path), "%s/ceil.m%d", dir, s);
        unlink(path);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: sync_ceiling DIR PROFILE MEMBER_BYTES PATTERN...\n");
        return 2;
    }
    struct rk_emul_params prof;
    char err[256];
    if (rk_emul_profile_load(argv[2], &prof, err, sizeof(err))) {
        fprintf(stderr, "sync_ceiling: %s\n", err);
        return 2;
    }
    uint64_t size = strtoull(argv[3], NULL, 0);
    for (int i = 4; i < argc; i++) {
        struct pat p = {.n = 1, .parity = 0};
        char name[64];
        snprintf(name, sizeof(name), "%s", argv[i]);
        if (!strcmp(argv[i], "read") || !strcmp(argv[i], "write")) {
            p.write = argv[i][0] == 'w';
        } else if (sscanf(argv[i], "copy %d", &p.n) == 1 && p.n >= 2 && p.n <= NMAX) {
            p.parity = -1;
        } else if (sscanf(argv[i], "parity %d %d", &p.n, &p.parity) == 2 && p.n > p.parity &&
                   p.parity > 0 && p.n <= NMAX) {
        } else {
            fprintf(stderr, "sync_ceiling: bad pattern '%s'\n", argv[i]);
            return 2;
        }
        if (run(argv[1], &prof, size, &p, name))
            return 1;
    }
    return 0;
}
