/* The raid5 partial parity log with a whole-stripe entry, pinned by a recorded log
 * (tests/golden/ppl_full_log.bin, docs/FORMAT.md "Partial parity log"): a head, a partial entry
 * of stripe 0 and a later header-only RK_PPL_FULL entry of stripes [0, 2). The encoding must be
 * byte-identical to the committed image, the image must decode to the same entries, and a
 * dirty start over it must replay it: refused with a data chunk of a covered stripe missing,
 * parity recomputed from the data with every member there. */
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
#define LOG_ID   77u
#define IMG_SIZE (4u * RK_PPL_BLOCK) /* head, partial entry + 4K payload, whole-stripe entry */

/* The recorded log: head (retired 1); entry seq 2, stripe 0, chunk 0 modified over [4K, 8K),
 * PP bytes (i * 3) & 0xff; entry seq 3, RK_PPL_FULL over stripes [0, 2), no payload. */
static void golden_log(uint8_t *img)
{
    static uint8_t pp[RK_PPL_BLOCK];
    memset(img, 0, IMG_SIZE);
    struct rk_ppl_head h = {.id = LOG_ID, .retired = 1};
    rk_ppl_head_encode(&h, img);
    struct rk_ppl_entry e = {.id = LOG_ID, .seq = 2, .row = 0, .lo = 4096, .len = 4096};
    e.flags = RK_PPL_HAS_P;
    e.nranges = 1;
    e.r[0] = (struct rk_ppl_range){0, 4096, 8192};
    for (uint32_t i = 0; i < sizeof(pp); i++)
        pp[i] = (uint8_t)(i * 3);
    rk_ppl_entry_encode(&e, img + RK_PPL_BLOCK, pp);
    memcpy(img + 2 * RK_PPL_BLOCK, pp, sizeof(pp));
    struct rk_ppl_entry f = {.id = LOG_ID, .seq = 3, .row = 0, .lo = 0, .len = CHUNK};
    f.flags = RK_PPL_FULL;
    f.nrows = 2;
    rk_ppl_entry_encode(&f, img + 3 * RK_PPL_BLOCK, NULL);
}

static void golden_path(char *path, size_t len)
{
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    if (src && *src) {
        snprintf(path, len, "%s/tests/golden/ppl_full_log.bin", src);
        return;
    }
    snprintf(path, len, "%s", __FILE__);
    char *slash = strrchr(path, '/');
    if (slash)
        snprintf(slash, len - (size_t)(slash - path), "/../golden/ppl_full_log.bin");
}

/* The committed image into img (IMG_SIZE bytes); RK_PPL_GOLDEN_WRITE=1 writes it from the
 * encoder instead (only when adding it). */
static void golden_load(uint8_t *img)
{
    static uint8_t file[IMG_SIZE + 1];
    char path[4096];
    golden_log(img);
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

/* Byte-for-byte, and the committed image decodes to the recorded entries. */
static void test_golden_full_decode(void **state)
{
    (void)state;
    static uint8_t img[IMG_SIZE];
    golden_load(img);
    struct rk_ppl_limits lim = {
        .id = LOG_ID, .chunk = CHUNK, .nd = 2, .np = 1, .rows = DSIZE / CHUNK, .room = LSIZE};
    struct rk_ppl_head h;
    struct rk_ppl_entry e;
    char err[256];
    assert_int_equal(rk_ppl_head_decode(img, LOG_ID, &h, err, sizeof(err)), 0);
    assert_int_equal(h.retired, 1);
    assert_int_equal(rk_ppl_entry_decode(img + RK_PPL_BLOCK, &lim, &e, err, sizeof(err)), 0);
    assert_int_equal(rk_ppl_payload_check(&e, img + 2 * RK_PPL_BLOCK, err, sizeof(err)), 0);
    assert_int_equal(e.seq, 2);
    assert_int_equal(e.flags, RK_PPL_HAS_P);
    assert_int_equal(rk_ppl_entry_bytes(&e), 2 * RK_PPL_BLOCK);
    assert_int_equal(rk_ppl_entry_decode(img + 3 * RK_PPL_BLOCK, &lim, &e, err, sizeof(err)), 0);
    assert_int_equal(rk_ppl_payload_check(&e, NULL, err, sizeof(err)), 0);
    assert_int_equal(e.seq, 3);
    assert_int_equal(e.flags, RK_PPL_FULL);
    assert_int_equal(e.row, 0);
    assert_int_equal(e.nrows, 2);
    assert_int_equal(e.len, CHUNK);
    assert_int_equal(e.nranges, 0);
    assert_int_equal(rk_ppl_entry_bytes(&e), RK_PPL_BLOCK);
    /* A whole-stripe entry covering rows past the array is refused, never trusted. */
    lim.rows = 1;
    assert_int_equal(rk_ppl_entry_decode(img + 3 * RK_PPL_BLOCK, &lim, &e, err, sizeof(err)),
                     RK_PPL_EFIELD);
}

/* raid5 over 3 (stripe 0: D0 slot 0, D1 slot 1, P slot 2; stripe 1: P on slot 1), without the
 * slots in absent, log started with mode. */
static int open_arr(struct rk_dev **mem, uint32_t absent, int mode, struct rk_dev **raid)
{
    return rk_test_ppl_open(RK_LEVEL_RAID5, 3, mem, absent, LOG_ID, mode, raid);
}

/* Stripes 0 and 1 written whole and flushed; then every log emptied but the recorded one on
 * slot 2, and the parity of both stripes garbled (as if the whole-stripe write of the entry
 * reached the data but not the parity). Replay: refused without D1 (stripe 0 unprovable), then
 * with every member the parity is recomputed: a start without D0 reads both stripes right. */
static void test_golden_full_replay(void **state)
{
    (void)state;
    static uint8_t img[IMG_SIZE];
    golden_load(img);
    struct rk_dev *mem[RK_MAX_MEMBERS], *raid;
    rk_test_mem_members(mem, 3, DOFF + DSIZE, 4096);
    assert_int_equal(open_arr(mem, 0, 0, &raid), 0);
    uint8_t *shadow = rk_buf_alloc(4 * CHUNK), *got = rk_buf_alloc(4 * CHUNK);
    uint8_t *zero = rk_buf_alloc(LSIZE);
    memset(zero, 0, LSIZE);
    rk_test_fill64(shadow, 4 * CHUNK, 9);
    assert_int_equal(rk_dev_write(raid, shadow, 4 * CHUNK, 0, RK_WRITE_FUA), 0);
    assert_int_equal(rk_dev_flush(raid), 0);
    rk_dev_close(raid);
    for (uint32_t s = 0; s < 3; s++)
        assert_int_equal(rk_dev_write(mem[s], zero, LSIZE, LOFF, 0), 0);
    assert_int_equal(rk_dev_write(mem[2], img, IMG_SIZE, LOFF, 0), 0);
    memset(got, 0xa5, CHUNK);
    assert_int_equal(rk_dev_write(mem[2], got, CHUNK, DOFF, 0), 0);         /* P of stripe 0 */
    assert_int_equal(rk_dev_write(mem[1], got, CHUNK, DOFF + CHUNK, 0), 0); /* P of stripe 1 */

    assert_int_equal(open_arr(mem, 1u << 1, RK_LOG_REPLAY, &raid), -EUCLEAN);
    rk_dev_close(raid);
    assert_int_equal(open_arr(mem, 0, RK_LOG_REPLAY, &raid), 0);
    rk_dev_close(raid);
    assert_int_equal(open_arr(mem, 1u << 0, 0, &raid), 0);
    assert_int_equal(rk_dev_read(raid, got, 4 * CHUNK, 0), 0); /* D0 of both from parity */
    assert_memory_equal(got, shadow, 4 * CHUNK);
    rk_dev_close(raid);
    free(shadow);
    free(got);
    free(zero);
    rk_test_close_members(mem, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_full_decode),
        cmocka_unit_test(test_golden_full_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
