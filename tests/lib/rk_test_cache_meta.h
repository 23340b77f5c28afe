/* Helpers shared by the cache metadata unit tests (test_cache_meta, test_cache_meta_sb): an
 * in-memory cache device formatted for one array, map/snapshot helpers, and crash images (a copy
 * of a device opened as if after a power cut). Header-only, as rk_test.h; include after cmocka.h.
 */
#ifndef RK_TEST_CACHE_META_H
#define RK_TEST_CACHE_META_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/meta.h"
#include "cache/meta_int.h"
#include "raidkit/member.h"
#include "rk_test.h"

#define DEV_SIZE (8 * MiB)
#define BS       (64 * 1024u)
#define ASIZE    (64 * MiB)

static const uint8_t A_UUID[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t B_UUID[16] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};

static inline struct rk_dev *mem_dev(uint64_t size)
{
    struct rk_dev *d;
    assert_int_equal(rk_mem_open(size, 512, &d), 0);
    return d;
}

static inline void format(struct rk_dev *d, uint64_t jsize)
{
    struct rk_cache_format_params p = {
        .array_size = ASIZE, .block_size = BS, .mode = RK_CACHE_WRITEBACK, .journal_size = jsize};
    memcpy(p.array_uuid, A_UUID, 16);
    char err[256] = "";
    int r = rk_cache_meta_format(d, "cache0", &p, err, sizeof(err));
    if (r)
        fail_msg("format: %s", err);
}

static inline struct rk_cache_meta *open_ok(struct rk_dev *d)
{
    struct rk_cache_meta *m = NULL;
    char err[512] = "";
    int r = rk_cache_meta_open(d, "cache0", A_UUID, ASIZE, &m, err, sizeof(err));
    if (r)
        fail_msg("open: %s", err);
    return m;
}

static inline int open_err(struct rk_dev *d, char *err, size_t len)
{
    struct rk_cache_meta *m = NULL;
    err[0] = 0;
    int r = rk_cache_meta_open(d, "cache0", A_UUID, ASIZE, &m, err, len);
    if (!r)
        rk_cache_meta_close(m);
    return r;
}

/* Map n blocks: bblock i*3+1 -> a fresh cblock, dirty when i is odd. */
static inline void map_some(struct rk_cache_meta *m, unsigned n)
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

static inline void take(struct rk_cache_meta *m, struct snap *s)
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

static inline uint8_t *img_read(struct rk_dev *d)
{
    uint8_t *img = malloc(d->size);
    assert_non_null(img);
    assert_int_equal(rk_dev_read(d, img, d->size, 0), 0);
    return img;
}

static inline struct rk_dev *dev_from(const uint8_t *img, uint64_t size)
{
    struct rk_dev *d = mem_dev(size);
    assert_int_equal(rk_dev_write(d, img, size, 0, 0), 0);
    return d;
}

/* Open a copy of img: 0 with *s, or the error (message in err). */
static inline int load_img(const uint8_t *img, uint64_t size, struct snap *s, char *err, size_t len)
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
static inline uint64_t j_off(struct rk_cache_meta *m)
{
    return m->sb.journal_off;
}

#endif
