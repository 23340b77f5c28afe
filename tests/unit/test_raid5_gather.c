/*
 * Stripe gathering of sequential sub-chunk writes on raid5/raid6 (issue 13 item 2,
 * src/raid/raid5_gather.c, and the stream fill of src/raid/raid5_cache.c it builds on): exact
 * member I/O counts for a sequential 16 KiB stream (gathering on: no reads after the first
 * write, one full-stripe write per stripe; gathering off: the stream fill's counts), random
 * writes unchanged (2+2 on raid5, 3+3 on raid6, reconstruct-write where cheaper) also while a
 * stream is held, a stream interrupted by FLUSH and FUA writes (a power cut that undoes every
 * other write keeps exactly what was acknowledged durable), the hold time, reads and block
 * status of held data, and a member failing while data is held.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "raid/parity.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define DOFF  (8 * KiB)
#define CHUNK (64 * KiB)
#define WR    (16 * KiB)
/* A hold no test run reaches: only whole stripes, flushes and other requests write out. */
#define LONG_HOLD "30000000"

struct arr {
    struct rk_raid_geom g;
    struct rk_dev *mem[RK_MAX_MEMBERS]; /* the member contents */
    struct rk_dev *m[RK_MAX_MEMBERS];   /* what the array uses: mem, or fault devices over mem */
    struct rk_dev *raid;
    uint32_t nd, np;
};

static void arr_open(struct arr *a, int level, uint32_t n, uint64_t rows, bool fault)
{
    memset(a, 0, sizeof(*a));
    rk_test_geom(&a->g, level, n, CHUNK, DOFF, rows * CHUNK);
    rk_test_mem_members(a->mem, n, DOFF + rows * CHUNK, 512);
    for (uint32_t i = 0; i < n; i++) {
        a->m[i] = a->mem[i];
        if (fault)
            assert_int_equal(rk_fault_open(a->mem[i], false, &a->m[i]), 0);
    }
    assert_int_equal(rk_raid_open(&a->g, a->m, NULL, &a->raid), 0);
    a->np = level == RK_LEVEL_RAID6 ? 2 : 1;
    a->nd = n - a->np;
}

static void arr_close(struct arr *a)
{
    rk_dev_close(a->raid);
    for (uint32_t i = 0; i < a->g.members; i++) {
        if (a->m[i] != a->mem[i])
            rk_dev_close(a->m[i]);
        rk_dev_close(a->mem[i]);
    }
}

static void counts(struct arr *a, uint64_t *rd, uint64_t *wr)
{
    *rd = *wr = 0;
    for (uint32_t i = 0; i < a->g.members; i++) {
        *rd += atomic_load(&a->mem[i]->stats.reads);
        *wr += atomic_load(&a->mem[i]->stats.writes);
    }
}

/* Every stripe's parity matches its data on the member contents. */
static void check_parity(struct arr *a)
{
    uint32_t n = a->g.members;
    uint64_t rows = a->g.data_size[0] / CHUNK;
    char *blk[RK_MAX_MEMBERS], *p = malloc(CHUNK), *q = malloc(CHUNK);
    for (uint32_t i = 0; i < n; i++)
        blk[i] = malloc(CHUNK);
    for (uint64_t s = 0; s < rows; s++) {
        uint32_t pd = n - 1 - (uint32_t)(s % n);
        void *data[RK_MAX_MEMBERS];
        for (uint32_t i = 0; i < n; i++)
            assert_int_equal(rk_dev_read(a->mem[i], blk[i], CHUNK, DOFF + s * CHUNK), 0);
        for (uint32_t k = 0; k < a->nd; k++)
            data[k] = blk[(pd + a->np + k) % n];
        rk_parity_ref_pq((int)a->nd, CHUNK, data, p, a->np == 2 ? q : NULL);
        assert_memory_equal(p, blk[pd], CHUNK);
        if (a->np == 2)
            assert_memory_equal(q, blk[(pd + 1) % n], CHUNK);
    }
    for (uint32_t i = 0; i < n; i++)
        free(blk[i]);
    free(p);
    free(q);
}

/* Read array range [off, off+len) from the member contents (not through the array). */
static void member_read(struct arr *a, char *out, uint64_t len, uint64_t off)
{
    while (len) {
        struct rk_raid_extent e;
        uint64_t run;
        assert_int_equal(rk_raid_map(&a->g, off, &e, 1, &run), 1);
        uint64_t n = run < len ? run : len;
        assert_int_equal(rk_dev_read(a->mem[e.slot], out, n, DOFF + e.member_off), 0);
        out += n;
        off += n;
        len -= n;
    }
}

/*
 * Gathering off (stream fill only, RAIDKIT_RAID5_GATHER_US=0):
 * a sequential 16K stream over S stripes of raid5 (4 members: 12 writes per stripe) and raid6
 * (6 members: 16 per stripe). The first write cannot know a stream follows: read-modify-write
 * (np + 1 reads). The second is recognised as continuing it and reads the stripe's other data
 * chunks whole (nd - 1 reads); from then on every write of the stripe reads nothing, and each
 * later stripe costs nd - 1 reads at its first write. Writes: data + parity per request.
 * Random 4K writes afterwards are still 2+2 / 3+3.
 */
static void test_fill_counts(void **state)
{
    setenv("RAIDKIT_RAID5_GATHER_US", "0", 1);
    static const struct {
        int level;
        uint32_t n;
    } cases[] = {{RK_LEVEL_RAID5, 4}, {RK_LEVEL_RAID6, 6}};
    unsigned seed = 1301;
    for (int ci = 0; ci < 2; ci++) {
        struct arr a;
        const uint64_t S = 4;
        arr_open(&a, cases[ci].level, cases[ci].n, S + 4, false);
        uint64_t sb = a.nd * CHUNK, per = sb / WR, r0, w0, r1, w1;
        char *buf = malloc(sb * S), *back = malloc(sb * S);
        rk_test_fill_rand_r((unsigned char *)buf, sb * S, &seed);
        counts(&a, &r0, &w0);
        for (uint64_t i = 0; i < per * S; i++) {
            uint64_t rb, wb, ra, wa;
            counts(&a, &rb, &wb);
            assert_int_equal(rk_dev_write(a.raid, buf + i * WR, WR, sb + i * WR, 0), 0);
            counts(&a, &ra, &wa);
            uint64_t want = i == 0 ? a.np + 1 : i == 1 ? a.nd - 1 : i % per == 0 ? a.nd - 1 : 0;
            if (ra - rb != want)
                print_error("%s write %llu: %llu member reads, want %llu\n", ci ? "raid6" : "raid5",
                            (unsigned long long)i, (unsigned long long)(ra - rb),
                            (unsigned long long)want);
            assert_int_equal(ra - rb, want);
            assert_int_equal(wa - wb, 1 + a.np);
        }
        counts(&a, &r1, &w1);
        assert_int_equal(r1 - r0, a.np + 1 + (a.nd - 1) * S);
        assert_int_equal(w1 - w0, (1 + a.np) * per * S);
        assert_int_equal(rk_dev_read(a.raid, back, sb * S, sb), 0);
        assert_memory_equal(buf, back, sb * S);
        check_parity(&a);
        /* random 4K writes into stripes the stream did not touch: unchanged costs */
        uint64_t offs[] = {(S + 1) * sb + 3 * 4096, (S + 2) * sb + CHUNK + 8192, 5 * 4096};
        for (int j = 0; j < 3; j++) {
            counts(&a, &r0, &w0);
            assert_int_equal(rk_dev_write(a.raid, buf, 4096, offs[j], 0), 0);
            counts(&a, &r1, &w1);
            assert_int_equal(r1 - r0, a.np + 1);
            assert_int_equal(w1 - w0, a.np + 1);
        }
        check_parity(&a);
        free(buf);
        free(back);
        arr_close(&a);
    }
}

/*
 * Gathering off. A stream interrupted by FLUSH and FUA writes, over fault members: at the power cut
 * (every unflushed write undone, KEEP_NONE) exactly what was acknowledged durable survives: the
 * writes completed before the flush, and the FUA write, byte for byte on the members. The counts
 * show nothing waited: every write did its member writes before it returned.
 */
static void test_fill_flush_fua(void **state)
{
    setenv("RAIDKIT_RAID5_GATHER_US", "0", 1);
    static const int levels[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    unsigned seed = 1302;
    for (int li = 0; li < 2; li++) {
        struct arr a;
        arr_open(&a, levels[li], 5, 6, true);
        uint64_t sb = a.nd * CHUNK, nw = 2 * sb / WR, fua = nw - 3, flush_after = nw / 2;
        char *buf = malloc(nw * WR), *back = malloc(WR);
        rk_test_fill_rand_r((unsigned char *)buf, nw * WR, &seed);
        for (uint64_t i = 0; i < nw; i++) {
            uint64_t rb, wb, ra, wa;
            counts(&a, &rb, &wb);
            assert_int_equal(
                rk_dev_write(a.raid, buf + i * WR, WR, i * WR, i == fua ? RK_WRITE_FUA : 0), 0);
            counts(&a, &ra, &wa);
            assert_int_equal(wa - wb, 1 + a.np); /* written before the reply, never held */
            if (i == flush_after)
                assert_int_equal(rk_dev_flush(a.raid), 0);
        }
        for (uint32_t s = 0; s < a.g.members; s++)
            assert_int_equal(rk_fault_power_cut(a.m[s]), 0);
        for (uint64_t i = 0; i < nw; i++) {
            if (i > flush_after && i != fua)
                continue;
            member_read(&a, back, WR, i * WR);
            if (memcmp(back, buf + i * WR, WR))
                print_error("write %llu (%s) lost at the power cut\n", (unsigned long long)i,
                            i == fua ? "FUA" : "before the flush");
            assert_memory_equal(back, buf + i * WR, WR);
        }
        free(buf);
        free(back);
        arr_close(&a);
    }
}

static void io_delta(struct arr *a, uint64_t *rb, uint64_t *wb, uint64_t *dr, uint64_t *dw)
{
    uint64_t r, w;
    counts(a, &r, &w);
    *dr = r - *rb;
    *dw = w - *wb;
    *rb = r;
    *wb = w;
}

/*
 * Gathering on. A sequential 16K stream from stripe 1 over S stripes of raid5 over 4 and raid6
 * over 6. Write 0 cannot know a stream follows: read-modify-write (np + 1 reads, 1 + np
 * writes). Every later write is held: no member I/O, except the write that makes a stripe
 * whole, which writes it out as one full stripe (n writes, no reads). Stripe 1 (its first
 * piece went out directly) is written out by the flush: n writes and no reads (the stripe cache
 * knows the first piece). So the whole stream reads np + 1 blocks, once. Random 4K writes
 * afterwards, and while a stripe is held, are still np + 1 reads and writes each, done before
 * they return; raid5 over 3 still prefers the 1-read reconstruct-write.
 */
static void test_gather_counts(void **state)
{
    static const struct {
        int level;
        uint32_t n;
    } cases[] = {{RK_LEVEL_RAID5, 4}, {RK_LEVEL_RAID6, 6}};
    unsigned seed = 1303;
    setenv("RAIDKIT_RAID5_GATHER_US", LONG_HOLD, 1);
    for (int ci = 0; ci < 2; ci++) {
        struct arr a;
        const uint64_t S = 4;
        uint32_t n = cases[ci].n;
        arr_open(&a, cases[ci].level, n, S + 4, false);
        uint64_t sb = a.nd * CHUNK, per = sb / WR, rb, wb, dr, dw, r0, w0;
        char *buf = malloc(sb * S), *back = malloc(sb * S);
        rk_test_fill_rand_r((unsigned char *)buf, sb * S, &seed);
        counts(&a, &rb, &wb);
        r0 = rb;
        w0 = wb;
        for (uint64_t i = 0; i < per * S; i++) {
            assert_int_equal(rk_dev_write(a.raid, buf + i * WR, WR, sb + i * WR, 0), 0);
            io_delta(&a, &rb, &wb, &dr, &dw);
            uint64_t want_r = i == 0 ? a.np + 1 : 0;
            uint64_t want_w = i == 0 ? 1 + a.np : i >= per && i % per == per - 1 ? n : 0;
            if (dr != want_r || dw != want_w)
                print_error("%s write %llu: %llu reads %llu writes, want %llu %llu\n",
                            ci ? "raid6" : "raid5", (unsigned long long)i, (unsigned long long)dr,
                            (unsigned long long)dw, (unsigned long long)want_r,
                            (unsigned long long)want_w);
            assert_int_equal(dr, want_r);
            assert_int_equal(dw, want_w);
        }
        /* status counters (rk_raid_gather_stats): every write but the first held, stripes
         * 2..S written out whole by their last write, stripe 1 (in part) held until the flush */
        struct rk_raid_gather_stats gs;
        assert_int_equal(rk_raid_gather_stats(a.raid, &gs), 0);
        assert_true(gs.level_has && gs.on);
        assert_int_equal(gs.writes_held, per * S - 1);
        assert_int_equal(gs.bytes_held, (per * S - 1) * WR);
        assert_int_equal(gs.full_stripe_writes, S - 1);
        assert_int_equal(gs.out_whole_fill, S - 1);
        assert_int_equal(gs.partial_writes, 0);
        assert_int_equal(gs.held_now, 1);
        assert_int_equal(gs.stripe_bytes, sb);
        assert_int_equal(rk_dev_flush(a.raid), 0); /* writes stripe 1 out */
        io_delta(&a, &rb, &wb, &dr, &dw);
        assert_int_equal(dr, 0);
        assert_int_equal(dw, n);
        assert_int_equal(rk_raid_gather_stats(a.raid, &gs), 0);
        assert_int_equal(gs.held_now, 0);
        assert_int_equal(gs.partial_writes, 1);
        assert_int_equal(gs.out_flush, 1);
        assert_int_equal(gs.out_timeout + gs.out_fua + gs.out_memory + gs.out_other, 0);
        assert_int_equal(rb - r0, a.np + 1);
        assert_int_equal(wb - w0, 1 + a.np + n * S);
        member_read(&a, back, sb * S, sb);
        assert_memory_equal(buf, back, sb * S);
        assert_int_equal(rk_dev_read(a.raid, back, sb * S, sb), 0);
        assert_memory_equal(buf, back, sb * S);
        check_parity(&a);
        /* random 4K writes (none within 8 lengths after a recent end), with a stripe of a
         * stream held meanwhile: unchanged, not held */
        uint64_t so = (S + 2) * sb;
        assert_int_equal(rk_dev_write(a.raid, buf, WR, so, 0), 0);
        assert_int_equal(rk_dev_write(a.raid, buf + WR, WR, so + WR, 0), 0); /* held */
        uint64_t offs[] = {(S + 1) * sb + CHUNK + 3 * 4096, (S + 3) * sb + CHUNK + 8192, 5 * 4096};
        for (int j = 0; j < 3; j++) {
            counts(&a, &rb, &wb);
            assert_int_equal(rk_dev_write(a.raid, buf, 4096, offs[j], 0), 0);
            io_delta(&a, &rb, &wb, &dr, &dw);
            assert_int_equal(dr, a.np + 1);
            assert_int_equal(dw, a.np + 1);
        }
        assert_int_equal(rk_dev_flush(a.raid), 0);
        check_parity(&a);
        free(buf);
        free(back);
        arr_close(&a);
    }
    /* raid5 over 3: a random 4K write is a reconstruct-write (1 read, 2 writes), as before */
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID5, 3, 4, false);
    char *b4 = calloc(1, 4096);
    uint64_t rb, wb, dr, dw;
    counts(&a, &rb, &wb);
    assert_int_equal(rk_dev_write(a.raid, b4, 4096, 8192, 0), 0);
    io_delta(&a, &rb, &wb, &dr, &dw);
    assert_int_equal(dr, 1);
    assert_int_equal(dw, 2);
    free(b4);
    arr_close(&a);
}

/*
 * Gathering on, a stream interrupted by FLUSH and FUA writes, over fault members. A held write
 * does no member I/O; the FLUSH writes out every held stripe before it flushes the members; a
 * FUA write first writes out the held data of its stripe, then itself with FUA, before it
 * returns. At the power cut (every unflushed member write undone, KEEP_NONE) the writes
 * acknowledged before the flush and the FUA write survive byte for byte.
 */
static void test_gather_flush_fua(void **state)
{
    static const int levels[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    unsigned seed = 1304;
    setenv("RAIDKIT_RAID5_GATHER_US", LONG_HOLD, 1);
    for (int li = 0; li < 2; li++) {
        struct arr a;
        arr_open(&a, levels[li], 5, 6, true);
        uint64_t sb = a.nd * CHUNK, nw = 2 * sb / WR, fua = nw - 3, flush_after = nw / 2;
        uint64_t rb, wb, dr, dw;
        char *buf = malloc(nw * WR), *back = malloc(WR);
        rk_test_fill_rand_r((unsigned char *)buf, nw * WR, &seed);
        counts(&a, &rb, &wb);
        for (uint64_t i = 0; i < nw; i++) {
            assert_int_equal(
                rk_dev_write(a.raid, buf + i * WR, WR, i * WR, i == fua ? RK_WRITE_FUA : 0), 0);
            io_delta(&a, &rb, &wb, &dr, &dw);
            if (i == 0) /* direct: read-modify-write */
                assert_int_equal(dw, 1 + a.np);
            else if (i == fua) /* the held stripe, then the FUA write itself: not held */
                assert_true(dw >= a.g.members + 1 + a.np);
            else
                assert_int_equal(dw, 0); /* held */
            if (i == flush_after) {
                assert_int_equal(rk_dev_flush(a.raid), 0);
                io_delta(&a, &rb, &wb, &dr, &dw);
                assert_true(dw > 0); /* the flush wrote the held stripes */
            }
        }
        struct rk_raid_gather_stats gs;
        assert_int_equal(rk_raid_gather_stats(a.raid, &gs), 0);
        assert_true(gs.out_fua >= 1 && gs.out_flush >= 1);
        for (uint32_t s = 0; s < a.g.members; s++)
            assert_int_equal(rk_fault_power_cut(a.m[s]), 0);
        for (uint64_t i = 0; i < nw; i++) {
            if (i > flush_after && i != fua)
                continue;
            member_read(&a, back, WR, i * WR);
            if (memcmp(back, buf + i * WR, WR))
                print_error("write %llu (%s) lost at the power cut\n", (unsigned long long)i,
                            i == fua ? "FUA" : "before the flush");
            assert_memory_equal(back, buf + i * WR, WR);
        }
        free(buf);
        free(back);
        arr_close(&a);
    }
}

/* The hold time: a stream that stops inside a stripe reaches the members by itself, without a
 * flush, once its hold (here 1 ms) ended; parity is consistent afterwards. */
static void test_gather_hold_time(void **state)
{
    unsigned seed = 1305;
    setenv("RAIDKIT_RAID5_GATHER_US", "1000", 1);
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID6, 5, 4, false);
    uint64_t sb = a.nd * CHUNK, len = sb / 2, rb, wb, dr, dw;
    char *buf = malloc(len), *back = malloc(len);
    rk_test_fill_rand_r((unsigned char *)buf, len, &seed);
    counts(&a, &rb, &wb);
    for (uint64_t o = 0; o < len; o += WR)
        assert_int_equal(rk_dev_write(a.raid, buf + o, WR, sb + o, 0), 0);
    int waited = 0;
    for (; waited < 200; waited++) { /* up to 2 s on a loaded machine */
        member_read(&a, back, len, sb);
        if (!memcmp(back, buf, len))
            break;
        usleep(10000);
    }
    assert_true(waited < 200);
    check_parity(&a);
    io_delta(&a, &rb, &wb, &dr, &dw);
    assert_true(dw > 0);
    free(buf);
    free(back);
    arr_close(&a);
}

/*
 * Held data and other requests: block status, write-zeroes and discard see it as written (the
 * stripe is written out first); a member failing while a stripe is held: the write-out goes to
 * the survivors, everything reads back, and a later flush succeeds.
 */
static void test_gather_others(void **state)
{
    unsigned seed = 1306;
    setenv("RAIDKIT_RAID5_GATHER_US", LONG_HOLD, 1);
    struct arr a;
    arr_open(&a, RK_LEVEL_RAID5, 4, 6, false);
    uint64_t sb = a.nd * CHUNK, len = 4 * WR, rb, wb, dr, dw;
    char *buf = malloc(2 * sb), *back = malloc(2 * sb);
    rk_test_fill_rand_r((unsigned char *)buf, 2 * sb, &seed);
    /* block status over a held stripe: data, and on the members */
    for (uint64_t o = 0; o < len; o += WR)
        assert_int_equal(rk_dev_write(a.raid, buf + o, WR, o, 0), 0);
    counts(&a, &rb, &wb);
    uint64_t ext;
    bool hole;
    assert_int_equal(rk_dev_map(a.raid, 0, sb, &ext, &hole), 0);
    io_delta(&a, &rb, &wb, &dr, &dw);
    assert_true(dw > 0);
    member_read(&a, back, len, 0);
    assert_memory_equal(back, buf, len);
    /* a read of a held stripe writes it out first and returns the held bytes */
    for (uint64_t o = 3 * sb; o < 3 * sb + len; o += WR)
        assert_int_equal(rk_dev_write(a.raid, buf + o - 3 * sb, WR, o, 0), 0);
    counts(&a, &rb, &wb);
    assert_int_equal(rk_dev_read(a.raid, back, len, 3 * sb), 0);
    assert_memory_equal(back, buf, len);
    io_delta(&a, &rb, &wb, &dr, &dw);
    assert_true(dw > 0);
    member_read(&a, back, len, 3 * sb);
    assert_memory_equal(back, buf, len);
    /* write-zeroes inside a held stripe: the held bytes around it stay */
    for (uint64_t o = sb; o < sb + len; o += WR)
        assert_int_equal(rk_dev_write(a.raid, buf + o, WR, o, 0), 0);
    assert_int_equal(rk_dev_write_zeroes(a.raid, WR, sb + WR, 0), 0);
    memset(buf + sb + WR, 0, WR);
    assert_int_equal(rk_dev_read(a.raid, back, len, sb), 0);
    assert_memory_equal(back, buf + sb, len);
    /* a member fails while a stripe is held */
    for (uint64_t o = 2 * sb; o < 2 * sb + len; o += WR)
        assert_int_equal(rk_dev_write(a.raid, buf + o - 2 * sb, WR, o, 0), 0);
    assert_int_equal(rk_raid_fail_slot(a.raid, 1), 0);
    assert_int_equal(rk_dev_flush(a.raid), 0);
    assert_int_equal(rk_dev_read(a.raid, back, len, 2 * sb), 0);
    assert_memory_equal(back, buf, len);
    free(buf);
    free(back);
    arr_close(&a);
}

/* One writer of test_gather_threads: sequential pieces of 4..24 KiB over its own rows (a new
 * random start now and then), every one read back through the array at once. */
struct gwriter {
    struct arr *a;
    char *shadow; /* the whole array's expected content; this writer owns [lo, hi) */
    uint64_t lo, hi;
    unsigned seed;
    int fua_every, jump, err; /* a new random start once in jump writes */
};

static void *gwriter_run(void *arg)
{
    struct gwriter *w = arg;
    char *buf = malloc(24 * KiB), *back = malloc(24 * KiB);
    uint64_t pos = w->lo;
    for (int i = 0; i < 1500 && !w->err; i++) {
        uint64_t n = (1 + (uint64_t)rand_r(&w->seed) % 6) * 4 * KiB;
        if (pos + n > w->hi || rand_r(&w->seed) % w->jump == 0)
            pos = w->lo + (uint64_t)rand_r(&w->seed) % ((w->hi - w->lo) / (4 * KiB) - 6) * 4 * KiB;
        rk_test_fill_rand_r((unsigned char *)buf, n, &w->seed);
        uint32_t fl = w->fua_every && i % w->fua_every == 0 ? RK_WRITE_FUA : 0;
        if ((w->err = rk_dev_write(w->a->raid, buf, n, pos, fl)))
            break;
        memcpy(w->shadow + pos, buf, n);
        if ((w->err = rk_dev_read(w->a->raid, back, n, pos)))
            break;
        if (memcmp(back, buf, n))
            w->err = -EILSEQ;
        if (i % 97 == 0 && !w->err)
            w->err = rk_dev_flush(w->a->raid);
        pos += n;
    }
    free(buf);
    free(back);
    return NULL;
}

/*
 * Gathering on with a short hold (300 us), four threads: three sequential streams (one with FUA
 * writes among them) and one random writer, each in its own rows, every write read back at
 * once, flushes in between. At the end every byte is on the members and every stripe's parity
 * matches.
 */
static void test_gather_threads(void **state)
{
    setenv("RAIDKIT_RAID5_GATHER_US", "300", 1);
    static const int levels[] = {RK_LEVEL_RAID5, RK_LEVEL_RAID6};
    for (int li = 0; li < 2; li++) {
        struct arr a;
        const uint64_t rows = 64;
        arr_open(&a, levels[li], 5, rows, false);
        uint64_t size = rows * a.nd * CHUNK, part = size / 4;
        char *shadow = calloc(1, size), *back = malloc(size);
        struct gwriter w[4];
        pthread_t t[4];
        for (int i = 0; i < 4; i++) {
            w[i] = (struct gwriter){.a = &a,
                                    .shadow = shadow,
                                    .lo = i * part,
                                    .hi = (i + 1) * part,
                                    .seed = 1400u + (unsigned)i + 10u * (unsigned)li,
                                    .fua_every = i == 1 ? 7 : 0,
                                    .jump = i == 3 ? 1 : 50};
            assert_int_equal(pthread_create(&t[i], NULL, gwriter_run, &w[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], NULL);
            if (w[i].err)
                print_error("writer %d: %d\n", i, w[i].err);
            assert_int_equal(w[i].err, 0);
        }
        assert_int_equal(rk_dev_flush(a.raid), 0);
        member_read(&a, back, size, 0);
        assert_memory_equal(back, shadow, size);
        check_parity(&a);
        free(shadow);
        free(back);
        arr_close(&a);
    }
}

/*
 * Out of order (a stream's requests run on several NBD threads): every stripe after the first
 * gets its second 16K piece before its first. The second piece starts one length after the
 * previous stripe's end, that is at its own stripe's start plus one piece: it is gathered (it
 * was written directly before, reading the stripe, and its stripe's entry, missing it, ended
 * with its hold as partial-stripe writes). So each later stripe is one full-stripe write, no
 * reads, as in order.
 */
static void test_gather_out_of_order(void **state)
{
    (void)state;
    unsigned seed = 1709;
    setenv("RAIDKIT_RAID5_GATHER_US", LONG_HOLD, 1);
    for (int ci = 0; ci < 2; ci++) {
        struct arr a;
        const uint64_t S = 4;
        arr_open(&a, ci ? RK_LEVEL_RAID6 : RK_LEVEL_RAID5, ci ? 6 : 4, S + 2, false);
        uint64_t sb = a.nd * CHUNK, per = sb / WR, rb, wb, dr, dw;
        char *buf = malloc(sb * S), *back = malloc(sb * S);
        rk_test_fill_rand_r((unsigned char *)buf, sb * S, &seed);
        for (uint64_t i = 0; i < per; i++) /* stripe 1 in order: the stream starts */
            assert_int_equal(rk_dev_write(a.raid, buf + i * WR, WR, sb + i * WR, 0), 0);
        counts(&a, &rb, &wb);
        for (uint64_t k = 1; k < S; k++)
            for (uint64_t j = 0; j < per; j++) {
                uint64_t i = k * per + (j == 0 ? 1 : j == 1 ? 0 : j);
                assert_int_equal(rk_dev_write(a.raid, buf + i * WR, WR, sb + i * WR, 0), 0);
            }
        io_delta(&a, &rb, &wb, &dr, &dw);
        struct rk_raid_gather_stats gs;
        assert_int_equal(rk_raid_gather_stats(a.raid, &gs), 0);
        assert_int_equal(gs.partial_writes, 0);
        assert_int_equal(dr, 0);
        assert_int_equal(dw, a.g.members * (S - 1));
        assert_int_equal(rk_dev_flush(a.raid), 0);
        assert_int_equal(rk_dev_read(a.raid, back, sb * S, sb), 0);
        assert_memory_equal(buf, back, sb * S);
        check_parity(&a);
        free(buf);
        free(back);
        arr_close(&a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fill_counts),      cmocka_unit_test(test_fill_flush_fua),
        cmocka_unit_test(test_gather_counts),    cmocka_unit_test(test_gather_flush_fua),
        cmocka_unit_test(test_gather_hold_time), cmocka_unit_test(test_gather_others),
        cmocka_unit_test(test_gather_threads),   cmocka_unit_test(test_gather_out_of_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
