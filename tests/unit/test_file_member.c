/* Unit tests of the file member: data round trips, FUA/flush, discard, write-zeroes, read-only,
 * open errors, both engines (io_uring and pread), and io_uring back-pressure (C15). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "raidkit/member.h"
#include "rk_test.h"

/* One member configuration: where the file lives and how it is opened. */
struct cfg {
    const char *base; /* /tmp is ext4 here (O_DIRECT); /dev/shm is tmpfs */
    uint32_t flags;
    const char *engine;
    const char *member_io; /* RAIDKIT_MEMBER_IO while opening (NULL: unset, the default) */
};

static const struct cfg cfg_tmp_uring = {"/tmp", 0, "io_uring", NULL};
static const struct cfg cfg_tmp_pread = {"/tmp", RK_FILE_NO_URING, "pread", NULL};
static const struct cfg cfg_shm_uring = {"/dev/shm", RK_FILE_BUFFERED, "io_uring", NULL};
static const struct cfg cfg_shm_pread = {"/dev/shm", RK_FILE_BUFFERED | RK_FILE_NO_URING, "pread",
                                         NULL};
/* tmpfs members run their data I/O inline by default; this keeps the ring path covered there. */
static const struct cfg cfg_shm_ring = {"/dev/shm", RK_FILE_BUFFERED, "io_uring", "ring"};

struct fx {
    const struct cfg *cfg;
    char dir[128];
    char path[160];
    struct rk_dev *dev;
};

#define FX_SIZE (8u << 20)

static void fill(void *buf, size_t len, uint64_t seed)
{
    rk_test_fill64(buf, len, seed * 0x9E3779B97F4A7C15ull + 1);
}

static bool is_zero(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++)
        if (p[i])
            return false;
    return true;
}

/* Create a sparse member file of size bytes in a private directory under cfg->base. */
static int fx_make_file(struct fx *x, uint64_t size)
{
    snprintf(x->dir, sizeof(x->dir), "%s/rk-file-XXXXXX", x->cfg->base);
    if (!mkdtemp(x->dir))
        return -1;
    snprintf(x->path, sizeof(x->path), "%s/m0", x->dir);
    int fd = open(x->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    int r = ftruncate(fd, (off_t)size);
    close(fd);
    return r;
}

static int setup(void **state)
{
    struct fx *x = calloc(1, sizeof(*x));
    x->cfg = *state;
    *state = x;
    if (fx_make_file(x, FX_SIZE))
        return -1;
    if (x->cfg->member_io)
        setenv("RAIDKIT_MEMBER_IO", x->cfg->member_io, 1);
    int r = rk_file_open(x->path, x->cfg->flags, &x->dev);
    unsetenv("RAIDKIT_MEMBER_IO");
    return r ? -1 : 0;
}

static int teardown(void **state)
{
    struct fx *x = *state;
    rk_dev_close(x->dev);
    if (x->path[0])
        unlink(x->path);
    if (x->dir[0])
        rmdir(x->dir);
    free(x);
    return 0;
}

/* The fixture of a test; skips io_uring configurations where the kernel refuses io_uring
 * (e.g. a container's seccomp profile), since the fallback is tested on its own. */
static struct fx *fx_get(void **state)
{
    struct fx *x = *state;
    if (strcmp(rk_file_engine(x->dev), x->cfg->engine)) {
        print_message("skipped: engine %s unavailable\n", x->cfg->engine);
        skip();
    }
    return x;
}

/* Does the file system under path accept O_DIRECT (checked independently of rk_file_open)? */
static bool fs_has_direct(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECT);
    void *buf = rk_buf_alloc(4096);
    bool ok = fd >= 0 && pread(fd, buf, 4096, 0) >= 0;
    if (fd >= 0)
        close(fd);
    free(buf);
    return ok;
}

/* Reopen the fixture's file with other flags. */
static void fx_reopen(struct fx *x, uint32_t flags)
{
    rk_dev_close(x->dev);
    x->dev = NULL;
    if (x->cfg->member_io)
        setenv("RAIDKIT_MEMBER_IO", x->cfg->member_io, 1);
    assert_int_equal(rk_file_open(x->path, flags, &x->dev), 0);
    unsetenv("RAIDKIT_MEMBER_IO");
}

static void test_geometry(void **state)
{
    struct fx *x = fx_get(state);
    struct rk_dev *d = x->dev;
    assert_string_equal(rk_file_engine(d), x->cfg->engine);
    assert_string_equal(d->ops->kind, "file");
    assert_string_equal(d->name, x->path);
    assert_int_equal(d->size, FX_SIZE);
    if (x->cfg->flags & RK_FILE_BUFFERED) {
        assert_false(d->direct);
        assert_int_equal(d->block_size, 512);
    } else {
        assert_int_equal(d->direct, fs_has_direct(x->path));
        assert_true(d->block_size == 512 || d->block_size == 4096);
    }
    /* Size is rounded down to the block size. */
    assert_int_equal(truncate(x->path, FX_SIZE + 100), 0);
    fx_reopen(x, x->cfg->flags);
    assert_int_equal(x->dev->size, FX_SIZE);
}

/* Random writes of many lengths and offsets against a shadow copy, then a full read-back. */
static void test_roundtrip(void **state)
{
    struct fx *x = fx_get(state);
    struct rk_dev *d = x->dev;
    uint32_t bs = d->block_size;
    uint8_t *shadow = calloc(1, FX_SIZE);
    uint8_t *buf = rk_buf_alloc(FX_SIZE);
    uint64_t s = 42;
    for (int i = 0; i < 200; i++) {
        uint64_t blocks = 1 + rk_test_xorshift(&s) % (i % 10 == 0 ? 512 : 16);
        uint64_t len = blocks * bs;
        uint64_t off = (rk_test_xorshift(&s) % ((FX_SIZE - len) / bs + 1)) * bs;
        fill(buf, len, (uint64_t)i);
        memcpy(shadow + off, buf, len);
        assert_int_equal(rk_dev_write(d, buf, len, off, i % 7 == 0 ? RK_WRITE_FUA : 0), 0);
        memset(buf, 0xee, len);
        assert_int_equal(rk_dev_read(d, buf, len, off), 0);
        assert_memory_equal(buf, shadow + off, len);
    }
    /* Asynchronous writes: 32 per batch into disjoint slots, each of random length. */
    struct rk_io io[32];
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    const uint64_t slot = FX_SIZE / 32;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 32; i++) {
            uint64_t len = (1 + rk_test_xorshift(&s) % (slot / bs)) * bs;
            uint64_t off = i * slot + (rk_test_xorshift(&s) % ((slot - len) / bs + 1)) * bs;
            fill(buf + off, len, 500 + round * 32 + i);
            memcpy(shadow + off, buf + off, len);
            io[i] = (struct rk_io){.dev = d,
                                   .op = RK_OP_WRITE,
                                   .buf = buf + off,
                                   .len = len,
                                   .off = off,
                                   .flags = i % 5 ? 0 : RK_WRITE_FUA};
            rk_io_submit(&b, &io[i]);
        }
        assert_int_equal(rk_io_batch_wait(&b), 0);
    }
    /* Asynchronous read-back of the whole device in 32 pieces. */
    memset(buf, 0x55, FX_SIZE);
    for (int i = 0; i < 32; i++) {
        io[i] = (struct rk_io){
            .dev = d, .op = RK_OP_READ, .buf = buf + i * slot, .len = slot, .off = i * slot};
        rk_io_submit(&b, &io[i]);
    }
    assert_int_equal(rk_io_batch_wait(&b), 0);
    rk_io_batch_destroy(&b);
    assert_memory_equal(buf, shadow, FX_SIZE);
    /* The first and last block and one whole-device read. */
    fill(buf, bs, 1000);
    memcpy(shadow + FX_SIZE - bs, buf, bs);
    assert_int_equal(rk_dev_write(d, buf, bs, FX_SIZE - bs, 0), 0);
    assert_int_equal(rk_dev_read(d, buf, FX_SIZE, 0), 0);
    assert_memory_equal(buf, shadow, FX_SIZE);
    /* Survives reopening (the data reached the file, not a cache of ours). */
    fx_reopen(x, x->cfg->flags);
    memset(buf, 0, FX_SIZE);
    assert_int_equal(rk_dev_read(x->dev, buf, FX_SIZE, 0), 0);
    assert_memory_equal(buf, shadow, FX_SIZE);
    /* Out of range requests are refused by the wrappers. */
    assert_int_equal(rk_dev_read(x->dev, buf, bs, FX_SIZE), -EINVAL);
    assert_int_equal(rk_dev_write(x->dev, buf, bs, FX_SIZE, 0), -ENOSPC);
    free(buf);
    free(shadow);
}

/* Many requests at once through a batch, including FUA writes and a flush. */
static void test_async_batch(void **state)
{
    struct fx *x = fx_get(state);
    struct rk_dev *d = x->dev;
    enum { N = 64, LEN = 64 << 10 };
    uint8_t *bufs = rk_buf_alloc((size_t)N * LEN);
    uint8_t *want = malloc(LEN);
    struct rk_io io[N + 1];
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    for (int i = 0; i < N; i++) {
        fill(bufs + (size_t)i * LEN, LEN, 7000 + i);
        io[i] = (struct rk_io){.dev = d,
                               .op = RK_OP_WRITE,
                               .buf = bufs + (size_t)i * LEN,
                               .len = LEN,
                               .off = (uint64_t)i * 2 * LEN,
                               .flags = i % 3 ? 0 : RK_WRITE_FUA};
        rk_io_submit(&b, &io[i]);
    }
    assert_int_equal(rk_io_batch_wait(&b), 0);
    io[N] = (struct rk_io){.dev = d, .op = RK_OP_FLUSH};
    rk_io_submit(&b, &io[N]);
    assert_int_equal(rk_io_batch_wait(&b), 0);
    assert_int_equal(io[N].result, 0);
    memset(bufs, 0, (size_t)N * LEN);
    for (int i = 0; i < N; i++) {
        io[i] = (struct rk_io){.dev = d,
                               .op = RK_OP_READ,
                               .buf = bufs + (size_t)i * LEN,
                               .len = LEN,
                               .off = (uint64_t)i * 2 * LEN};
        rk_io_submit(&b, &io[i]);
    }
    assert_int_equal(rk_io_batch_wait(&b), 0);
    for (int i = 0; i < N; i++) {
        fill(want, LEN, 7000 + i);
        assert_int_equal(io[i].result, 0);
        assert_memory_equal(bufs + (size_t)i * LEN, want, LEN);
    }
    /* Validation errors complete at once; discard and zeroing work asynchronously too. */
    io[0] = (struct rk_io){.dev = d, .op = RK_OP_READ, .buf = bufs, .len = LEN, .off = FX_SIZE};
    io[1] = (struct rk_io){.dev = d, .op = RK_OP_WRITE_ZEROES, .len = LEN, .off = 0};
    io[2] = (struct rk_io){.dev = d, .op = RK_OP_DISCARD, .len = LEN, .off = 2 * LEN};
    for (int i = 0; i < 3; i++)
        rk_io_submit(&b, &io[i]);
    assert_int_equal(rk_io_batch_wait(&b), 1);
    assert_int_equal(io[0].result, -EINVAL);
    assert_int_equal(io[1].result, 0);
    assert_int_equal(io[2].result, 0);
    assert_int_equal(rk_dev_read(d, bufs, 3 * LEN, 0), 0);
    assert_true(is_zero(bufs, LEN));
    assert_true(is_zero(bufs + 2 * LEN, LEN));
    rk_io_batch_destroy(&b);
    free(want);
    free(bufs);
}

/* FUA writes and flushes succeed and the data is visible through an independent descriptor. */
static void test_fua_flush(void **state)
{
    struct fx *x = fx_get(state);
    struct rk_dev *d = x->dev;
    uint8_t *buf = rk_buf_alloc(65536), *got = malloc(65536);
    fill(buf, 65536, 5);
    assert_int_equal(rk_dev_write(d, buf, 65536, 1 << 20, RK_WRITE_FUA), 0);
    assert_int_equal(rk_dev_write(d, buf, 4096, 0, 0), 0);
    assert_int_equal(rk_dev_flush(d), 0);
    int fd = open(x->path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, got, 65536, 1 << 20), 65536);
    assert_memory_equal(got, buf, 65536);
    assert_int_equal(pread(fd, got, 4096, 0), 4096);
    assert_memory_equal(got, buf, 4096);
    close(fd);
    free(got);
    free(buf);
}

/* Discard and write-zeroes (every flag combination) read back zeros, neighbours untouched. */
static void test_discard_zeroes(void **state)
{
    struct fx *x = fx_get(state);
    struct rk_dev *d = x->dev;
    const uint64_t len = 1 << 20;
    uint8_t *buf = rk_buf_alloc(len), *want = rk_buf_alloc(len);
    const uint32_t zflags[] = {0, RK_ZERO_NO_HOLE, RK_WRITE_FUA, RK_ZERO_NO_HOLE | RK_WRITE_FUA};
    /* Ranges: page aligned, and block-aligned but not page aligned (partial hole punch). */
    const uint64_t zoff[] = {65536, 4096 + 512};
    const uint64_t zlen[] = {131072, 8192 + 1024};
    for (int k = 0; k < 5 * 2; k++) {
        int kind = k / 2; /* 0: discard, 1..4: write-zeroes with zflags[kind-1] */
        uint64_t off = zoff[k % 2], zl = zlen[k % 2];
        if (k % 2 && d->block_size > 512)
            continue;
        fill(want, len, 100 + k);
        assert_int_equal(rk_dev_write(d, want, len, 0, 0), 0);
        if (kind == 0)
            assert_int_equal(rk_dev_discard(d, zl, off), 0);
        else
            assert_int_equal(rk_dev_write_zeroes(d, zl, off, zflags[kind - 1]), 0);
        memset(want + off, 0, zl);
        memset(buf, 0xaa, len);
        assert_int_equal(rk_dev_read(d, buf, len, 0), 0);
        assert_memory_equal(buf, want, len);
    }
    free(want);
    free(buf);
}

static void test_read_only(void **state)
{
    struct fx *x = fx_get(state);
    uint8_t *buf = rk_buf_alloc(4096);
    fill(buf, 4096, 9);
    assert_int_equal(rk_dev_write(x->dev, buf, 4096, 0, 0), 0);
    fx_reopen(x, x->cfg->flags | RK_FILE_READ_ONLY);
    struct rk_dev *d = x->dev;
    uint8_t *got = rk_buf_alloc(4096);
    assert_int_equal(rk_dev_read(d, got, 4096, 0), 0);
    assert_memory_equal(got, buf, 4096);
    assert_int_equal(rk_dev_write(d, buf, 4096, 0, 0), -EPERM);
    assert_int_equal(rk_dev_write_zeroes(d, 4096, 0, 0), -EPERM);
    assert_int_equal(rk_dev_discard(d, 4096, 0), -EPERM);
    assert_int_equal(rk_dev_flush(d), 0);
    struct rk_io_batch b;
    struct rk_io io = {.dev = d, .op = RK_OP_WRITE, .buf = buf, .len = 4096, .off = 0};
    rk_io_batch_init(&b);
    rk_io_submit(&b, &io);
    assert_int_equal(rk_io_batch_wait(&b), 1);
    assert_int_equal(io.result, -EPERM);
    rk_io_batch_destroy(&b);
    assert_int_equal(rk_dev_read(d, got, 4096, 0), 0);
    assert_memory_equal(got, buf, 4096);
    free(got);
    free(buf);
}

/* A member that shrank under us: reading past the new end fails with -EIO, never hangs. */
static void test_shrunk(void **state)
{
    struct fx *x = fx_get(state);
    uint8_t *buf = rk_buf_alloc(8192);
    assert_int_equal(truncate(x->path, FX_SIZE / 2), 0);
    assert_int_equal(rk_dev_read(x->dev, buf, 8192, FX_SIZE - 8192), -EIO);
    assert_int_equal(rk_dev_read(x->dev, buf, 8192, 0), 0);
    /* Straddling the new end: a short transfer, resubmitted, then 0 bytes. */
    assert_int_equal(rk_dev_read(x->dev, buf, 8192, FX_SIZE / 2 - 4096), -EIO);
    struct rk_io_batch b;
    struct rk_io io[2] = {
        {.dev = x->dev, .op = RK_OP_READ, .buf = buf, .len = 8192, .off = FX_SIZE / 2 - 4096},
        {.dev = x->dev, .op = RK_OP_READ, .buf = buf, .len = 4096, .off = FX_SIZE / 2 - 4096},
    };
    rk_io_batch_init(&b);
    rk_io_submit(&b, &io[0]);
    rk_io_submit(&b, &io[1]);
    assert_int_equal(rk_io_batch_wait(&b), 1);
    assert_int_equal(io[0].result, -EIO);
    assert_int_equal(io[1].result, 0);
    rk_io_batch_destroy(&b);
    free(buf);
}

static void test_open_errors(void **state)
{
    struct fx *x = fx_get(state);
    struct rk_dev *d = (struct rk_dev *)0x1;
    char missing[200];
    snprintf(missing, sizeof(missing), "%s/nope", x->dir);
    assert_int_equal(rk_file_open(missing, x->cfg->flags, &d), -ENOENT);
    assert_null(d);
    assert_int_equal(rk_file_open(x->dir, x->cfg->flags, &d), -EISDIR);
    assert_int_equal(rk_file_open(x->dir, x->cfg->flags | RK_FILE_READ_ONLY, &d), -EISDIR);
    assert_int_equal(rk_file_open("/dev/null", x->cfg->flags, &d), -EINVAL);
    /* An empty file opens with size 0. */
    assert_int_equal(truncate(x->path, 0), 0);
    fx_reopen(x, x->cfg->flags);
    assert_int_equal(x->dev->size, 0);
}

/* The environment switch forces the fallback. */
static void test_env_no_uring(void **state)
{
    struct fx *x = fx_get(state);
    setenv("RAIDKIT_NO_URING", "1", 1);
    fx_reopen(x, 0);
    assert_string_equal(rk_file_engine(x->dev), "pread");
    setenv("RAIDKIT_NO_URING", "0", 1);
    fx_reopen(x, 0);
    assert_string_equal(rk_file_engine(x->dev), "io_uring");
    unsetenv("RAIDKIT_NO_URING");
    assert_string_equal(rk_file_engine(NULL), "none");
}

/*
 * Which members run their submitted data I/O inline (src/member/file.c file_inline_wanted):
 * memory file systems and buffered files do, O_DIRECT files of a real file system use the ring;
 * RAIDKIT_MEMBER_IO overrides both ways. An inline submit completes before rk_io_submit
 * returns, and its FUA write (one pwritev2 with RWF_DSYNC) reads back.
 */
static void test_inline_choice(void **state)
{
    struct fx *x = *state;
    bool shm = !strcmp(x->cfg->base, "/dev/shm");
    fx_reopen(x, 0);
    if (strcmp(rk_file_engine(x->dev), "io_uring")) {
        print_message("skipped: io_uring unavailable\n");
        skip();
    }
    assert_true(rk_file_inline(x->dev) == (shm || !x->dev->direct));
    setenv("RAIDKIT_MEMBER_IO", "ring", 1);
    fx_reopen(x, 0);
    assert_false(rk_file_inline(x->dev));
    setenv("RAIDKIT_MEMBER_IO", "inline", 1);
    fx_reopen(x, 0);
    unsetenv("RAIDKIT_MEMBER_IO");
    assert_true(rk_file_inline(x->dev));
    fx_reopen(x, RK_FILE_BUFFERED);
    assert_true(rk_file_inline(x->dev));
    fx_reopen(x, RK_FILE_NO_URING);
    assert_true(rk_file_inline(x->dev));
    assert_false(rk_file_inline(NULL));

    char *buf = rk_buf_alloc(8192), *back = rk_buf_alloc(8192);
    fill(buf, 8192, 77);
    struct rk_io io;
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    fx_reopen(x, 0);
    rk_io_init(&io, x->dev, RK_OP_WRITE, buf, 8192, 65536, RK_WRITE_FUA);
    rk_io_submit(&b, &io);
    if (rk_file_inline(x->dev))
        assert_int_equal(b.pending, 0); /* completed in this thread */
    assert_int_equal(rk_io_batch_wait(&b), 0);
    assert_int_equal(rk_dev_read(x->dev, back, 8192, 65536), 0);
    assert_memory_equal(buf, back, 8192);
    assert_int_equal(x->dev->stats.writes, 1);
    rk_io_batch_destroy(&b);
    free(buf);
    free(back);
}

/*
 * C15 — io_uring back-pressure: 8 threads, each with 40 O_DIRECT requests of 2 MiB in flight
 * through one batch (320 > the ring's 256 entries). Every request completes, none reports
 * -EAGAIN, and every byte lands where it belongs (each 512-byte sector is stamped).
 */
enum { C15_THREADS = 8, C15_DEPTH = 40, C15_LEN = 2 << 20 };
#define C15_SIZE ((uint64_t)C15_THREADS * C15_DEPTH * C15_LEN)

struct c15_arg {
    struct rk_dev *dev;
    pthread_barrier_t *writers_done;
    int thread;
    int failures;
};

static void c15_stamp(uint8_t *buf, uint64_t off, uint64_t gen)
{
    for (uint64_t i = 0; i < C15_LEN; i += 512) {
        uint64_t v[2] = {off + i, gen};
        memcpy(buf + i, v, sizeof(v));
        memset(buf + i + sizeof(v), (int)((off + i) / 512 % 251), 512 - sizeof(v));
    }
}

static void *c15_worker(void *p)
{
    struct c15_arg *a = p;
    uint8_t *bufs = rk_buf_alloc((size_t)C15_DEPTH * C15_LEN);
    uint8_t *want = malloc(C15_LEN);
    struct rk_io io[C15_DEPTH];
    struct rk_io_batch b;
    rk_io_batch_init(&b);
    /* Pass 0 writes this thread's regions; pass 1 reads the next thread's regions. */
    for (int pass = 0; pass < 2; pass++) {
        int owner = pass ? (a->thread + 1) % C15_THREADS : a->thread;
        for (int i = 0; i < C15_DEPTH; i++) {
            uint64_t off = ((uint64_t)owner * C15_DEPTH + i) * C15_LEN;
            uint8_t *buf = bufs + (size_t)i * C15_LEN;
            if (pass == 0)
                c15_stamp(buf, off, 15);
            else
                memset(buf, 0, C15_LEN);
            io[i] = (struct rk_io){.dev = a->dev,
                                   .op = pass ? RK_OP_READ : RK_OP_WRITE,
                                   .buf = buf,
                                   .len = C15_LEN,
                                   .off = off,
                                   .flags = (i % 16 == 0 && !pass) ? RK_WRITE_FUA : 0};
            rk_io_submit(&b, &io[i]);
        }
        a->failures += rk_io_batch_wait(&b);
        for (int i = 0; i < C15_DEPTH && pass == 1; i++) {
            c15_stamp(want, io[i].off, 15);
            if (io[i].result || memcmp(io[i].buf, want, C15_LEN))
                a->failures++;
        }
        if (pass == 0) /* every writer is done before anyone reads */
            pthread_barrier_wait(a->writers_done);
    }
    rk_io_batch_destroy(&b);
    free(want);
    free(bufs);
    return NULL;
}

static void C15_io_uring_backpressure(void **state)
{
    struct fx x = {.cfg = &cfg_tmp_uring};
    struct c15_arg args[C15_THREADS];
    pthread_t th[C15_THREADS];
    pthread_barrier_t barrier;
    assert_int_equal(fx_make_file(&x, C15_SIZE), 0);
    assert_int_equal(rk_file_open(x.path, 0, &x.dev), 0);
    if (strcmp(rk_file_engine(x.dev), "io_uring") || !x.dev->direct) {
        rk_dev_close(x.dev);
        unlink(x.path);
        rmdir(x.dir);
        print_message("skipped: io_uring with O_DIRECT unavailable on /tmp\n");
        skip();
    }
    pthread_barrier_init(&barrier, NULL, C15_THREADS);
    for (int t = 0; t < C15_THREADS; t++) {
        args[t] = (struct c15_arg){.dev = x.dev, .writers_done = &barrier, .thread = t};
        assert_int_equal(pthread_create(&th[t], NULL, c15_worker, &args[t]), 0);
    }
    int failures = 0;
    for (int t = 0; t < C15_THREADS; t++) {
        pthread_join(th[t], NULL);
        failures += args[t].failures;
    }
    pthread_barrier_destroy(&barrier);
    assert_int_equal(x.dev->inflight, 0);
    rk_dev_close(x.dev);
    unlink(x.path);
    rmdir(x.dir);
    assert_int_equal(failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
#define FOR_CFG(fn)                                                                                \
    cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&cfg_tmp_uring),         \
        cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&cfg_tmp_pread),     \
        cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&cfg_shm_uring),     \
        cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&cfg_shm_pread),     \
        cmocka_unit_test_prestate_setup_teardown(fn, setup, teardown, (void *)&cfg_shm_ring)
        FOR_CFG(test_geometry),
        FOR_CFG(test_roundtrip),
        FOR_CFG(test_async_batch),
        FOR_CFG(test_fua_flush),
        FOR_CFG(test_discard_zeroes),
        FOR_CFG(test_read_only),
        FOR_CFG(test_shrunk),
        FOR_CFG(test_open_errors),
        cmocka_unit_test_prestate_setup_teardown(test_env_no_uring, setup, teardown,
                                                 (void *)&cfg_tmp_uring),
        cmocka_unit_test_prestate_setup_teardown(test_inline_choice, setup, teardown,
                                                 (void *)&cfg_tmp_uring),
        cmocka_unit_test_prestate_setup_teardown(test_inline_choice, setup, teardown,
                                                 (void *)&cfg_shm_uring),
        cmocka_unit_test(C15_io_uring_backpressure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
