/* Cache device metadata (src/cache/meta*.c, docs/FORMAT.md "Cache device"): format/open round
 * trip, map/unmap/commit/replay, the reuse rule of unmapped blocks, crash simulation (uncommitted
 * tail dropped, torn and flipped journal blocks), checkpoints and the journal wrap, a
 * re-initialisation cut halfway, a cache bound to another array, corrupted metadata refused, and
 * the golden superblock image decoded field by field. */
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

#include "cache/meta.h"
#include "cache/meta_int.h"
#include "cache_golden.h"
#include "meta/superblock.h"
#include "sb_golden.h"
#include "core/util.h"
#include "raidkit/member.h"
#include "rk_test.h"

#define DEV_SIZE (8 * MiB)
#define BS       (64 * 1024u)
#define ASIZE    (64 * MiB)

static const uint8_t A_UUID[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t B_UUID[16] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

static struct rk_dev *mem_dev(uint64_t size)
{
    struct rk_dev *d;
    assert_int_equal(rk_mem_open(size, 512, &d), 0);
    return d;
}

static void format(struct rk_dev *d, uint64_t jsize)
{
    struct rk_cache_format_params p = {
        .array_size = ASIZE, .block_size = BS, .mode = RK_CACHE_WRITEBACK, .journal_size = jsize};
    memcpy(p.array_uuid, A_UUID, 16);
    char err[256] = "";
    int r = rk_cache_meta_format(d, "cache0", &p, err, sizeof(err));
    if (r)
        fail_msg("format: %s", err);
}

static struct rk_cache_meta *open_ok(struct rk_dev *d)
{
    struct rk_cache_meta *m = NULL;
    char err[512] = "";
    int r = rk_cache_meta_open(d, "cache0", A_UUID, ASIZE, &m, err, sizeof(err));
    if (r)
        fail_msg("open: %s", err);
    return m;
}

static int open_err(struct rk_dev *d, char *err, size_t len)
{
    struct rk_cache_meta *m = NULL;
    err[0] = 0;
    int r = rk_cache_meta_open(d, "cache0", A_UUID, ASIZE, &m, err, len);
    if (!r)
        rk_cache_meta_close(m);
    return r;
}

/* Map n blocks: bblock i*3+1 -> a fresh cblock, dirty when i is odd. */
static void map_some(struct rk_cache_meta *m, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t c;
        assert_int_equal(rk_cache_meta_alloc(m, &c), 0);
        rk_cache_meta_map(m, c, i * 3 + 1, i & 1);
    }
}

/* The state of bblocks [0, nb): cblock+1 (0 unmapped) and dirty, for comparing loads. */
struct snap {
    uint64_t c[1024];
    bool dirty[1024];
};

static void take(struct rk_cache_meta *m, struct snap *s)
{
    memset(s, 0, sizeof(*s));
    for (uint64_t b = 0; b < 1024; b++) {
        uint64_t c;
        bool d;
        if (!rk_cache_meta_lookup(m, b, &c, &d)) {
            s->c[b] = c + 1;
            s->dirty[b] = d;
        }
    }
}

/* ---- crash simulation on device images ---- */

static uint8_t *img_read(struct rk_dev *d)
{
    uint8_t *img = malloc(d->size);
    assert_non_null(img);
    assert_int_equal(rk_dev_read(d, img, d->size, 0), 0);
    return img;
}

static struct rk_dev *dev_from(const uint8_t *img, uint64_t size)
{
    struct rk_dev *d = mem_dev(size);
    assert_int_equal(rk_dev_write(d, img, size, 0, 0), 0);
    return d;
}

/* Open a copy of img: 0 with *s, or the error (message in err). */
static int load_img(const uint8_t *img, uint64_t size, struct snap *s, char *err, size_t len)
{
    struct rk_dev *d = dev_from(img, size);
    struct rk_cache_meta *m = NULL;
    err[0] = 0;
    int r = rk_cache_meta_open(d, "cache0", A_UUID, ASIZE, &m, err, len);
    if (!r) {
        take(m, s);
        /* and again after the open's own checkpoint */
        assert_int_equal(rk_cache_meta_close(m), 0);
        struct snap again;
        struct rk_cache_meta *m2 = open_ok(d);
        take(m2, &again);
        assert_memory_equal(s, &again, sizeof(again));
        rk_cache_meta_close(m2);
    }
    rk_dev_close(d);
    return r;
}

/* Internals of an open cache for building crash images. */
static uint64_t j_off(struct rk_cache_meta *m)
{
    return m->sb.journal_off;
}

static void test_format_open(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    assert_int_equal(rk_cache_meta_block_size(m), BS);
    uint64_t n = rk_cache_meta_blocks(m), off = rk_cache_meta_data_offset(m);
    assert_true(n >= 16);
    assert_true(off % MiB == 0 && off + n * BS <= DEV_SIZE && off + (n + 1) * BS > DEV_SIZE);
    assert_int_equal(rk_cache_meta_mode(m), RK_CACHE_WRITEBACK);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 0);
    assert_int_equal(st.free, n);
    assert_memory_equal(rk_cache_meta_array_uuid(m), A_UUID, 16);
    uint64_t c;
    assert_int_equal(rk_cache_meta_lookup(m, 5, &c, NULL), -ENOENT);
    assert_int_equal(rk_cache_meta_close(m), 0);
    rk_dev_close(d);
}

static void test_map_commit_reopen(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 20);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    uint64_t c;
    bool dirty;
    assert_int_equal(rk_cache_meta_lookup(m, 4, &c, &dirty), 0);
    assert_true(dirty);
    rk_cache_meta_set_dirty(m, c, false);
    assert_int_equal(rk_cache_meta_lookup(m, 7, &c, &dirty), 0);
    rk_cache_meta_unmap(m, c);
    assert_int_equal(rk_cache_meta_set_mode(m, RK_CACHE_WRITETHROUGH), 0);
    struct snap before, after;
    take(m, &before);
    /* No close: reopen from the journal alone (as after a crash). */
    struct rk_cache_meta *m2 = open_ok(d);
    take(m2, &after);
    assert_memory_equal(&before, &after, sizeof(before));
    assert_int_equal(rk_cache_meta_mode(m2), RK_CACHE_WRITETHROUGH);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m2, &st);
    assert_int_equal(st.mapped, 19);
    assert_int_equal(st.dirty, 9);
    assert_int_equal(st.free, rk_cache_meta_blocks(m2) - 19);
    rk_cache_meta_close(m2);
    /* m's memory is dropped without writing (its device moved on). */
    m->readonly = true;
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

static void test_unmap_reuse_after_durable(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(2 * MiB + 16 * BS);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    uint64_t n = rk_cache_meta_blocks(m), c, c2;
    assert_int_equal(n, 16);
    map_some(m, 16);
    assert_int_equal(rk_cache_meta_alloc(m, &c), -ENOSPC);
    assert_int_equal(rk_cache_meta_lookup(m, 1, &c, NULL), 0);
    rk_cache_meta_unmap(m, c);
    assert_int_equal(rk_cache_meta_lookup(m, 1, &c2, NULL), -ENOENT);
    /* Not durable yet: not handed out. */
    assert_int_equal(rk_cache_meta_alloc(m, &c2), -ENOSPC);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    assert_int_equal(rk_cache_meta_alloc(m, &c2), 0);
    assert_int_equal(c2, c);
    rk_cache_meta_release(m, c2);
    assert_int_equal(rk_cache_meta_alloc(m, &c2), 0);
    assert_int_equal(c2, c);
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

struct scan_ctx {
    uint64_t last;
    size_t n;
};

static void scan_fn(void *ctx, uint64_t cblock, uint64_t bblock)
{
    struct scan_ctx *s = ctx;
    assert_true(s->n == 0 || bblock > s->last);
    s->last = bblock;
    s->n++;
    (void)cblock;
}

static void test_dirty_scan(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 40); /* dirty: odd i, bblocks 4, 10, 16, ... */
    struct scan_ctx s = {0};
    assert_int_equal(rk_cache_meta_dirty_scan(m, 0, 0, scan_fn, &s), 20);
    s = (struct scan_ctx){0};
    assert_int_equal(rk_cache_meta_dirty_scan(m, 11, 5, scan_fn, &s), 5);
    assert_int_equal(s.last, 40); /* 16, 22, 28, 34, 40 */
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

static void test_other_array_refused(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = NULL;
    char err[512] = "";
    assert_int_equal(rk_cache_meta_open(d, "cache0", B_UUID, ASIZE, &m, err, sizeof(err)), -EXDEV);
    assert_null(m);
    assert_non_null(strstr(err, "cache0"));
    assert_non_null(strstr(err, "01020304-0506-0708-090a-0b0c0d0e0f10"));
    assert_non_null(strstr(err, "09090909-0909-0909-0909-090909090909"));
    assert_int_equal(rk_cache_meta_open(d, "cache0", A_UUID, ASIZE * 2, &m, err, sizeof(err)),
                     -EXDEV);
    assert_int_equal(open_err(d, err, sizeof(err)), 0);
    rk_dev_close(d);
}

/* A commit of 600 records (3 journal blocks) cut at the 4 KiB granularity of a power cut: any
 * subset of its blocks reached the disk. Loading gives the state before it or after it. */
static void test_crash_torn_commit(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 30);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    struct snap s1, s2, got;
    take(m, &s1);
    uint8_t *img1 = img_read(d);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    uint64_t pos = st.journal_bytes;
    /* 600 records: clean <-> dirty flips of the 30 blocks, then unmaps and maps. */
    for (int k = 0; k < 19; k++)
        for (uint64_t b = 1; b < 90; b += 3) {
            uint64_t c;
            bool dirty;
            assert_int_equal(rk_cache_meta_lookup(m, b, &c, &dirty), 0);
            rk_cache_meta_set_dirty(m, c, !dirty);
        }
    map_some(m, 0);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    take(m, &s2);
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.journal_bytes - pos, 3 * RKC_BLK);
    uint8_t *img2 = img_read(d);
    uint64_t base = j_off(m) + pos;
    char err[512];
    unsigned seen1 = 0, seen2 = 0;
    for (unsigned mask = 0; mask < 8; mask++) {
        uint8_t *mix = malloc(DEV_SIZE);
        memcpy(mix, img1, DEV_SIZE);
        for (unsigned b = 0; b < 3; b++)
            if (mask & (1u << b))
                memcpy(mix + base + b * RKC_BLK, img2 + base + b * RKC_BLK, RKC_BLK);
        assert_int_equal(load_img(mix, DEV_SIZE, &got, err, sizeof(err)), 0);
        if (mask == 7) {
            assert_memory_equal(&got, &s2, sizeof(got));
            seen2++;
        } else {
            assert_memory_equal(&got, &s1, sizeof(got));
            seen1++;
        }
        /* A torn block (half old, half new) of the same commit: also before it. */
        if (mask == 7) {
            memcpy(mix + base + RKC_BLK + 2048, img1 + base + RKC_BLK + 2048, 2048);
            assert_int_equal(load_img(mix, DEV_SIZE, &got, err, sizeof(err)), 0);
            assert_memory_equal(&got, &s1, sizeof(got));
        }
        free(mix);
    }
    assert_int_equal(seen1, 7);
    assert_int_equal(seen2, 1);
    m->readonly = true;
    rk_cache_meta_close(m);
    free(img1);
    free(img2);
    rk_dev_close(d);
}

/* A flipped byte in an acknowledged journal block that a later commit follows: refused, never
 * loaded as the shorter state. The same flip in the last commit is a torn tail (dropped). */
static void test_crash_flipped_committed_block(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    uint64_t first = j_off(m) + st.journal_bytes;
    map_some(m, 3);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    struct snap s0, got;
    memset(&s0, 0, sizeof(s0));
    uint8_t *one = img_read(d);
    uint64_t c;
    assert_int_equal(rk_cache_meta_lookup(m, 1, &c, NULL), 0);
    rk_cache_meta_set_dirty(m, c, true);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    uint8_t *img = img_read(d);
    char err[512];
    img[first + 100] ^= 0x40;
    assert_int_equal(load_img(img, DEV_SIZE, &got, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "cache0"));
    assert_non_null(strstr(err, "corrupted journal"));
    /* Only one commit on disk and it is damaged: the state before it (empty). */
    one[first + 100] ^= 0x40;
    assert_int_equal(load_img(one, DEV_SIZE, &got, err, sizeof(err)), 0);
    assert_memory_equal(&got, &s0, sizeof(got));
    m->readonly = true;
    rk_cache_meta_close(m);
    free(img);
    free(one);
    rk_dev_close(d);
}

/* A block with a valid checksum whose record makes no sense is refused with a message. */
static void test_corrupted_record_refused(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 2);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    uint64_t rec[4] = {((uint64_t)RKC_OP_MAP_DIRTY << 56) | 5, 4, /* bblock 4 is mapped */
                       ((uint64_t)RKC_OP_UNMAP << 56) | 9, 0};
    struct rkc_jb h = {.instance = m->sb.instance,
                       .seq = st.seq,
                       .commit_first = st.seq,
                       .nrec = 1,
                       .flags = RKC_JB_END};
    uint8_t *blk = rk_buf_alloc(RKC_BLK);
    char err[512];
    struct snap got;
    for (int k = 0; k < 2; k++) {
        rkc_jb_encode(&h, rec + 2 * k, blk);
        assert_int_equal(rk_dev_write(d, blk, RKC_BLK, j_off(m) + st.journal_bytes, 0), 0);
        uint8_t *img = img_read(d);
        assert_int_equal(load_img(img, DEV_SIZE, &got, err, sizeof(err)), -EBADMSG);
        assert_non_null(strstr(err, "corrupted journal"));
        assert_non_null(strstr(err, "invalid record"));
        free(img);
    }
    free(blk);
    m->readonly = true;
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* Journal of 64 KiB (16 blocks): commits wrap it through checkpoints; every reopen matches. */
static void test_checkpoint_wrap(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 64 * 1024);
    struct rk_cache_meta *m = open_ok(d);
    struct snap want, got;
    char err[512];
    for (unsigned i = 0; i < 60; i++) {
        uint64_t c;
        if (rk_cache_meta_lookup(m, i / 2, &c, NULL) == 0)
            rk_cache_meta_unmap(m, c);
        else if (rk_cache_meta_alloc(m, &c) == 0)
            rk_cache_meta_map(m, c, i / 2, i & 1);
        if (i == 10)
            assert_int_equal(rk_cache_meta_set_mode(m, RK_CACHE_WRITEAROUND), 0);
        assert_int_equal(rk_cache_meta_commit(m), 0);
        if (i % 7 == 0) {
            take(m, &want);
            uint8_t *img = img_read(d);
            assert_int_equal(load_img(img, DEV_SIZE, &got, err, sizeof(err)), 0);
            assert_memory_equal(&got, &want, sizeof(got));
            free(img);
        }
    }
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_true(st.checkpoints >= 3);
    assert_true(st.journal_bytes <= st.journal_size);
    take(m, &want);
    assert_int_equal(rk_cache_meta_close(m), 0);
    m = open_ok(d);
    take(m, &got);
    assert_memory_equal(&got, &want, sizeof(got));
    assert_int_equal(rk_cache_meta_mode(m), RK_CACHE_WRITEAROUND);
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* The commit that wraps the journal cut at every point of its checkpoint: the checkpoint slot
 * partly written (any prefix or subset of its blocks) with the old journal, or the whole
 * checkpoint with or without the new epoch's first block. Always the old or the new state. */
static void test_crash_during_checkpoint(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 64 * 1024);
    struct rk_cache_meta *m = open_ok(d);
    struct rk_cache_meta_stats st;
    unsigned i = 0;
    for (;; i++) {
        rk_cache_meta_stats(m, &st);
        if (st.journal_bytes == st.journal_size)
            break;
        uint64_t c;
        assert_int_equal(rk_cache_meta_alloc(m, &c), 0);
        rk_cache_meta_map(m, c, i, true);
        assert_int_equal(rk_cache_meta_commit(m), 0);
    }
    struct snap s1, s2, got;
    take(m, &s1);
    uint8_t *img1 = img_read(d);
    int slot = 1 - m->ck_slot;
    uint64_t ck = m->sb.ckpt_off[slot], cks = m->sb.ckpt_size, jo = j_off(m);
    uint64_t c;
    assert_int_equal(rk_cache_meta_lookup(m, 0, &c, NULL), 0);
    rk_cache_meta_unmap(m, c);
    assert_int_equal(rk_cache_meta_commit(m), 0); /* the journal is full: a checkpoint */
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.journal_bytes, RKC_BLK);
    take(m, &s2);
    uint8_t *img2 = img_read(d);
    uint8_t *mix = malloc(DEV_SIZE);
    char err[512];
    unsigned nb = (unsigned)(cks / RKC_BLK);
    for (unsigned cut = 0; cut <= 2 * nb + 1; cut++) {
        memcpy(mix, img1, DEV_SIZE);
        if (cut < nb) { /* a prefix of the checkpoint write */
            memcpy(mix + ck, img2 + ck, (uint64_t)cut * RKC_BLK);
        } else if (cut < 2 * nb) { /* any single block of it missing */
            memcpy(mix + ck, img2 + ck, cks);
            memcpy(mix + ck + (cut - nb) * RKC_BLK, img1 + ck + (cut - nb) * RKC_BLK, RKC_BLK);
        } else { /* all of it, then the epoch block or not */
            memcpy(mix + ck, img2 + ck, cks);
            if (cut == 2 * nb + 1)
                memcpy(mix + jo, img2 + jo, RKC_BLK);
        }
        assert_int_equal(load_img(mix, DEV_SIZE, &got, err, sizeof(err)), 0);
        bool full = cut >= 2 * nb;
        assert_memory_equal(&got, full ? &s2 : &s1, sizeof(got));
    }
    free(mix);
    m->readonly = true;
    rk_cache_meta_close(m);
    free(img1);
    free(img2);
    rk_dev_close(d);
}

/* The newest checkpoint damaged after its epoch began: refused (the journal proves it was
 * newer), never loaded as the older slot. Both slots damaged: refused naming both. */
static void test_torn_checkpoint_refused(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 5);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    uint64_t ck = m->sb.ckpt_off[m->ck_slot], other = m->sb.ckpt_off[1 - m->ck_slot];
    uint64_t cks = m->sb.ckpt_size;
    m->readonly = true;
    rk_cache_meta_close(m);
    uint8_t *img = img_read(d);
    char err[512];
    struct snap got;
    img[ck + RKC_BLK + 3] ^= 1; /* payload */
    assert_int_equal(load_img(img, DEV_SIZE, &got, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "newer checkpoint"));
    /* A valid checksum over an impossible entry: not trusted either. */
    img[ck + RKC_BLK + 3] ^= 1;
    uint64_t e = RKC_E_MAPPED | (ASIZE / BS); /* bblock past the array */
    rk_put_le64(img + ck + RKC_BLK + 8 * 7, e);
    rk_put_le32(img + ck + 44, rk_crc32c(img + ck + RKC_BLK, cks - RKC_BLK));
    rk_put_le32(img + ck + RKC_BLK - 4, rk_crc32c(img + ck, RKC_BLK - 4));
    assert_int_equal(load_img(img, DEV_SIZE, &got, err, sizeof(err)), -EBADMSG);
    img[other + 9] ^= 0x80; /* and the other header */
    assert_int_equal(load_img(img, DEV_SIZE, &got, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "no valid checkpoint"));
    assert_non_null(strstr(err, "slot A"));
    assert_non_null(strstr(err, "slot B"));
    assert_non_null(strstr(err, "cache0"));
    free(img);
    rk_dev_close(d);
}

/* `cache create` over an existing cache, cut after each of its writes (and inside the
 * checkpoint write): the old instance, refused, or empty; never a mix. */
static void test_reinit_cut(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 25);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    struct snap old, empty, got;
    take(m, &old);
    memset(&empty, 0, sizeof(empty));
    uint64_t cks = m->sb.ckpt_size, jo = j_off(m);
    assert_int_equal(m->ck_slot, 1);
    assert_int_equal(rk_cache_meta_close(m), 0); /* the old state in slot A too */
    uint8_t *img1 = img_read(d);
    format(d, 0);
    uint8_t *img2 = img_read(d);
    uint8_t *mix = malloc(DEV_SIZE);
    char err[512];
    unsigned nb = (unsigned)(cks / RKC_BLK), n_old = 0, n_ref = 0, n_empty = 0;
    /* Write order of format: superblock, checkpoint A (blocks 1..nb), journal block 0. */
    for (unsigned cut = 0; cut <= nb + 2; cut++) {
        memcpy(mix, img1, DEV_SIZE);
        if (cut >= 1)
            memcpy(mix, img2, RKC_BLK);
        if (cut >= 2)
            memcpy(mix + RKC_BLK, img2 + RKC_BLK,
                   (uint64_t)(cut - 1 < nb ? cut - 1 : nb) * RKC_BLK);
        if (cut == nb + 2)
            memcpy(mix + jo, img2 + jo, RKC_BLK);
        int r = load_img(mix, DEV_SIZE, &got, err, sizeof(err));
        if (cut == 0) {
            assert_int_equal(r, 0);
            assert_memory_equal(&got, &old, sizeof(got));
            n_old++;
        } else if (cut < nb + 1) {
            assert_int_equal(r, -EBADMSG);
            assert_non_null(strstr(err, "no valid checkpoint"));
            n_ref++;
        } else {
            assert_int_equal(r, 0);
            assert_memory_equal(&got, &empty, sizeof(got));
            n_empty++;
        }
    }
    assert_true(n_old && n_ref && n_empty);
    free(mix);
    free(img1);
    free(img2);
    rk_dev_close(d);
}

struct thr {
    struct rk_cache_meta *m;
    unsigned id;
};

static void *commit_thread(void *arg)
{
    struct thr *t = arg;
    for (unsigned i = 0; i < 50; i++) {
        uint64_t c;
        if (rk_cache_meta_alloc(t->m, &c))
            break;
        rk_cache_meta_map(t->m, c, t->id * 100 + i, i & 1);
        if (rk_cache_meta_commit(t->m))
            return (void *)1;
    }
    return NULL;
}

/* Four threads map and commit at once (group commit); a reopen gives the same index. */
static void test_group_commit_threads(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE + 8 * MiB);
    format(d, 64 * 1024);
    struct rk_cache_meta *m = open_ok(d);
    pthread_t th[4];
    struct thr t[4];
    for (unsigned i = 0; i < 4; i++) {
        t[i] = (struct thr){m, i};
        pthread_create(&th[i], NULL, commit_thread, &t[i]);
    }
    for (unsigned i = 0; i < 4; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        assert_null(rv);
    }
    struct snap want, got;
    take(m, &want);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 200);
    uint8_t *img = img_read(d);
    char err[512];
    assert_int_equal(load_img(img, d->size, &got, err, sizeof(err)), 0);
    assert_memory_equal(&got, &want, sizeof(got));
    free(img);
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* A failing device: commit returns the error, and keeps returning it. */
static void test_commit_device_failure(void **state)
{
    (void)state;
    struct rk_dev *inner = mem_dev(DEV_SIZE), *d;
    assert_int_equal(rk_fault_open(inner, true, &d), 0);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 2);
    rk_fault_fail_all(d, true);
    assert_int_equal(rk_cache_meta_commit(m), -EIO);
    rk_fault_fail_all(d, false);
    assert_int_equal(rk_cache_meta_commit(m), -EIO);
    uint64_t c;
    assert_int_equal(rk_cache_meta_alloc(m, &c), 0);
    rk_cache_meta_map(m, c, 500, true);
    assert_int_equal(rk_cache_meta_commit(m), -EIO);
    assert_int_equal(rk_cache_meta_close(m), -EIO);
    /* What was durable before the failure loads (here: the empty cache). */
    m = open_ok(d);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 0);
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

static void load_golden(uint8_t *buf)
{
    char path[4096];
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (src && *src) {
        snprintf(path, sizeof(path), "%s/tests/golden/cache_sb_v1.bin", src);
    } else {
        snprintf(path, sizeof(path), "%s", __FILE__);
        char *slash = strrchr(path, '/');
        if (slash)
            snprintf(slash, sizeof(path) - (size_t)(slash - path), "/../golden/cache_sb_v1.bin");
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open golden image %s", path);
    assert_int_equal(fread(buf, 1, RKC_BLK, f), RKC_BLK);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
}

/* The committed image decodes to the documented fields at the documented offsets and
 * re-encodes byte-identical (docs/FORMAT.md "Cache superblock"). */
static void test_golden_sb(void **state)
{
    (void)state;
    static uint8_t img[RKC_BLK], re[RKC_BLK];
    struct rkc_sb sb, want;
    char err[256] = "";
    load_golden(img);
    assert_int_equal(rkc_sb_decode(img, &sb, err, sizeof(err)), 0);
    golden_cache_sb_v1(&want);
    assert_memory_equal(img, "RKCACHSB", 8);
    assert_int_equal(rk_get_le32(img + 8), 1);
    assert_int_equal(rk_get_le32(img + 12), 4096);
    assert_int_equal(rk_get_le32(img + 16), 0x11cd5001u);
    assert_int_equal(sb.mode, RK_CACHE_WRITEBACK);
    assert_int_equal(rk_get_le32(img + 20), 2);
    assert_memory_equal(sb.cache_uuid, want.cache_uuid, 16);
    assert_memory_equal(img + 24, want.cache_uuid, 16);
    assert_memory_equal(img + 40, want.array_uuid, 16);
    assert_int_equal(sb.array_size, 1024 * MiB);
    assert_int_equal(rk_get_le64(img + 56), 1024 * MiB);
    assert_int_equal(rk_get_le32(img + 64), 65536);
    assert_int_equal(rk_get_le64(img + 72), 4064);
    assert_int_equal(rk_get_le64(img + 80), 0x1122334455667788ull);
    assert_int_equal(rk_get_le64(img + 88), 4096);
    assert_int_equal(rk_get_le64(img + 96), 40960);
    assert_int_equal(rk_get_le64(img + 104), 36864);
    assert_int_equal(rk_get_le64(img + 112), 77824);
    assert_int_equal(rk_get_le64(img + 120), 1048576);
    assert_int_equal(rk_get_le64(img + 128), 2 * MiB);
    assert_int_equal(rk_get_le64(img + 136), 1764547200);
    for (unsigned i = 144; i < RKC_BLK; i++)
        assert_int_equal(img[i], 0);
    assert_memory_equal(&sb, &want, sizeof(sb));
    rkc_sb_encode(&sb, re);
    assert_memory_equal(img, re, RKC_BLK);
    /* The layout of a 256 MiB device at 64 KiB still gives these fields. */
    struct rkc_sb lay = {.block_size = 65536};
    assert_int_equal(rkc_layout(&lay, 256 * MiB, 0, err, sizeof(err)), 0);
    assert_int_equal(lay.nblocks, 4064);
    assert_int_equal(lay.data_off, 2 * MiB);
    assert_int_equal(lay.journal_off, 77824);
}

/* Every corrupted superblock field is refused with its own message. */
static void test_sb_fields_refused(void **state)
{
    (void)state;
    static uint8_t img[RKC_BLK], bad[RKC_BLK];
    struct rkc_sb sb;
    char err[256];
    load_golden(img);
    static const struct {
        unsigned off;
        uint8_t val;
        int rc;
        const char *msg;
    } cases[] = {
        {0, 'X', -ENODATA, "not a raidkit cache"},
        {8, 2, -EPROTONOSUPPORT, "version"},
        {12, 1, -EINVAL, "header size"},
        {20, 7, -EINVAL, "mode"},
        {64, 0x30, -EINVAL, "block size"},
        {73, 0x7f, -EINVAL, "checkpoint slots"},
        {80 + 7, 0x11, -EINVAL, NULL},
        {120, 1, -EINVAL, "journal"},
        {128, 1, -EINVAL, "data offset"},
        {300, 1, -EINVAL, "reserved"},
        {24 + 3, 0, -EINVAL, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memcpy(bad, img, RKC_BLK);
        bad[cases[i].off] = cases[i].val;
        if (cases[i].off != 0 && cases[i].off != 8 && cases[i].off != 12) {
            memset(bad + 16, 0, 4);
            rk_put_le32(bad + 16, rk_crc32c(bad, RKC_BLK));
        }
        err[0] = 0;
        int r = rkc_sb_decode(bad, &sb, err, sizeof(err));
        if (cases[i].off == 80 + 7 || cases[i].off == 24 + 3) {
            assert_int_equal(r, 0); /* another instance / UUID byte: still a valid block */
            continue;
        }
        if (r != cases[i].rc || (cases[i].msg && !strstr(err, cases[i].msg)))
            fail_msg("offset %u: rc %d, message '%s'", cases[i].off, r, err);
    }
    memcpy(bad, img, RKC_BLK);
    bad[200] ^= 1; /* no crc fix */
    assert_int_equal(rkc_sb_decode(bad, &sb, err, sizeof(err)), -EBADMSG);
    assert_non_null(strstr(err, "checksum"));
}

/* The array superblock's cache binding (bytes 3336..3399): round trip, golden unchanged, bad
 * combinations refused. */
static void test_array_binding_field(void **state)
{
    (void)state;
    struct rk_sb sb, back;
    uint8_t buf[RK_SB_SIZE];
    char err[256];
    golden_sb_v1(&sb);
    assert_int_equal(sb.cache_flags, 0);
    sb.cache_flags = RK_SB_CACHE_BOUND | RK_SB_CACHE_DIRTY;
    memcpy(sb.cache_uuid, B_UUID, 16);
    rk_sb_encode(&sb, buf);
    assert_int_equal(rk_get_le32(buf + 3336), 3);
    assert_memory_equal(buf + 3344, B_UUID, 16);
    for (unsigned i = 3360; i < RK_SB_SIZE; i++)
        assert_int_equal(buf[i], 0);
    assert_int_equal(rk_sb_decode(buf, &back, err, sizeof(err)), 0);
    assert_int_equal(back.cache_flags, 3);
    assert_memory_equal(back.cache_uuid, B_UUID, 16);
    static const uint32_t badflags[] = {4, RK_SB_CACHE_DIRTY, 0};
    for (int i = 0; i < 3; i++) {
        sb.cache_flags = badflags[i];
        rk_sb_encode(&sb, buf);
        assert_int_equal(rk_sb_decode(buf, &back, err, sizeof(err)), -EINVAL);
        assert_non_null(strstr(err, "cache"));
    }
    sb.cache_flags = RK_SB_CACHE_BOUND;
    memset(sb.cache_uuid, 0, 16);
    rk_sb_encode(&sb, buf);
    assert_int_equal(rk_sb_decode(buf, &back, err, sizeof(err)), -EINVAL);
}

/* rk_cache_binding_check: every combination of binding and cache. */
static void test_binding_check(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    const uint8_t *cu = rk_cache_meta_uuid(m);
    static const uint8_t zero[16];
    char err[512], u[RK_CACHE_UUID_STR];
    assert_int_equal(rk_cache_binding_check(0, zero, NULL, false, err, sizeof(err)), 0);
    assert_int_equal(rk_cache_binding_check(RK_CACHE_BIND_BOUND, cu, m, false, err, sizeof(err)),
                     0);
    assert_int_equal(rk_cache_binding_check(3, cu, m, false, err, sizeof(err)), 0);
    assert_int_equal(rk_cache_binding_check(RK_CACHE_BIND_BOUND, cu, NULL, false, err, sizeof(err)),
                     RK_CACHE_BIND_UNBIND);
    assert_int_equal(rk_cache_binding_check(3, cu, NULL, false, err, sizeof(err)), -EUCLEAN);
    assert_non_null(strstr(err, rk_cache_uuid_format(cu, u)));
    assert_int_equal(rk_cache_binding_check(3, cu, NULL, true, err, sizeof(err)),
                     RK_CACHE_BIND_UNBIND);
    assert_int_equal(rk_cache_binding_check(3, B_UUID, m, true, err, sizeof(err)), -ESTALE);
    assert_non_null(strstr(err, "09090909-0909-0909-0909-090909090909"));
    assert_non_null(strstr(err, u));
    assert_int_equal(rk_cache_binding_check(0, zero, m, false, err, sizeof(err)), -ESTALE);
    assert_non_null(strstr(err, "stale"));
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* Read-only open writes nothing; commit refuses. */
static void test_open_ro(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    map_some(m, 4);
    assert_int_equal(rk_cache_meta_commit(m), 0);
    rk_cache_meta_close(m);
    uint8_t *before = img_read(d);
    char err[256];
    assert_int_equal(rk_cache_meta_open_ro(d, "cache0", NULL, 0, &m, err, sizeof(err)), 0);
    struct rk_cache_meta_stats st;
    rk_cache_meta_stats(m, &st);
    assert_int_equal(st.mapped, 4);
    map_some(m, 0);
    uint64_t c;
    assert_int_equal(rk_cache_meta_alloc(m, &c), 0);
    rk_cache_meta_map(m, c, 900, false);
    assert_int_equal(rk_cache_meta_commit(m), -EROFS);
    assert_int_equal(rk_cache_meta_close(m), 0);
    uint8_t *after = img_read(d);
    assert_memory_equal(before, after, DEV_SIZE);
    free(before);
    free(after);
    /* Not a cache at all. */
    struct rk_dev *z = mem_dev(DEV_SIZE);
    assert_int_equal(rk_cache_meta_open_ro(z, "zero", NULL, 0, &m, err, sizeof(err)), -ENODATA);
    assert_non_null(strstr(err, "zero: not a raidkit cache device"));
    rk_dev_close(z);
    rk_dev_close(d);
}

/* Memory of the index per TiB of cache at 64 KiB blocks (docs/FORMAT.md "Cache index memory"):
 * measured on a 16 GiB cache (262144 blocks), scaled. */
static void test_index_memory(void **state)
{
    (void)state;
    struct rk_cache_meta m = {.sb = {.nblocks = 262144}};
    assert_int_equal(rkc_index_init(&m), 0);
    size_t bytes =
        m.sb.nblocks * (sizeof(*m.ent) + sizeof(*m.next)) + (sizeof(*m.bucket) << m.bucket_bits);
    double per_tib = (double)bytes * 64.0; /* 16 GiB -> 1 TiB */
    printf("# index: %zu bytes for %llu blocks = %.1f bytes/block, %.0f MiB per TiB at 64 KiB\n",
           bytes, (unsigned long long)m.sb.nblocks, (double)bytes / (double)m.sb.nblocks,
           per_tib / (double)MiB);
    assert_true(per_tib <= 256.0 * MiB);
    rkc_index_free(&m);
}

struct scan_list {
    uint64_t b[128];
    size_t n;
};

static void scan_collect(void *ctx, uint64_t cblock, uint64_t bblock)
{
    struct scan_list *l = ctx;
    (void)cblock;
    l->b[l->n++] = bblock;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The bounded scan (a heap of max entries) against a sorted reference, random bblocks. */
static void test_dirty_scan_random(void **state)
{
    (void)state;
    struct rk_dev *d = mem_dev(DEV_SIZE);
    format(d, 0);
    struct rk_cache_meta *m = open_ok(d);
    uint64_t ref[100], seed = 77;
    size_t nref = 0;
    for (unsigned i = 0; i < 100; i++) {
        uint64_t c, b = rk_test_xorshift(&seed) % (ASIZE / BS);
        if (!rk_cache_meta_lookup(m, b, &c, NULL) || rk_cache_meta_alloc(m, &c))
            continue;
        bool dirty = i % 3 != 0;
        rk_cache_meta_map(m, c, b, dirty);
        if (dirty)
            ref[nref++] = b;
    }
    qsort(ref, nref, sizeof(ref[0]), u64_cmp);
    for (unsigned t = 0; t < 200; t++) {
        uint64_t from = rk_test_xorshift(&seed) % (ASIZE / BS);
        size_t max = rk_test_xorshift(&seed) % 20;
        struct scan_list l = {.n = 0};
        size_t got = rk_cache_meta_dirty_scan(m, from, max, scan_collect, &l);
        size_t k = 0, want = 0;
        while (k < nref && ref[k] < from)
            k++;
        for (; k < nref && (!max || want < max); k++, want++)
            assert_int_equal(l.b[want], ref[k]);
        assert_int_equal(got, want);
        assert_int_equal(l.n, want);
    }
    rk_cache_meta_close(m);
    rk_dev_close(d);
}

/* Power cuts of a fault member (random subset of unflushed 4 KiB blocks kept) at a random write
 * while maps, unmaps, dirty flips and wraps commit: the cache always loads, as the last
 * acknowledged commit or the one that was being written, never anything else. */
static void test_power_cut_random(void **state)
{
    (void)state;
    unsigned as_acked = 0, as_inflight = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        struct rk_dev *inner = mem_dev(DEV_SIZE), *d;
        assert_int_equal(rk_fault_open(inner, false, &d), 0);
        format(d, 64 * 1024);
        struct rk_cache_meta *m = open_ok(d);
        assert_int_equal(rk_fault_set_keep(d, RK_FAULT_KEEP_RANDOM, seed), 0);
        uint64_t rs = seed * 0x9e3779b9ull + 1;
        assert_int_equal(rk_fault_cut_after(d, rk_test_xorshift(&rs) % 80), 0);
        static struct snap acked, inflight, got;
        take(m, &acked);
        for (unsigned i = 0;; i++) {
            uint64_t c, b = rk_test_xorshift(&rs) % 200;
            bool dirty;
            unsigned k = (unsigned)(rk_test_xorshift(&rs) % 3);
            if (!rk_cache_meta_lookup(m, b, &c, &dirty)) {
                if (k == 0)
                    rk_cache_meta_unmap(m, c);
                else
                    rk_cache_meta_set_dirty(m, c, !dirty);
            } else if (!rk_cache_meta_alloc(m, &c)) {
                rk_cache_meta_map(m, c, b, k != 0);
            }
            if (rk_test_xorshift(&rs) % 4)
                continue; /* several changes per commit */
            take(m, &inflight);
            if (rk_cache_meta_commit(m))
                break;
            acked = inflight;
            assert_true(i < 100000);
        }
        rk_cache_meta_close(m);
        rk_dev_close(d);
        uint8_t *img = img_read(inner);
        char err[512];
        int r = load_img(img, DEV_SIZE, &got, err, sizeof(err));
        if (r)
            fail_msg("seed %llu: %s", (unsigned long long)seed, err);
        if (!memcmp(&got, &acked, sizeof(got)))
            as_acked++;
        else if (!memcmp(&got, &inflight, sizeof(got)))
            as_inflight++;
        else
            fail_msg("seed %llu: loaded a state that was never committed",
                     (unsigned long long)seed);
        free(img);
        rk_dev_close(inner);
    }
    printf("# power cuts: %u loaded the last acknowledged commit, %u the one in flight\n", as_acked,
           as_inflight);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_format_open),
        cmocka_unit_test(test_map_commit_reopen),
        cmocka_unit_test(test_unmap_reuse_after_durable),
        cmocka_unit_test(test_dirty_scan),
        cmocka_unit_test(test_other_array_refused),
        cmocka_unit_test(test_crash_torn_commit),
        cmocka_unit_test(test_crash_flipped_committed_block),
        cmocka_unit_test(test_corrupted_record_refused),
        cmocka_unit_test(test_checkpoint_wrap),
        cmocka_unit_test(test_crash_during_checkpoint),
        cmocka_unit_test(test_torn_checkpoint_refused),
        cmocka_unit_test(test_reinit_cut),
        cmocka_unit_test(test_group_commit_threads),
        cmocka_unit_test(test_commit_device_failure),
        cmocka_unit_test(test_golden_sb),
        cmocka_unit_test(test_sb_fields_refused),
        cmocka_unit_test(test_array_binding_field),
        cmocka_unit_test(test_binding_check),
        cmocka_unit_test(test_open_ro),
        cmocka_unit_test(test_index_memory),
        cmocka_unit_test(test_dirty_scan_random),
        cmocka_unit_test(test_power_cut_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
