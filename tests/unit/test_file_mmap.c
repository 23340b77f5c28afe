/* Unit tests of the memory-mapped path of file members on tmpfs (src/member/file_mmap.c):
 * writes into holes and held pages, coherence with pread/pwrite of the same file, discard and
 * write-zeroes racing writes, and a full file system giving -ENOSPC, never SIGBUS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "raidkit/device.h"
#include "raidkit/member.h"

#define MSIZE (8u << 20)

static char dir[128], path[200];

static void pat(void *buf, size_t len, uint64_t seed)
{
    uint64_t *q = buf;
    for (size_t i = 0; i < len / 8; i++)
        q[i] = (seed + i) * 0x9E3779B97F4A7C15ull + 1;
}

static void *abuf(size_t len)
{
    void *b = NULL;
    assert_int_equal(posix_memalign(&b, 4096, len), 0);
    return b;
}

/* A sparse member in a private directory of /dev/shm with data at [1M, 2M). */
static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/dev/shm/rk-mmap-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof(path), "%s/m", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, MSIZE))
        return -1;
    char *b = abuf(1 << 20);
    pat(b, 1 << 20, 1);
    if (pwrite(fd, b, 1 << 20, 1 << 20) != 1 << 20)
        return -1;
    free(b);
    close(fd);
    *state = NULL;
    return 0;
}

static int teardown(void **state)
{
    unlink(path);
    rmdir(dir);
    return 0;
}

static bool on_tmpfs(void)
{
    struct statfs sf;
    return statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

/* Read [off, off+len) of the member file through a descriptor of its own. */
static void file_read(void *buf, size_t len, off_t off)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, buf, len, off), (ssize_t)len);
    close(fd);
}

static void test_roundtrip(void **state)
{
    (void)state;
    if (!on_tmpfs()) {
        skip(); /* /dev/shm is not tmpfs here: nothing to map */
        return;
    }
    struct rk_dev *d;
    assert_int_equal(rk_file_open(path, RK_FILE_BUFFERED, &d), 0);
    assert_true(rk_file_mapped(d));
    char *w = abuf(65536), *r = abuf(65536);
    /* Held pages: the data written before the open reads back by memcpy. */
    assert_int_equal(rk_dev_read(d, r, 4096, (1 << 20) + 8192), 0);
    pat(w, 4096, 1 + 8192 / 8);
    assert_memory_equal(r, w, 4096);
    /* A hole: pwrite (allocates), then the same pages by memcpy; both visible to pread. */
    for (int k = 0; k < 2; k++) {
        pat(w, 65536, 100 + k);
        assert_int_equal(rk_dev_write(d, w, 65536, 4u << 20, k ? RK_WRITE_FUA : 0), 0);
        file_read(r, 65536, 4u << 20);
        assert_memory_equal(r, w, 65536);
        assert_int_equal(rk_dev_read(d, r, 65536, 4u << 20), 0);
        assert_memory_equal(r, w, 65536);
    }
    /* 512-byte aligned pieces across a page boundary, half in a hole. */
    pat(w, 1536, 7);
    assert_int_equal(rk_dev_write(d, w, 1536, (2u << 20) - 512, 0), 0);
    assert_int_equal(rk_dev_read(d, r, 1536, (2u << 20) - 512), 0);
    assert_memory_equal(r, w, 1536);
    /* A write by pwrite of another process shows in the next read by memcpy. */
    int fd = open(path, O_RDWR);
    pat(w, 4096, 9);
    assert_int_equal(pwrite(fd, w, 4096, 4u << 20), 4096);
    close(fd);
    assert_int_equal(rk_dev_read(d, r, 4096, 4u << 20), 0);
    assert_memory_equal(r, w, 4096);
    /* Discard and write-zeroes punch: zeroes read back, the next write lands. */
    assert_int_equal(rk_dev_discard(d, 65536, 4u << 20), 0);
    assert_int_equal(rk_dev_read(d, r, 65536, 4u << 20), 0);
    memset(w, 0, 65536);
    assert_memory_equal(r, w, 65536);
    pat(w, 4096, 11);
    assert_int_equal(rk_dev_write(d, w, 4096, 4u << 20, 0), 0);
    file_read(r, 4096, 4u << 20);
    assert_memory_equal(r, w, 4096);
    assert_int_equal(rk_dev_write_zeroes(d, 8192, 1u << 20, 0), 0);
    assert_int_equal(rk_dev_read(d, r, 8192, 1u << 20), 0);
    memset(w, 0, 8192);
    assert_memory_equal(r, w, 8192);
    rk_dev_close(d);
    free(w);
    free(r);
    /* RAIDKIT_MEMBER_IO=inline keeps pread/pwrite. */
    setenv("RAIDKIT_MEMBER_IO", "inline", 1);
    assert_int_equal(rk_file_open(path, RK_FILE_BUFFERED, &d), 0);
    unsetenv("RAIDKIT_MEMBER_IO");
    assert_false(rk_file_mapped(d));
    rk_dev_close(d);
}

struct race {
    struct rk_dev *d;
    int id;
    atomic_bool *stop;
};

/* Writers write 4K blocks of [0, 1M) with their pattern; the discarder punches 64K ranges. */
static void *racer(void *arg)
{
    struct race *x = arg;
    char *b = abuf(65536);
    unsigned s = (unsigned)x->id * 7919u + 1;
    while (!atomic_load(x->stop)) {
        s = s * 1103515245u + 12345u;
        if (x->id == 0) {
            uint64_t off = (uint64_t)(s >> 8) % 16 * 65536;
            assert_int_equal(rk_dev_discard(x->d, 65536, off), 0);
        } else {
            uint64_t off = (uint64_t)(s >> 8) % 256 * 4096;
            pat(b, 4096, off);
            assert_int_equal(rk_dev_write(x->d, b, 4096, off, 0), 0);
        }
    }
    free(b);
    return NULL;
}

static void test_race(void **state)
{
    (void)state;
    if (!on_tmpfs()) {
        skip();
        return;
    }
    struct rk_dev *d;
    assert_int_equal(rk_file_open(path, RK_FILE_BUFFERED, &d), 0);
    assert_true(rk_file_mapped(d));
    atomic_bool stop = false;
    pthread_t t[4];
    struct race x[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (struct race){d, i, &stop};
        assert_int_equal(pthread_create(&t[i], NULL, racer, &x[i]), 0);
    }
    usleep(300000);
    atomic_store(&stop, true);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    /* Every block is either zero (punched last) or its writer's pattern. */
    char *r = abuf(4096), *w = abuf(4096), *z = calloc(1, 4096);
    for (uint64_t off = 0; off < (1u << 20); off += 4096) {
        assert_int_equal(rk_dev_read(d, r, 4096, off), 0);
        pat(w, 4096, off);
        assert_true(!memcmp(r, w, 4096) || !memcmp(r, z, 4096));
    }
    /* Then every block written once more reads back by both paths. */
    for (uint64_t off = 0; off < (1u << 20); off += 4096) {
        pat(w, 4096, off + 1);
        assert_int_equal(rk_dev_write(d, w, 4096, off, 0), 0);
        file_read(r, 4096, (off_t)off);
        assert_memory_equal(r, w, 4096);
    }
    rk_dev_close(d);
    free(r);
    free(w);
    free(z);
}

/* A 4 MiB sparse member on a 1 MiB tmpfs: writes past the space fail with -ENOSPC (by pwrite:
 * no copy ever goes into a hole), the pages written before still read back. Needs mount(2). */
static void test_enospc(void **state)
{
    (void)state;
    char mnt[160], f[200];
    snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
    assert_int_equal(mkdir(mnt, 0700), 0);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") != 0) {
        printf("skipped: mount tmpfs: %s\n", strerror(errno));
        rmdir(mnt);
        skip();
        return;
    }
    snprintf(f, sizeof(f), "%s/m", mnt);
    int fd = open(f, O_RDWR | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4u << 20), 0);
    close(fd);
    struct rk_dev *d;
    assert_int_equal(rk_file_open(f, RK_FILE_BUFFERED, &d), 0);
    assert_true(rk_file_mapped(d));
    char *w = abuf(65536), *r = abuf(65536);
    int ok = 0, r0 = 0;
    for (uint64_t off = 0; off < (4u << 20); off += 65536) {
        pat(w, 65536, off);
        r0 = rk_dev_write(d, w, 65536, off, 0);
        if (r0)
            break;
        ok++;
    }
    assert_int_equal(r0, -ENOSPC);
    assert_true(ok > 0 && ok < 64);
    for (int i = 0; i < ok; i++) {
        /* rewrites of held pages (memcpy) still work on the full file system */
        pat(w, 65536, (uint64_t)i * 65536 + 5);
        assert_int_equal(rk_dev_write(d, w, 65536, (uint64_t)i * 65536, 0), 0);
        assert_int_equal(rk_dev_read(d, r, 65536, (uint64_t)i * 65536), 0);
        assert_memory_equal(r, w, 65536);
    }
    rk_dev_close(d);
    free(w);
    free(r);
    unlink(f);
    umount2(mnt, MNT_DETACH);
    rmdir(mnt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_enospc, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
