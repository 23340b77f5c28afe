/* Cache device metadata (src/cache/meta*.c, docs/FORMAT.md "Cache device"): format/open round
 * trip, map/unmap/commit/replay, the reuse rule of unmapped blocks, crash simulation (uncommitted
 * tail dropped, torn and flipped journal blocks), checkpoints and the journal wrap, a
 * re-initialisation cut halfway, a cache bound to another array and corrupted records refused.
 * The superblock, binding, read-only and randomized cases: test_cache_meta_sb.c. */
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
#include "core/util.h"
#include "rk_test_cache_meta.h"

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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
