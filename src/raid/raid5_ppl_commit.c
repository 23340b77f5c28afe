/*
 * Group commit of the partial parity log (md's io_unit, without a format change: each entry
 * keeps its own header): the log writes of raid5_ppl.c's entries, several writers' entries in
 * one FUA member write. docs/FORMAT.md "Partial parity log"; docs/ARCHITECTURE.md "Durability".
 */
#include <stdint.h>
#include <time.h>

#include "raid/raid5_int.h"
#include "raid/raid5_ppl_int.h"

struct ppl_ent *r5_ppl_ring_ent(const struct r5_ppl *L, struct ppl_ring *m, uint64_t seq)
{
    for (uint32_t k = 0; k < m->count; k++) {
        struct ppl_ent *e = &m->q[(m->first + k) % L->cap];
        if (e->seq == seq)
            return e;
    }
    return NULL;
}

/* The longest run of READY entries of ring m around queue index i that sit back to back in the
 * ring (a wrap ends a run): queue indexes [*lo, *hi). */
static void ring_run(const struct r5_ppl *L, const struct ppl_ring *m, uint32_t i, uint32_t *lo,
                     uint32_t *hi)
{
    *lo = i;
    *hi = i + 1;
    while (*lo > 0) {
        const struct ppl_ent *a = &m->q[(m->first + *lo - 1) % L->cap];
        const struct ppl_ent *b = &m->q[(m->first + *lo) % L->cap];
        if (a->ws != PPL_READY || a->pos + a->size != b->pos)
            break;
        (*lo)--;
    }
    while (*hi < m->count) {
        const struct ppl_ent *a = &m->q[(m->first + *hi - 1) % L->cap];
        const struct ppl_ent *b = &m->q[(m->first + *hi) % L->cap];
        if (b->ws != PPL_READY || a->pos + a->size != b->pos)
            break;
        (*hi)++;
    }
}

/* A ring whose log writes take at least this long groups: a writer waits for the write in
 * flight and the entries that queued meanwhile go out together. Faster rings (memory-backed
 * members: a 8 KiB write is ~2 us, a wait and wake-up costs more) never wait. */
#define PPL_GROUP_NS 50000u

static uint64_t ppl_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

uint32_t r5_ppl_commit(struct raid_priv *r, struct r5_ppl *L, const uint32_t *slots, int n,
                       uint64_t seq)
{
    uint32_t failed = 0;
    pthread_mutex_lock(&L->lock);
    for (;;) {
        struct rk_io io[RK_MAX_MEMBERS];
        uint32_t run_slot[RK_MAX_MEMBERS];
        int nio = 0, pending = 0;
        struct ppl_ring *wait_on = NULL; /* a ring where this entry still waits */
        for (int i = 0; i < n; i++) {
            struct ppl_ring *m = &L->m[slots[i]];
            struct ppl_ent *e = r5_ppl_ring_ent(L, m, seq);
            if (!e || e->ws == PPL_DURABLE) {
                /* gone: the ring was adopted by a member added since (this slot had failed) */
                failed |= !e || e->result ? 1u << slots[i] : 0;
                continue;
            }
            pending++;
            if (e->ws != PPL_READY || (m->writing && m->lat_ns >= PPL_GROUP_NS)) {
                wait_on = wait_on ? wait_on : m;
                continue;
            }
            uint32_t idx = 0, lo, hi;
            while (&m->q[(m->first + idx) % L->cap] != e)
                idx++;
            ring_run(L, m, idx, &lo, &hi);
            const struct ppl_ent *f = &m->q[(m->first + lo) % L->cap];
            const struct ppl_ent *t = &m->q[(m->first + hi - 1) % L->cap];
            for (uint32_t k = lo; k < hi; k++) {
                m->q[(m->first + k) % L->cap].ws = PPL_WRITING;
                m->q[(m->first + k) % L->cap].run = seq;
            }
            m->writing++;
            rk_io_init(&io[nio], r->members[slots[i]], RK_OP_WRITE, m->stage + f->pos,
                       t->pos + t->size - f->pos, L->off + RK_PPL_BLOCK + f->pos, RK_WRITE_FUA);
            run_slot[nio++] = slots[i];
        }
        if (!pending)
            break;
        if (!nio) {
            /* Only a log write of that ring (or its adoption) changes what blocks this entry
             * there: wait on the ring alone, so a log write ending on one ring does not wake
             * the writers of every ring. */
            wait_on->waiters++;
            pthread_cond_wait(&wait_on->cond, &L->lock);
            wait_on->waiters--;
            continue;
        }
        pthread_mutex_unlock(&L->lock);
        uint64_t t0 = ppl_now_ns();
        struct rk_io_batch b;
        rk_io_batch_init(&b);
        if (rk_io_run(&b, io, nio))
            for (int i = 0; i < nio; i++)
                if (io[i].result)
                    raid_fail(r, run_slot[i], io[i].result);
        rk_io_batch_destroy(&b);
        uint64_t dt = ppl_now_ns() - t0;
        pthread_mutex_lock(&L->lock);
        for (int i = 0; i < nio; i++) {
            struct ppl_ring *m = &L->m[run_slot[i]];
            for (uint32_t k = 0; k < m->count; k++) {
                struct ppl_ent *e = &m->q[(m->first + k) % L->cap];
                if (e->ws == PPL_WRITING && e->run == seq) {
                    e->ws = PPL_DURABLE;
                    e->result = io[i].result;
                }
            }
            m->writing--;
            m->lat_ns = (7 * m->lat_ns + dt) / 8;
            ppl_ring_wake(m);
        }
    }
    pthread_mutex_unlock(&L->lock);
    return failed;
}
