/* Stripe locks (hashed mutexes taken in ascending bucket order) and the bounded pool of
 * preallocated stripe work buffers used by the raid5/raid6 request paths. */
#include <errno.h>
#include <stdlib.h>

#include "raidkit/device.h"
#include "raid/stripe.h"

void stripe_locks_init(struct stripe_locks *sl)
{
    for (int i = 0; i < STRIPE_BUCKETS; i++)
        pthread_mutex_init(&sl->bucket[i], NULL);
}

void stripe_locks_destroy(struct stripe_locks *sl)
{
    for (int i = 0; i < STRIPE_BUCKETS; i++)
        pthread_mutex_destroy(&sl->bucket[i]);
}

/* The buckets of [first, first+count) as an ascending walk: all buckets when the range wraps
 * the table, else from first's bucket up, possibly wrapping once to bucket 0. Locking must go in
 * ascending bucket order, so a wrapped range starts at bucket 0. */
static void stripe_buckets(uint64_t first, uint64_t count, uint32_t *lo1, uint32_t *hi1,
                           uint32_t *lo2, uint32_t *hi2)
{
    if (count >= STRIPE_BUCKETS) {
        *lo1 = 0;
        *hi1 = STRIPE_BUCKETS;
        *lo2 = *hi2 = 0;
        return;
    }
    uint32_t b = (uint32_t)(first % STRIPE_BUCKETS), e = b + (uint32_t)count;
    if (e <= STRIPE_BUCKETS) {
        *lo1 = b;
        *hi1 = e;
        *lo2 = *hi2 = 0;
    } else {
        *lo1 = 0;
        *hi1 = e - STRIPE_BUCKETS;
        *lo2 = b;
        *hi2 = STRIPE_BUCKETS;
    }
}

void stripe_lock_range(struct stripe_locks *sl, uint64_t first, uint64_t count)
{
    uint32_t lo1, hi1, lo2, hi2;
    stripe_buckets(first, count, &lo1, &hi1, &lo2, &hi2);
    for (uint32_t i = lo1; i < hi1; i++)
        pthread_mutex_lock(&sl->bucket[i]);
    for (uint32_t i = lo2; i < hi2; i++)
        pthread_mutex_lock(&sl->bucket[i]);
}

void stripe_unlock_range(struct stripe_locks *sl, uint64_t first, uint64_t count)
{
    uint32_t lo1, hi1, lo2, hi2;
    stripe_buckets(first, count, &lo1, &hi1, &lo2, &hi2);
    for (uint32_t i = lo1; i < hi1; i++)
        pthread_mutex_unlock(&sl->bucket[i]);
    for (uint32_t i = lo2; i < hi2; i++)
        pthread_mutex_unlock(&sl->bucket[i]);
}

int stripe_pool_init(struct stripe_pool *p, int nbuf, size_t size)
{
    if (nbuf < 1 || nbuf > STRIPE_POOL_MAX)
        return -EINVAL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
    p->nbuf = 0;
    p->size = size;
    for (int i = 0; i < nbuf; i++) {
        char *b = rk_buf_alloc(size);
        if (!b) {
            p->nfree = p->nbuf;
            stripe_pool_destroy(p);
            return -ENOMEM;
        }
        p->all[p->nbuf] = b;
        p->free[p->nbuf++] = b;
    }
    p->nfree = p->nbuf;
    return 0;
}

void stripe_pool_destroy(struct stripe_pool *p)
{
    for (int i = 0; i < p->nbuf; i++)
        free(p->all[i]);
    p->nbuf = p->nfree = 0;
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
}

char *stripe_pool_get(struct stripe_pool *p)
{
    pthread_mutex_lock(&p->lock);
    while (p->nfree == 0)
        pthread_cond_wait(&p->cond, &p->lock);
    char *b = p->free[--p->nfree];
    pthread_mutex_unlock(&p->lock);
    return b;
}

void stripe_pool_put(struct stripe_pool *p, char *buf)
{
    pthread_mutex_lock(&p->lock);
    p->free[p->nfree++] = buf;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}
