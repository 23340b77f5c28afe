/* Digests in partial parity log entries (RK_PPL_HASHED, docs/FORMAT.md "Partial parity log",
 * "Replay"), pinned by a recorded log (tests/golden/ppl_entry_hashed.bin): a head holding the
 * log key and one entry of stripe 0 that modified chunks 0 and 1 over [0, 4K) with the digests
 * of their new data. A dirty start without chunk 0 (slot 0) is then proven when the member
 * parity rebuilds chunk 0's new data, and refused (as without digests) when it does not (parity
 * older than the data), when a digest is corrupted, or when the head carries no key. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/util.h"
#include "raid/parity.h"
#include "raid/raid5_ppl.h"
#include "raidkit/device.h"
#include "raidkit/member.h"
#include "raidkit/raid.h"
#include "rk_test.h"

#define CHUNK    (16u * 1024u)
#define DOFF     (1024u * 1024u)
#define DSIZE    (1024u * 1024u)
#define LOFF     (512u * 1024u)
#define LSIZE    (512u * 1024u)
#define LOG_ID   78u
#define CELL     RK_PPL_CELL
#define IMG_SIZE (3u * RK_PPL_BLOCK) /* head, entry header, 4K payload */

static uint8_t d0_old[CELL], d1_old[CELL], d0_new[CELL], d1_new[CELL];

static void golden_data(void)
{
    rk_test_fill64(d0_old, CELL, 11);
    rk_test_fill64(d1_old, CELL, 12);
    rk_test_fill64(d0_new, CELL, 13);
    rk_test_fill64(d1_new, CELL, 14);
}

/* The recorded log: head (retired 1, 16 key bytes i * 7 + 1); entry seq 2, stripe 0, window
 * [0, 4K), chunks 0 and 1 modified over it (so the partial parity is all zero), digests of
 * d0_new and d1_new. With key false the head carries no key (an older writer's head). */
static void golden_log(uint8_t *img, bool key)
{
    static uint8_t pp[RK_PPL_BLOCK], dig[2 * RK_PPL_DIG_BYTES];
    golden_data();
    memset(img, 0, IMG_SIZE);
    struct rk_ppl_head h = {.id = LOG_ID, .retired = 1, .haskey = key};
    for (uint32_t i = 0; i < RK_PPL_KEY_BYTES; i++)
        h.key[i] = (uint8_t)(i * 7 + 1);
    rk_ppl_head_encode(&h, img);
    rk_ppl_hash(h.key, d0_new, dig);
    rk_ppl_hash(h.key, d1_new, dig + RK_PPL_DIG_BYTES);
    struct rk_ppl_entry e = {.id = LOG_ID, .seq = 2, .row = 0, .lo = 0, .len = CELL};
    e.flags = RK_PPL_HAS_P | RK_PPL_HASHED;
    e.nranges = 2;
    e.r[0] = (struct rk_ppl_range){0, 0, CELL};
    e.r[1] = (struct rk_ppl_range){1, 0, CELL};
    e.dig = dig;
    memset(pp, 0, sizeof(pp));
    rk_ppl_entry_encode(&e, img + RK_PPL_BLOCK, pp);
    memcpy(img + 2 * RK_PPL_BLOCK, pp, sizeof(pp));
}

static void golden_path(char *path, size_t len)
{
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (src && *src) {
        snprintf(path, len, "%s/tests/golden/ppl_entry_hashed.bin", src);
        return;
    }
    snprintf(path, len, "%s", __FILE__);
    char *slash = strrchr(path, '/');
    if (slash)
        snprintf(slash, len - (size_t)(slash - path), "/../golden/ppl_entry_hashed.bin");
}

/* The committed image into img; RK_PPL_GOLDEN_WRITE=1 writes it from the encoder instead. */
static void golden_load(uint8_t *img)
{
    static uint8_t file[IMG_SIZE + 1];
    char path[4096];
    golden_log(img, true);
    golden_path(path, sizeof(path));
    const char *w = getenv("RK_PPL_GOLDEN_WRITE");
    bool write = w && *w == '1';
    FILE *fp = fopen(path, write ? "wb" : "rb");
    if (!fp)
        fail_msg("cannot open golden image %s", path);
    if (write) {
        assert_int_equal(fwrite(img, 1, IMG_SIZE, fp), IMG_SIZE);
        fclose(fp);
        return;
    }
    assert_int_equal(fread(file, 1, sizeof(file), fp), IMG_SIZE);
    fclose(fp);
    assert_memory_equal(file, img, IMG_SIZE); /* the encoding is pinned */
    memcpy(img, file, IMG_SIZE);
}

static const struct rk_ppl_limits lim = {
    .id = LOG_ID, .chunk = CHUNK, .nd = 2, .np = 1, .rows = DSIZE / CHUNK, .room = LSIZE};

/* Byte for byte; decodes to the recorded head key, entry and digests. */
static void test_hash_golden_decode(void **state)
{
    (void)state;
    static uint8_t img[IMG_SIZE];
    golden_load(img);
    struct rk_ppl_head h;
    struct rk_ppl_entry e;
    char err[256];
    uint8_t want[RK_PPL_DIG_BYTES];
    assert_int_equal(rk_ppl_head_decode(img, LOG_ID, &h, err, sizeof(err)), 0);
    assert_true(h.haskey);
    assert_int_equal(h.key[3], 22);
    assert_int_equal(rk_ppl_entry_decode(img + RK_PPL_BLOCK, &lim, &e, err, sizeof(err)), 0);
    assert_int_equal(rk_ppl_payload_check(&e, img + 2 * RK_PPL_BLOCK, err, sizeof(err)), 0);
    assert_int_equal(e.flags, RK_PPL_HAS_P | RK_PPL_HASHED);
    assert_int_equal(rk_ppl_digest_count(&e), 2);
    assert_int_equal(rk_ppl_entry_bytes(&e), 2 * RK_PPL_BLOCK);
    assert_ptr_equal(e.dig, img + RK_PPL_BLOCK + RK_PPL_DIG_OFF);
    assert_int_equal(rk_ppl_digest_index(&e, 1, 0), 1);
    assert_int_equal(rk_ppl_digest_index(&e, 1, CELL), -1);
    rk_ppl_hash(h.key, d1_new, want);
    assert_memory_equal(e.dig + RK_PPL_DIG_BYTES, want, sizeof(want));
    /* The keyed hash is not affine: digests of three cells do not XOR to that of their XOR. */
    static uint8_t x[CELL];
    uint8_t a[RK_PPL_DIG_BYTES], b[RK_PPL_DIG_BYTES], c[RK_PPL_DIG_BYTES], d[RK_PPL_DIG_BYTES];
    for (uint32_t i = 0; i < CELL; i++)
        x[i] = d0_old[i] ^ d0_new[i] ^ d1_new[i];
    rk_ppl_hash(h.key, d0_old, a);
    rk_ppl_hash(h.key, d0_new, b);
    rk_ppl_hash(h.key, d1_new, c);
    rk_ppl_hash(h.key, x, d);
    for (uint32_t i = 0; i < RK_PPL_DIG_BYTES; i++)
        a[i] ^= b[i] ^ c[i];
    assert_memory_not_equal(a, d, sizeof(d));
}

/* raid5 over 3 (stripe 0: D0 slot 0, D1 slot 1, P slot 2), without the slots in absent. */
static int open_arr(struct rk_dev **mem, uint32_t absent, int mode, struct rk_dev **raid)
{
    return rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, absent, LOG_ID, mode, raid);
}

/* Stripe 0 column [0, 4K) after a cut: D0 new on slot 0 (missing at the restart), D1 new or old
 * on slot 1, P new or old on slot 2, log img on slot 2. Returns the start's result and, when it
 * started, the first 4K of the array in got. */
static int cut_and_start(const uint8_t *img, bool d1new, bool pnew, uint8_t *got)
{
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    rk_dev_close(raid);
    uint8_t *zero = rk_buf_alloc(LSIZE), *b = rk_buf_alloc(CELL);
    memset(zero, 0, LSIZE);
    for (uint32_t s = 0; s < 3; s++)
        assert_int_equal(rk_dev_write(mem[s], zero, LSIZE, LOFF, 0), 0);
    assert_int_equal(rk_dev_write(mem[2], img, IMG_SIZE, LOFF, 0), 0);
    memcpy(b, d0_new, CELL);
    assert_int_equal(rk_dev_write(mem[0], b, CELL, DOFF, 0), 0);
    memcpy(b, d1new ? d1_new : d1_old, CELL);
    assert_int_equal(rk_dev_write(mem[1], b, CELL, DOFF, 0), 0);
    for (uint32_t i = 0; i < CELL; i++)
        b[i] = pnew ? d0_new[i] ^ d1_new[i] : d0_old[i] ^ d1_old[i];
    assert_int_equal(rk_dev_write(mem[2], b, CELL, DOFF, 0), 0);
    int ret = open_arr(mem, 1u << 0, RK_LOG_REPLAY, &raid);
    if (!ret)
        assert_int_equal(rk_dev_read(raid, got, CELL, 0), 0);
    rk_dev_close(raid);
    rk_test_close_members(mem, 3);
    free(zero);
    free(b);
    return ret;
}

/* Everything new on the members: chunk 0 rebuilt from P matches its digest, so the dirty and
 * degraded start is safe and reads chunk 0's new data. Without digests it would be refused. */
static void test_hash_replay_all_new(void **state)
{
    (void)state;
    static uint8_t img[IMG_SIZE], got[CELL];
    golden_load(img);
    assert_int_equal(cut_and_start(img, true, true, got), 0);
    assert_memory_equal(got, d0_new, CELL);
}

/* Parity older than the data (D1 new, P old, or D1 old and P old: chunk 0 rebuilt is garbage or
 * its unlogged old data): nothing proves it, the start is refused. */
static void test_hash_replay_unprovable(void **state)
{
    (void)state;
    static uint8_t img[IMG_SIZE], got[CELL];
    golden_load(img);
    assert_int_equal(cut_and_start(img, true, false, got), -EUCLEAN);
    assert_int_equal(cut_and_start(img, false, false, got), -EUCLEAN);
    assert_int_equal(cut_and_start(img, false, true, got), -EUCLEAN);
}

/* A corrupted digest field (block checksum recomputed, so the entry decodes) proves nothing:
 * refused; a head without a key (an older writer's) makes the digests unusable: refused too. */
static void test_hash_corrupt_digest(void **state)
{
    (void)state;
    static uint8_t img[IMG_SIZE], got[CELL];
    golden_load(img);
    img[RK_PPL_BLOCK + RK_PPL_DIG_OFF + 5] ^= 0x40;
    rk_put_le32(img + RK_PPL_BLOCK + RK_PPL_BLOCK - 4,
                rk_crc32c(img + RK_PPL_BLOCK, RK_PPL_BLOCK - 4));
    assert_int_equal(cut_and_start(img, true, true, got), -EUCLEAN);
    golden_log(img, false);
    assert_int_equal(cut_and_start(img, true, true, got), -EUCLEAN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hash_golden_decode),
        cmocka_unit_test(test_hash_replay_all_new),
        cmocka_unit_test(test_hash_replay_unprovable),
        cmocka_unit_test(test_hash_corrupt_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
