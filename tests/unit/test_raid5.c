/* Tests of the raid5/raid6 engine over in-memory members: shadow-checked random I/O healthy and
 * degraded, member placement and parity against the plain-C reference, member I/O counts,
 * concurrent writers, discard and write-zeroes, scrub, member errors. The stripe data cache:
 * test_raid5_cache.c; the shared array helpers: tests/lib/rk_test_r5.h. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rk_test_r5.h"

static void test_healthy_random(void **state)
{
    static const struct {
        int level;
        uint32_t n, chunk;
    } cfg[] = {{RK_LEVEL_RAID5, 3, 4096}, {RK_LEVEL_RAID5, 4, 16384}, {RK_LEVEL_RAID5, 5, 8192},
               {RK_LEVEL_RAID6, 4, 4096}, {RK_LEVEL_RAID6, 5, 16384}, {RK_LEVEL_RAID6, 6, 8192}};
    unsigned seed = 42;
    for (size_t i = 0; i < sizeof(cfg) / sizeof(cfg[0]); i++) {
        struct arr a;
        arr_create(&a, cfg[i].level, cfg[i].n, cfg[i].chunk, 24);
        arr_random_io(&a, 300, &seed);
        arr_check(&a);
        assert_int_equal(arr_check_members(&a, true), 0);
        arr_free(&a);
    }
    /* Chunks above the 1 MiB work window: stripes are handled in several column windows. */
    static const int big[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    for (size_t i = 0; i < 2; i++) {
        struct arr a;
        arr_create(&a, big[i], 4, 2 * MiB, 3);
        arr_random_io(&a, 12, &seed);
        arr_write(&a, MiB - 4096, 2 * MiB + 8192, &seed);
        arr_check(&a);
        assert_int_equal(arr_check_members(&a, true), 0);
        assert_int_equal(arr_reopen(&a, 1u << 1), 0);
        arr_check(&a);
        arr_random_io(&a, 12, &seed);
        arr_check(&a);
        arr_free(&a);
    }
}

/* One level with the slots in the missing mask gone: existing data reads back, degraded writes
 * read back, and (reopened with the same slots missing) still do. */
static void degraded_case(int level, uint32_t n, uint32_t missing, unsigned *seed)
{
    struct arr a;
    arr_create(&a, level, n, 8192, 12);
    arr_random_io(&a, 60, seed);
    arr_write(&a, 0, a.size, seed);
    assert_int_equal(arr_reopen(&a, missing), 0);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(rk_raid_slot_state(a.raid, i),
                         (missing & (1u << i)) ? RK_SLOT_MISSING : RK_SLOT_ACTIVE);
    arr_check(&a);
    arr_random_io(&a, 80, seed);
    arr_check(&a);
    assert_int_equal(arr_reopen(&a, missing), 0);
    arr_check(&a);
    arr_free(&a);
}

static void test_raid5_degraded(void **state)
{
    unsigned seed = 7;
    for (uint32_t n = 3; n <= 5; n++)
        for (uint32_t s = 0; s < n; s++)
            degraded_case(RK_LEVEL_RAID5, n, 1u << s, &seed);
    /* Two missing: refused. */
    struct arr a;
    arr_create(&a, RK_LEVEL_RAID5, 4, 4096, 4);
    assert_int_equal(arr_reopen(&a, 0x5), -ENODEV);
    arr_free(&a);
}

static void test_raid6_degraded(void **state)
{
    unsigned seed = 8;
    for (uint32_t n = 4; n <= 6; n += 2) {
        for (uint32_t s = 0; s < n; s++) {
            degraded_case(RK_LEVEL_RAID6, n, 1u << s, &seed);
            for (uint32_t t = s + 1; t < n; t++)
                degraded_case(RK_LEVEL_RAID6, n, (1u << s) | (1u << t), &seed);
        }
    }
    struct arr a;
    arr_create(&a, RK_LEVEL_RAID6, 5, 4096, 4);
    assert_int_equal(arr_reopen(&a, 0x13), -ENODEV);
    arr_free(&a);
}

/* ---- member I/O counts (helpers: rk_test_r5.h) ---- */

static void test_io_counts(void **state)
{
    unsigned seed = 99;
    struct arr a;
    struct counts c;
    uint64_t ch = 64 * KiB;

    /* raid5 of 5 (4 data): a 4K write inside a chunk is read-modify-write: 2 reads, 2 writes. */
    arr_create(&a, RK_LEVEL_RAID5, 5, (uint32_t)ch, 8);
    c = write_cost(&a, ch + 8 * KiB, 4 * KiB, &seed);
    assert_int_equal(c.reads, 2);
    assert_int_equal(c.writes, 2);
    /* A full stripe (and two): nothing read, every member written once per stripe. */
    c = write_cost(&a, 4 * ch, 4 * ch, &seed);
    assert_int_equal(c.reads, 0);
    assert_int_equal(c.writes, 5);
    c = write_cost(&a, 8 * ch, 8 * ch, &seed);
    assert_int_equal(c.reads, 0);
    assert_int_equal(c.writes, 10);
    /* Three of four chunks: reconstruct-write reads only the fourth (rmw would read 4). */
    c = write_cost(&a, 12 * ch, 3 * ch, &seed);
    assert_int_equal(c.reads, 1);
    assert_int_equal(c.writes, 4);
    /* Full stripe in the middle of a large unaligned write: only the ends read anything. The
     * head (last 4K of a stripe) is rmw (2 reads), the tail (first 4K of a stripe) too. */
    c = write_cost(&a, 20 * ch - 4 * KiB, 4 * ch + 8 * KiB, &seed);
    assert_int_equal(c.reads, 4);
    assert_int_equal(c.writes, 2 + 5 + 2);
    arr_check(&a);
    assert_int_equal(arr_check_members(&a, true), 0);
    /* Reads of healthy data touch only the data chunks. */
    struct counts c0 = arr_counts(&a);
    unsigned char *b = malloc(2 * ch);
    assert_int_equal(rk_dev_read(a.raid, b, 2 * ch, ch / 2), 0);
    free(b);
    c = arr_counts(&a);
    assert_int_equal(c.reads - c0.reads, 3);
    assert_int_equal(c.writes - c0.writes, 0);
    arr_free(&a);

    /* raid5 of 3: a 4K write is cheaper as reconstruct-write (1 read: the other data chunk). */
    arr_create(&a, RK_LEVEL_RAID5, 3, (uint32_t)ch, 8);
    c = write_cost(&a, 4 * KiB, 4 * KiB, &seed);
    assert_int_equal(c.reads, 1);
    assert_int_equal(c.writes, 2);
    assert_int_equal(arr_check_members(&a, true), 0);
    arr_free(&a);

    /* raid6 of 7 (5 data): rmw reads data + P + Q, writes them: 3 + 3. */
    arr_create(&a, RK_LEVEL_RAID6, 7, (uint32_t)ch, 8);
    c = write_cost(&a, 2 * ch + 60 * KiB, 4 * KiB, &seed);
    assert_int_equal(c.reads, 3);
    assert_int_equal(c.writes, 3);
    c = write_cost(&a, 5 * ch, 5 * ch, &seed);
    assert_int_equal(c.reads, 0);
    assert_int_equal(c.writes, 7);
    /* Four of five chunks: rcw reads 1 (rmw would read 6). */
    c = write_cost(&a, 10 * ch, 4 * ch, &seed);
    assert_int_equal(c.reads, 1);
    assert_int_equal(c.writes, 6);
    assert_int_equal(arr_check_members(&a, true), 0);
    /* Degraded (P of stripe 0 = slot 6 missing): a small write is data only, no reads of P. */
    assert_int_equal(arr_reopen(&a, 1u << 6), 0);
    c = write_cost(&a, 0, 4 * KiB, &seed);
    assert_int_equal(c.reads, 2);  /* old data + Q */
    assert_int_equal(c.writes, 2); /* data + Q */
    arr_check(&a);
    /* ... and with Q (slot 0) gone too, just the data. */
    assert_int_equal(arr_reopen(&a, (1u << 6) | 1u), 0);
    c = write_cost(&a, 8 * KiB, 4 * KiB, &seed);
    assert_int_equal(c.reads, 0);
    assert_int_equal(c.writes, 1);
    arr_check(&a);
    arr_free(&a);
}

/* ---- concurrency (run_threads: rk_test_r5.h) ---- */

static void test_concurrency(void **state)
{
    run_threads(hammer_run, 4, 1000u, 6);
}

/* ---- discard, write-zeroes, FUA ---- */

static void test_discard_zeroes(void **state)
{
    unsigned seed = 5;
    struct arr a;
    uint64_t ch = 8 * KiB, sb = 3 * ch; /* raid5 of 4 */
    arr_create(&a, RK_LEVEL_RAID5, 4, (uint32_t)ch, 16);
    arr_write(&a, 0, a.size, &seed);
    /* Partial-stripe discard: a no-op; whole stripes: zeros. */
    assert_int_equal(rk_dev_discard(a.raid, 4 * KiB, sb + 4 * KiB), 0);
    assert_int_equal(rk_dev_discard(a.raid, 3 * sb - 1024, 2 * sb + 512), 0);
    memset(a.shadow + 3 * sb, 0, sb); /* the only whole stripe in that range */
    arr_check(&a);
    assert_int_equal(arr_check_members(&a, true), 0);
    /* Write-zeroes: zeros everywhere asked, partial stripes included. */
    assert_int_equal(rk_dev_write_zeroes(a.raid, 2 * sb + 8 * KiB, 6 * sb - 4 * KiB, 0), 0);
    memset(a.shadow + 6 * sb - 4 * KiB, 0, 2 * sb + 8 * KiB);
    assert_int_equal(rk_dev_write_zeroes(a.raid, 1024, 10 * sb + 512, RK_WRITE_FUA), 0);
    memset(a.shadow + 10 * sb + 512, 0, 1024);
    arr_check(&a);
    assert_int_equal(arr_check_members(&a, true), 0);
    /* Degraded: the same stays consistent. */
    assert_int_equal(arr_reopen(&a, 1u << 2), 0);
    assert_int_equal(rk_dev_write_zeroes(a.raid, sb + 4096, 12 * sb - 2048, 0), 0);
    memset(a.shadow + 12 * sb - 2048, 0, sb + 4096);
    assert_int_equal(rk_dev_discard(a.raid, 2 * sb, 14 * sb), 0);
    memset(a.shadow + 14 * sb, 0, 2 * sb);
    arr_check(&a);
    arr_free(&a);
}

/* ---- rebuild / scrub hooks ---- */

static void test_reconstruct_scrub(void **state)
{
    static const int levels[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    unsigned seed = 77;
    for (int li = 0; li < 2; li++) {
        struct arr a;
        uint64_t ch = 16 * KiB, rows = 10;
        arr_create(&a, levels[li], 5, (uint32_t)ch, rows);
        arr_write(&a, 0, a.size, &seed);
        struct raid_priv *r = a.raid->priv;
        unsigned char *want = malloc(rows * ch), *got = malloc(rows * ch);
        /* reconstruct: every slot's content (data, P or Q) from the others. */
        for (uint32_t s = 0; s < 5; s++) {
            assert_int_equal(rk_dev_read(a.m[s], want, rows * ch, DOFF), 0);
            memset(got, 0xee, rows * ch);
            assert_int_equal(r->l.lvl->reconstruct(r, s, 0, rows * ch, got), 0);
            assert_memory_equal(got, want, rows * ch);
            assert_int_equal(r->l.lvl->reconstruct(r, s, 2 * ch, 3 * ch, got), 0);
            assert_memory_equal(got, want + 2 * ch, 3 * ch);
        }
        assert_int_equal(r->l.lvl->reconstruct(r, 0, 100, ch, got), -EINVAL);
        /* scrub: clean, then one corrupted parity byte and one data byte in other stripes. */
        uint64_t mism = 0;
        assert_int_equal(r->l.lvl->scrub(r, 0, rows * ch, false, &mism), 0);
        assert_int_equal(mism, 0);
        unsigned char junk[512];
        memset(junk, 0x5a, sizeof(junk));
        /* stripe 3 of 5 members: P on slot 1; stripe 6: data on slot 0 */
        assert_int_equal(rk_dev_write(a.m[1], junk, 512, DOFF + 3 * ch, 0), 0);
        assert_int_equal(rk_dev_write(a.m[0], junk, 512, DOFF + 6 * ch + 512, 0), 0);
        mism = 0;
        assert_int_equal(r->l.lvl->scrub(r, 0, rows * ch, false, &mism), 0);
        assert_int_equal(mism, 2);
        assert_int_equal(arr_check_members(&a, false), 2);
        mism = 0;
        assert_int_equal(r->l.lvl->scrub(r, 0, rows * ch, true, &mism), 0);
        assert_int_equal(mism, 2);
        mism = 0;
        assert_int_equal(r->l.lvl->scrub(r, 0, rows * ch, false, &mism), 0);
        assert_int_equal(mism, 0);
        assert_int_equal(arr_check_members(&a, false), 0);
        free(want);
        free(got);
        arr_free(&a);
    }
}

/* ---- member errors ---- */

/* Members are rk_test.h's failing wrappers over mem devices (switchable write failures and an
 * unreadable range, healed by a write that covers it, like a disk remapping sectors). */
static const struct rk_dev_ops bad_ops = {.kind = "bad",
                                          .read = rk_test_bad_read,
                                          .write = rk_test_bad_write,
                                          .flush = rk_test_bad_flush,
                                          .close = rk_test_bad_close};

struct failed_log {
    _Atomic int calls;
    _Atomic uint32_t slots;
};

static int on_failed(void *ctx, uint32_t slot, int error)
{
    struct failed_log *f = ctx;
    f->calls++;
    f->slots |= 1u << slot;
    return 0;
}

/* An array whose members are bad wrappers (a.m[] are the wrappers). */
static void arr_create_bad(struct arr *a, int level, uint32_t n, uint32_t chunk, uint64_t rows,
                           struct failed_log *log)
{
    arr_geom(a, level, n, chunk, rows);
    for (uint32_t i = 0; i < n; i++) {
        a->m[i] = rk_test_bad_open(&bad_ops, DOFF + rows * chunk);
        a->m[i]->opt_io_size = 512;
    }
    struct rk_raid_events ev = {.ctx = log, .member_failed = on_failed};
    assert_int_equal(rk_raid_open(&a->g, a->m, &ev, &a->raid), 0);
    a->size = a->raid->size;
    a->shadow = rk_test_zero_shadow(a->size);
}

static struct rk_test_bad *bad_of(struct arr *a, uint32_t slot)
{
    return a->m[slot]->priv;
}

static void test_write_errors(void **state)
{
    unsigned seed = 31;
    struct failed_log log = {0, 0};
    struct arr a;
    arr_create_bad(&a, RK_LEVEL_RAID5, 4, 8192, 12, &log);
    arr_write(&a, 0, a.size, &seed);
    bad_of(&a, 1)->fail_writes = 1;
    /* Every write still succeeds (one slot may go), the callback runs once for slot 1. */
    arr_random_io(&a, 60, &seed);
    arr_write(&a, 0, a.size, &seed);
    assert_int_equal(log.calls, 1);
    assert_int_equal(log.slots, 1u << 1);
    assert_int_equal(rk_raid_slot_state(a.raid, 1), RK_SLOT_FAILED);
    arr_check(&a);
    /* A second slot failing writes: data that needs it is lost, the write reports it. */
    bad_of(&a, 2)->fail_writes = 1;
    unsigned char buf[4096] = {1};
    assert_int_equal(rk_dev_write(a.raid, buf, sizeof(buf), 2 * 8192, 0), -EIO); /* slot 2 */
    assert_int_equal(log.calls, 2);
    arr_free(&a);

    /* raid6: two slots failing writes are survivable. */
    struct failed_log log6 = {0, 0};
    arr_create_bad(&a, RK_LEVEL_RAID6, 5, 8192, 12, &log6);
    arr_write(&a, 0, a.size, &seed);
    bad_of(&a, 0)->fail_writes = 1;
    bad_of(&a, 3)->fail_writes = 1;
    arr_random_io(&a, 60, &seed);
    assert_int_equal(log6.calls, 2);
    assert_int_equal(log6.slots, 0x9u);
    arr_check(&a);
    arr_free(&a);
}

static void test_read_errors(void **state)
{
    unsigned seed = 32;
    struct failed_log log = {0, 0};
    struct arr a;
    uint64_t ch = 8192;
    arr_create_bad(&a, RK_LEVEL_RAID6, 5, (uint32_t)ch, 12, &log);
    arr_write(&a, 0, a.size, &seed);
    /* Unreadable sectors in a data chunk of slot 0 (row 1) and in a parity chunk of slot 4
     * (row 0: P): reads return the right data and rewrite the data sectors. */
    bad_of(&a, 0)->bad_lo = DOFF + ch + 1024;
    bad_of(&a, 0)->bad_hi = DOFF + ch + 2048;
    arr_check(&a);
    assert_int_equal(bad_of(&a, 0)->bad_hi, 0); /* healed by the repair write */
    assert_int_equal(rk_raid_slot_state(a.raid, 0), RK_SLOT_ACTIVE);
    /* A write needing an unreadable block (rmw reads old data) still works and repairs. */
    bad_of(&a, 4)->bad_lo = DOFF + 512;
    bad_of(&a, 4)->bad_hi = DOFF + 1024;
    arr_write(&a, 512, 1024, &seed); /* row 0: P on slot 4 */
    arr_check(&a);
    assert_int_equal(arr_check_members(&a, true), 0);
    assert_int_equal(bad_of(&a, 4)->bad_hi, 0);
    /* Unreadable and unwritable: the data still reads back, the slot is failed. */
    bad_of(&a, 2)->bad_lo = DOFF + ch; /* row 1: data on slot 2 */
    bad_of(&a, 2)->bad_hi = DOFF + ch + 4096;
    bad_of(&a, 2)->fail_writes = 1;
    arr_check(&a);
    assert_int_equal(rk_raid_slot_state(a.raid, 2), RK_SLOT_FAILED);
    assert_int_equal(log.calls, 1);
    arr_check(&a);
    arr_free(&a);
}

/* A REBUILDING slot takes every write (so it stays consistent) but serves no read. */
static void test_rebuilding_slot(void **state)
{
    static const int levels[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    unsigned seed = 33;
    for (int li = 0; li < 2; li++) {
        struct failed_log log = {0, 0};
        struct arr a;
        arr_create_bad(&a, levels[li], 5, 8192, 12, &log);
        arr_write(&a, 0, a.size, &seed);
        struct raid_priv *r = a.raid->priv;
        atomic_store(&r->state[3], RK_SLOT_REBUILDING);
        int reads0 = bad_of(&a, 3)->reads;
        arr_random_io(&a, 80, &seed);
        arr_check(&a);
        assert_int_equal(bad_of(&a, 3)->reads, reads0);
        atomic_store(&r->state[3], RK_SLOT_ACTIVE);
        assert_int_equal(arr_check_members(&a, true), 0);
        /* FUA reaches every member write. */
        int fua0 = 0;
        for (uint32_t i = 0; i < 5; i++)
            fua0 += bad_of(&a, i)->fua_writes;
        unsigned char buf[4096] = {7};
        assert_int_equal(rk_dev_write(a.raid, buf, sizeof(buf), 8192, RK_WRITE_FUA), 0);
        memcpy(a.shadow + 8192, buf, sizeof(buf));
        int fua1 = 0;
        for (uint32_t i = 0; i < 5; i++)
            fua1 += bad_of(&a, i)->fua_writes;
        assert_int_equal(fua1 - fua0, levels[li] == RK_LEVEL_RAID6 ? 3 : 2);
        arr_check(&a);
        arr_free(&a);
    }
}

/* ---- field cases ---- */

/* Field case C05 (as tests/integration/C05_partial_stripe.sh): RAID5 of 3, chunk 4 KiB;
 * partial-stripe and boundary-crossing writes read back exactly, healthy and with each member
 * missing in turn. */
static void test_C05_partial_stripe(void **state)
{
    static const struct {
        uint64_t off, len;
    } w[] = {{512, 512}, {2 * KiB, 4 * KiB}, {4 * KiB, 8 * KiB}, {0, 12 * KiB}};
    unsigned seed = 5;
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
        struct arr a;
        arr_create(&a, RK_LEVEL_RAID5, 3, 4096, 16);
        arr_write(&a, 0, a.size, &seed); /* old content everywhere */
        arr_write(&a, w[i].off, w[i].len, &seed);
        arr_check(&a);
        assert_int_equal(arr_check_members(&a, true), 0);
        for (uint32_t s = 0; s < 3; s++) {
            assert_int_equal(arr_reopen(&a, 1u << s), 0);
            arr_check(&a);
        }
        /* The same write made while degraded, read back degraded and (parity) healthy. */
        for (uint32_t s = 0; s < 3; s++) {
            assert_int_equal(arr_reopen(&a, 1u << s), 0);
            arr_write(&a, w[i].off, w[i].len, &seed);
            arr_check(&a);
            /* Slot s missed the write: rebuild it from the others, then all must agree. */
            struct raid_priv *r = a.raid->priv;
            unsigned char *b = malloc(16 * 4096);
            assert_int_equal(r->l.lvl->reconstruct(r, s, 0, 16 * 4096, b), 0);
            assert_int_equal(rk_dev_write(a.m[s], b, 16 * 4096, DOFF, 0), 0);
            free(b);
            assert_int_equal(arr_reopen(&a, 0), 0);
            arr_check(&a);
            assert_int_equal(arr_check_members(&a, true), 0);
        }
        arr_free(&a);
    }
}

/* Field case C06 (as tests/integration/C06_discard_parity.sh): RAID5 3 x 1 MiB, chunk 64 KiB,
 * stamped. Discard [64K, 68K) and [128K, 384K), fail m0, read [0, 512K): outside the discards
 * intact, inside zeros or old data; parity consistent (scrub finds 0 mismatched stripes). */
static void test_C06_discard_parity(void **state)
{
    unsigned seed = 6;
    struct arr a;
    arr_create(&a, RK_LEVEL_RAID5, 3, 64 * KiB, 16);
    arr_write(&a, 0, a.size, &seed);
    assert_int_equal(rk_dev_discard(a.raid, 4 * KiB, 64 * KiB), 0);
    assert_int_equal(rk_dev_discard(a.raid, 256 * KiB, 128 * KiB), 0);
    struct raid_priv *r = a.raid->priv;
    uint64_t mism = 0;
    assert_int_equal(r->l.lvl->scrub(r, 0, MiB, false, &mism), 0);
    assert_int_equal(mism, 0);
    assert_int_equal(arr_check_members(&a, false), 0);
    assert_int_equal(rk_raid_fail_slot(a.raid, 0), 0);
    unsigned char *b = malloc(512 * KiB), *zero = calloc(1, 512 * KiB);
    assert_int_equal(rk_dev_read(a.raid, b, 512 * KiB, 0), 0);
    assert_memory_equal(b, a.shadow, 64 * KiB);
    assert_memory_equal(b + 68 * KiB, a.shadow + 68 * KiB, 60 * KiB);
    assert_memory_equal(b + 384 * KiB, a.shadow + 384 * KiB, 128 * KiB);
    uint64_t ranges[2][2] = {{64 * KiB, 4 * KiB}, {128 * KiB, 256 * KiB}};
    for (int i = 0; i < 2; i++)
        for (uint64_t o = ranges[i][0]; o < ranges[i][0] + ranges[i][1]; o += 512)
            assert_true(!memcmp(b + o, zero, 512) || !memcmp(b + o, a.shadow + o, 512));
    free(b);
    free(zero);
    arr_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_healthy_random),     cmocka_unit_test(test_raid5_degraded),
        cmocka_unit_test(test_raid6_degraded),     cmocka_unit_test(test_io_counts),
        cmocka_unit_test(test_concurrency),        cmocka_unit_test(test_discard_zeroes),
        cmocka_unit_test(test_reconstruct_scrub),  cmocka_unit_test(test_C05_partial_stripe),
        cmocka_unit_test(test_C06_discard_parity), cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_read_errors),        cmocka_unit_test(test_rebuilding_slot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
