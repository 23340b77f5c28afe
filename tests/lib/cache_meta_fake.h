/* Throwaway in-memory fake of src/cache/meta.h for the data-path unit tests, used until the real
 * metadata (src/cache/meta*.c) is in the tree. One global store stands for the cache device's
 * committed state: it survives close/open (detach/attach); fake_meta_crash() rolls it back to
 * the last commit. Include it in exactly one test file. */
#ifndef RK_TEST_CACHE_META_FAKE_H
#define RK_TEST_CACHE_META_FAKE_H

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct rk_cache_meta;
#include "cache/meta.h"

#define FAKE_MAXB 4096 /* backing blocks */
#define FAKE_MAXC 1024 /* cache blocks */

struct fake_state {
    int64_t b2c[FAKE_MAXB];
    uint64_t c2b[FAKE_MAXC];
    uint8_t mapped[FAKE_MAXC], dirty[FAKE_MAXC], taken[FAKE_MAXC], pend[FAKE_MAXC];
    int mode;
};

struct rk_cache_meta {
    pthread_mutex_t lock;
    struct fake_state s;
    uint64_t commits;
};

static struct fake_state fake_durable;
static uint32_t fake_bs = 4096;
static uint64_t fake_blocks = 16;
static int fake_commit_fail; /* commits fail while set */

static void fake_meta_init(uint32_t bs, uint64_t blocks, int mode)
{
    fake_bs = bs;
    fake_blocks = blocks;
    memset(&fake_durable, 0, sizeof(fake_durable));
    for (int i = 0; i < FAKE_MAXB; i++)
        fake_durable.b2c[i] = -1;
    fake_durable.mode = mode;
}

const char *rk_cache_mode_name(enum rk_cache_mode m)
{
    static const char *const n[] = {"none", "writethrough", "writeback", "writearound"};
    return (unsigned)m < 4 ? n[m] : "?";
}

int rk_cache_mode_parse(const char *s, enum rk_cache_mode *out)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, rk_cache_mode_name((enum rk_cache_mode)i))) {
            *out = (enum rk_cache_mode)i;
            return 0;
        }
    return -EINVAL;
}

int rk_cache_meta_format(struct rk_dev *dev, const char *name,
                         const struct rk_cache_format_params *p, char *err, size_t errlen)
{
    fake_meta_init(p->block_size, fake_blocks, p->mode);
    return 0;
}

int rk_cache_meta_open(struct rk_dev *dev, const char *name, const uint8_t array_uuid[16],
                       uint64_t array_size, struct rk_cache_meta **out, char *err, size_t errlen)
{
    struct rk_cache_meta *m = calloc(1, sizeof(*m));
    pthread_mutex_init(&m->lock, NULL);
    m->s = fake_durable;
    memset(m->s.taken, 0, sizeof(m->s.taken));
    for (uint64_t i = 0; i < FAKE_MAXC; i++)
        if (m->s.pend[i])
            m->s.pend[i] = 0;
    *out = m;
    return 0;
}

int rk_cache_meta_close(struct rk_cache_meta *m)
{
    if (!m)
        return 0;
    if (!fake_commit_fail)
        fake_durable = m->s;
    free(m);
    return 0;
}

uint32_t rk_cache_meta_block_size(const struct rk_cache_meta *m)
{
    return fake_bs;
}
uint64_t rk_cache_meta_blocks(const struct rk_cache_meta *m)
{
    return fake_blocks;
}
uint64_t rk_cache_meta_data_offset(const struct rk_cache_meta *m)
{
    return 65536;
}
enum rk_cache_mode rk_cache_meta_mode(const struct rk_cache_meta *m)
{
    return (enum rk_cache_mode)m->s.mode;
}
int rk_cache_meta_set_mode(struct rk_cache_meta *m, enum rk_cache_mode mode)
{
    m->s.mode = mode;
    return rk_cache_meta_commit(m);
}

int rk_cache_meta_lookup(struct rk_cache_meta *m, uint64_t bblock, uint64_t *cblock, bool *dirty)
{
    pthread_mutex_lock(&m->lock);
    int64_t c = bblock < FAKE_MAXB ? m->s.b2c[bblock] : -1;
    if (c >= 0) {
        *cblock = (uint64_t)c;
        if (dirty)
            *dirty = m->s.dirty[c];
    }
    pthread_mutex_unlock(&m->lock);
    return c >= 0 ? 0 : -ENOENT;
}

int rk_cache_meta_alloc(struct rk_cache_meta *m, uint64_t *cblock)
{
    pthread_mutex_lock(&m->lock);
    int r = -ENOSPC;
    for (uint64_t i = 0; i < fake_blocks; i++)
        if (!m->s.mapped[i] && !m->s.taken[i] && !m->s.pend[i]) {
            m->s.taken[i] = 1;
            *cblock = i;
            r = 0;
            break;
        }
    pthread_mutex_unlock(&m->lock);
    return r;
}

void rk_cache_meta_release(struct rk_cache_meta *m, uint64_t cblock)
{
    pthread_mutex_lock(&m->lock);
    m->s.taken[cblock] = 0;
    pthread_mutex_unlock(&m->lock);
}

void rk_cache_meta_map(struct rk_cache_meta *m, uint64_t cblock, uint64_t bblock, bool dirty)
{
    pthread_mutex_lock(&m->lock);
    if (m->s.b2c[bblock] >= 0 || m->s.mapped[cblock])
        abort(); /* contract: replaces nothing */
    m->s.taken[cblock] = 0;
    m->s.mapped[cblock] = 1;
    m->s.dirty[cblock] = dirty;
    m->s.c2b[cblock] = bblock;
    m->s.b2c[bblock] = (int64_t)cblock;
    pthread_mutex_unlock(&m->lock);
}

void rk_cache_meta_set_dirty(struct rk_cache_meta *m, uint64_t cblock, bool dirty)
{
    pthread_mutex_lock(&m->lock);
    m->s.dirty[cblock] = dirty;
    pthread_mutex_unlock(&m->lock);
}

void rk_cache_meta_unmap(struct rk_cache_meta *m, uint64_t cblock)
{
    pthread_mutex_lock(&m->lock);
    if (m->s.mapped[cblock]) {
        m->s.b2c[m->s.c2b[cblock]] = -1;
        m->s.mapped[cblock] = m->s.dirty[cblock] = 0;
        m->s.pend[cblock] = 1;
    }
    pthread_mutex_unlock(&m->lock);
}

int rk_cache_meta_commit(struct rk_cache_meta *m)
{
    if (fake_commit_fail)
        return -EIO;
    pthread_mutex_lock(&m->lock);
    memset(m->s.pend, 0, sizeof(m->s.pend));
    fake_durable = m->s;
    m->commits++;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

size_t rk_cache_meta_dirty_scan(struct rk_cache_meta *m, uint64_t from_bblock, size_t max,
                                void (*fn)(void *ctx, uint64_t cblock, uint64_t bblock), void *ctx)
{
    size_t n = 0;
    pthread_mutex_lock(&m->lock);
    struct fake_state *s = &m->s;
    uint64_t list[FAKE_MAXC][2];
    for (uint64_t b = from_bblock; b < FAKE_MAXB && (!max || n < max); b++)
        if (s->b2c[b] >= 0 && s->dirty[s->b2c[b]]) {
            list[n][0] = (uint64_t)s->b2c[b];
            list[n][1] = b;
            n++;
        }
    pthread_mutex_unlock(&m->lock);
    for (size_t i = 0; i < n; i++)
        fn(ctx, list[i][0], list[i][1]);
    return n;
}

void rk_cache_meta_stats(struct rk_cache_meta *m, struct rk_cache_meta_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&m->lock);
    for (uint64_t i = 0; i < fake_blocks; i++) {
        out->mapped += m->s.mapped[i];
        out->dirty += m->s.dirty[i];
        out->free += !m->s.mapped[i];
    }
    out->commits = m->commits;
    pthread_mutex_unlock(&m->lock);
}

#endif
