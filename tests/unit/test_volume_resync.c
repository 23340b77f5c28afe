/* Volume resync decisions at assembly (src/meta/volume_bitmap.c): a read-only start of a dirty
 * raid1 loads the bitmap's regions as unsynced in memory only and reads them from the first
 * copy, writing nothing; a dirty degraded start with no redundancy left runs no resync, records
 * the array in sync and keeps the bitmap's bits for the re-add. The "crash" is a copy of the
 * member files taken while the volume is open (dirty mark and bitmap bits durable). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "meta/superblock.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

#define MIB (1024u * 1024u)

static char tmpdir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/rk-volresync-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *tpath(const char *name)
{
    static char bufs[8][256];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, 256, "%s/%s", tmpdir, name);
    return b;
}

/* Whole file content (malloc'ed) and its size. */
static uint8_t *slurp(const char *path, size_t *len)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    uint8_t *p = malloc((size_t)st.st_size + 1);
    assert_non_null(p);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, p, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return p;
}

static void copy_file(const char *from, const char *to)
{
    size_t len;
    uint8_t *d = slurp(from, &len);
    int fd = open(to, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, d, len), (ssize_t)len);
    close(fd);
    free(d);
}

static void read_sb(const char *path, struct rk_sb *sb)
{
    uint8_t buf[RK_SB_SIZE];
    char err[256] = "";
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
    close(fd);
    if (rk_sb_decode(buf, sb, err, sizeof(err)) != 0)
        fail_msg("%s: %s", path, err);
}

static struct rk_volume *open_ok(const char *const *p, int n, const struct rk_open_opts *o)
{
    struct rk_volume *v = NULL;
    char err[512] = "";
    int r = rk_volume_open(p, n, o, &v, err, sizeof(err));
    if (r)
        fail_msg("open: %d %s", r, err);
    return v;
}

/* raid1 over a0/a1, 4 KiB of 0xAA written at array offset 0, then the members copied to c0/c1
 * while open (a crash image: dirty, the region's bit set); c1's copy of the block becomes 0x55. */
static void crashed_raid1(const char *c0, const char *c1)
{
    const char *a[2] = {tpath("a0.img"), tpath("a1.img")};
    struct rk_create_opts co = {
        .level = RK_LEVEL_RAID1, .chunk = 4096, .name = "t", .size = 2 * MIB};
    char err[256] = "";
    if (rk_volume_create(a, 2, &co, err, sizeof(err)))
        fail_msg("create: %s", err);
    struct rk_volume *v = open_ok(a, 2, NULL);
    uint8_t *buf = rk_buf_alloc(4096);
    memset(buf, 0xAA, 4096);
    assert_int_equal(rk_dev_write(rk_volume_dev(v), buf, 4096, 0, 0), 0);
    assert_int_equal(rk_dev_flush(rk_volume_dev(v)), 0);
    copy_file(a[0], c0);
    copy_file(a[1], c1);
    assert_int_equal(rk_volume_close(v), 0);
    struct rk_sb sb;
    read_sb(c1, &sb);
    assert_int_equal(sb.dirty, RK_SB_DIRTY);
    memset(buf, 0x55, 4096);
    int fd = open(c1, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, buf, 4096, (off_t)sb.data_offset), 4096);
    close(fd);
    free(buf);
}

static void test_readonly_dirty_one_copy(void **state)
{
    (void)state;
    const char *c[2] = {tpath("c0.img"), tpath("c1.img")};
    crashed_raid1(c[0], c[1]);
    size_t l0, l1;
    uint8_t *s0 = slurp(c[0], &l0), *s1 = slurp(c[1], &l1);
    struct rk_open_opts o = {.read_only = true};
    struct rk_volume *v = open_ok(c, 2, &o);
    uint8_t *buf = rk_buf_alloc(4096);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(rk_dev_read(rk_volume_dev(v), buf, 4096, 0), 0);
        for (int k = 0; k < 4096; k++)
            if (buf[k] != 0xAA)
                fail_msg("read %d: byte %d is 0x%02x, want the first copy's 0xAA", i, k, buf[k]);
    }
    struct rk_raid_bitmap_stats bs;
    assert_int_equal(rk_raid_bitmap_stats(rk_volume_raid(v), &bs), 0);
    assert_true(bs.unsynced >= 1);
    assert_false(bs.on_disk); /* in memory only: never written */
    assert_int_equal(rk_volume_close(v), 0);
    size_t m0, m1;
    uint8_t *t0 = slurp(c[0], &m0), *t1 = slurp(c[1], &m1);
    assert_true(l0 == m0 && l1 == m1);
    assert_memory_equal(s0, t0, l0);
    assert_memory_equal(s1, t1, l1);
    free(s0);
    free(s1);
    free(t0);
    free(t1);
    free(buf);
}

static void test_degraded_no_target_no_resync(void **state)
{
    (void)state;
    const char *c[2] = {tpath("c0.img"), tpath("c1.img")};
    crashed_raid1(c[0], c[1]);
    struct rk_open_opts o = {.degraded = true};
    struct rk_volume *v = open_ok(c, 1, &o);
    struct rk_raid_progress p;
    assert_int_equal(rk_raid_progress(rk_volume_raid(v), &p), 0);
    assert_int_equal(p.kind, RK_JOB_NONE);
    struct rk_raid_bitmap_stats bs;
    assert_int_equal(rk_raid_bitmap_stats(rk_volume_raid(v), &bs), 0);
    assert_int_equal(bs.unsynced, 0);
    assert_true(bs.set >= 1); /* kept for the re-add of slot 1 */
    struct rk_sb sb;
    read_sb(c[0], &sb); /* written with the dirty mark */
    assert_int_equal(sb.resync_flags, 0);
    assert_int_equal(sb.slots[1].state, RK_SLOT_FAILED);
    assert_int_equal(rk_volume_close(v), 0);
    read_sb(c[0], &sb);
    assert_int_equal(sb.dirty, RK_SB_CLEAN);
    assert_int_equal(sb.resync_flags, 0);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_readonly_dirty_one_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_degraded_no_target_no_resync, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
