/* The HDD half of the model's simulated prediction (run_model_sim, model_sim.c): the same closed
 * loop as the SSD one, through the emul member's command queue (seek, rotation, transfer, NCQ,
 * write-cache acknowledgements), event by event on a fake clock; with the array's layout for
 * sequential reads, its stripe row locks for sequential parity writes, and its partial parity
 * log (FUA writes through each member's ring, one at a time; reclaim flushes in parallel) where
 * it has one (docs/BENCHMARKS.md "Validation against the emulation"). */
#include <stdlib.h>
#include <string.h>

#include "bench/model_sim_int.h"

/* Does the next write start with a log reclaim (HDD, an array with a log)? */
static bool sim_plan_reclaim(struct sim *s)
{
    return s->flpr > 0 && sim_count(s, s->flpr) > 0;
}

/* ---- HDD: the same closed loop through the emul member's command queue, event by event ---- */

void sim_hdd_done(void *arg, void *ctx)
{
    struct sim *s = arg;
    if (s->bm && ctx == (void *)s->bm) {
        sim_bm_done(s); /* a member's part of the bitmap's area write */
        return;
    }
    if (s->ring && ctx >= (void *)s->ring && ctx < (void *)(s->ring + s->n)) {
        struct sim_ring *g = ctx; /* a log write: its request's entry is durable */
        sim_hdd_done(s, g->cur);
        g->cur = NULL;
        g->busy = false;
        g->kick = g->npend > 0; /* not from here: this runs inside the member's queue */
        return;
    }
    struct sim_slot *sl = ctx;
    if (--sl->nops <= 0) {
        sl->nops = 0;
        sl->ready = true;
        sl->t = s->now;
    }
}

/* Offset of the next operation of len bytes in direction dir on member mem: sequential
 * (continuing the member's last one of that direction, as fio keeps one position per direction
 * and a read-modify-write rewrites what it read; wrapping at the span) or uniformly random,
 * aligned to len. */
static uint64_t sim_hdd_off(struct sim *s, int mem, int dir, uint64_t len)
{
    uint64_t blocks = len ? s->span / len : 0;
    if (blocks < 1)
        return s->dbase;
    if (s->in->seq) {
        /* a mirror's copies share one stream (each copy sees the others' parts as gaps) */
        int cur = s->in->level == RK_LEVEL_RAID1 && dir == EMUL_DIR_READ ? 0 : mem;
        uint64_t off = s->next[dir][cur];
        if (off + len > blocks * len)
            off = 0;
        s->next[dir][cur] = off + len;
        return s->dbase + off;
    }
    return s->dbase + (sim_rand(s) % blocks) * len;
}

/* Offset of the next log write of len bytes on member mem: the next place in the member's
 * partial parity log region, written in turn as the ring is, wrapping at its end. */
static uint64_t sim_meta_off(struct sim *s, int mem, uint64_t len)
{
    if (s->moff[mem] + len > s->msize)
        s->moff[mem] = 0;
    uint64_t off = s->mbase + s->moff[mem];
    s->moff[mem] += len;
    return off;
}

/* Write the oldest FUA write waiting for member mem's log ring at s->now, alone. The trial
 * counted the member's FUA writes as the array issued them, after its group commit had merged
 * the entries that waited together (src/raid/raid5_ppl_commit.c r5_ppl_commit), and their mean
 * length: merging the waiting ones here again made a raid6 write stream (two entries per write, on
 * P's and Q's members) issue a third fewer FUA writes than the trial did, and the model 21-26 %
 * fast. So each counted FUA write is one write, at the counted mean length. */
static void sim_ring_write(struct sim *s, int mem)
{
    struct sim_ring *g = &s->ring[mem];
    uint64_t len = s->flen;
    struct emul_hreq r = {
        .off = sim_meta_off(s, mem, len), .len = len, .dir = EMUL_DIR_WRITE, .kind = EMUL_H_IO};
    g->cur = g->pend[0];
    memmove(g->pend, g->pend + 1, (size_t)(g->npend - 1) * sizeof(g->pend[0]));
    g->npend--;
    g->busy = true;
    g->kick = false;
    if (emul_hq_add(&s->m[mem], &s->hq[mem], &r, true, g, s->now, sim_hdd_done, s))
        sim_hdd_done(s, g); /* queue full (never at fio's depths): counted as done */
}

/* Start the next waiting FUA write of the rings whose last write ended. */
static void sim_ring_kicks(struct sim *s)
{
    for (int i = 0; s->ring && i < s->n; i++)
        if (s->ring[i].kick && !s->ring[i].busy)
            sim_ring_write(s, i);
}

/* Queue cnt operations of direction dir on members mem[] for slot sl at s->now; fua: the log's
 * FUA writes, through each member's ring (s->ring exists whenever a request has any). */
static void sim_hdd_submit(struct sim *s, struct sim_slot *sl, const int *mem, int cnt, int dir,
                           bool fua)
{
    sl->nops = cnt;
    sl->ready = cnt == 0;
    sl->t = s->now;
    for (int o = 0; o < cnt; o++) {
        if (fua) {
            struct sim_ring *g = &s->ring[mem[o]];
            if (g->npend < 2 * SIM_MAX_DEPTH)
                g->pend[g->npend++] = sl;
            else
                sim_hdd_done(s, sl);
            if (!g->busy)
                sim_ring_write(s, mem[o]);
            continue;
        }
        /* A mirror writes every copy of the client's request at its offset (a stream stays a
         * stream on every member: the counts' mean length would leave gaps). */
        bool copy = dir == EMUL_DIR_WRITE && s->in->level == RK_LEVEL_RAID1 && s->creq;
        uint64_t len = copy ? s->creq : dir == EMUL_DIR_READ ? s->rlen : s->wlen;
        struct emul_hreq r = {.off = copy ? s->dbase + sl->aoff : sim_hdd_off(s, mem[o], dir, len),
                              .len = len,
                              .dir = (uint8_t)dir,
                              .kind = EMUL_H_IO};
        if (emul_hq_add(&s->m[mem[o]], &s->hq[mem[o]], &r, false, sl, s->now, sim_hdd_done, s))
            sim_hdd_done(s, sl); /* queue full (never at fio's depths): counted as done */
    }
}

/* Layout mode: the next client read (creq bytes at the array's next offset, fio's one position,
 * wrapping at the job's span) as the member reads rk_raid_map gives it, queued for slot sl. */
static void sim_hdd_layout_read(struct sim *s, struct sim_slot *sl)
{
    uint64_t off = s->pos, left = s->creq;
    if (off + left > s->aspan)
        off = 0;
    s->pos = off + left;
    sl->nops = 0;
    sl->ready = false;
    sl->t = s->now;
    struct emul_hreq r[2 * RK_MAX_MEMBERS];
    int mem[2 * RK_MAX_MEMBERS], k = 0;
    while (left > 0 && k < 2 * RK_MAX_MEMBERS) {
        struct rk_raid_extent e[RK_MAX_MEMBERS];
        uint64_t run = 0;
        if (rk_raid_map(s->g, off, e, RK_MAX_MEMBERS, &run) < 1 || run == 0)
            break;
        uint64_t len = run < left ? run : left;
        mem[k] = (int)e[0].slot;
        r[k] = (struct emul_hreq){.off = s->g->data_offset + e[0].member_off,
                                  .len = len,
                                  .dir = EMUL_DIR_READ,
                                  .kind = EMUL_H_IO};
        k++;
        off += len;
        left -= len;
    }
    sl->nops = k;
    sl->ready = k == 0;
    for (int o = 0; o < k; o++)
        if (emul_hq_add(&s->m[mem[o]], &s->hq[mem[o]], &r[o], false, sl, s->now, sim_hdd_done, s))
            sim_hdd_done(s, sl); /* queue full (never at fio's depths): counted as done */
}

/* Start the planned operations of write sl (its reads; none: its next phase at once). */
static void sim_row_start(struct sim *s, struct sim_slot *sl)
{
    int mem[2 * RK_MAX_MEMBERS];
    sl->blocked = false;
    sl->locked = true;
    sim_hdd_submit(s, sl, mem, sim_draw(s, s->rw, sl->nr, mem), EMUL_DIR_READ, false);
}

/* Write sl (planned, phase 1) takes the row of its offset (fio's next write offset): at once
 * when no other write holds or waits for it, else it waits (FIFO). */
static void sim_row_lock(struct sim *s, struct sim_slot *sl)
{
    sl->row = sl->aoff / s->rowbytes;
    sl->order = s->order++;
    sl->ready = false;
    sl->nops = 0;
    sl->t = s->now;
    for (int i = 0; i < s->depth; i++) {
        const struct sim_slot *o = &s->slot[i];
        if (o != sl && (o->locked || o->blocked) && o->row == sl->row) {
            sl->blocked = true;
            return;
        }
    }
    sim_row_start(s, sl);
}

/* Write sl ended: its row goes to the oldest write waiting for it. */
static void sim_row_unlock(struct sim *s, struct sim_slot *sl)
{
    struct sim_slot *next = NULL;
    sl->locked = false;
    for (int i = 0; i < s->depth; i++) {
        struct sim_slot *o = &s->slot[i];
        if (o->blocked && o->row == sl->row && (!next || o->order < next->order))
            next = o;
    }
    if (next)
        sim_row_start(s, next);
}

/* Slot sl's phase ended at s->now: its FUA (bitmap, log) writes after its reads, its data
 * writes after those (the order the array keeps: the log entry is durable before the stripe's
 * writes start), or a new request. Returns whether a request ended. */
static bool sim_hdd_step(struct sim *s, struct sim_slot *sl)
{
    int mem[2 * RK_MAX_MEMBERS];
    sl->ready = false;
    /* A log reclaim runs in r5_ppl_done, after the request's own writes: it flushes every
     * member at once, then writes every member's head block (FUA) at once, and the request
     * completes after that. The other writers go on meanwhile (a reclaim starts at half a
     * ring, so their entries fit); one reclaim at a time (ppl_reclaim's busy: a request that
     * finds one running skips its own). */
    if (sl->phase == 3 && sl->reclaim) {
        sl->reclaim = false;
        if (!s->reclaimer) {
            s->reclaimer = sl;
            sl->phase = 4;
            sl->fj = 0;
        }
    }
    if (sl->phase == 4 && sl->fj < 2) {
        struct emul_hreq r = {.off = s->mbase,
                              .len = RK_PPL_BLOCK,
                              .dir = EMUL_DIR_WRITE,
                              .kind = sl->fj == 0 ? EMUL_H_BARRIER : EMUL_H_IO};
        bool fua = sl->fj++ == 1;
        sl->nops = s->n;
        sl->t = s->now;
        for (int m = 0; m < s->n; m++)
            if (emul_hq_add(&s->m[m], &s->hq[m], &r, fua, sl, s->now, sim_hdd_done, s))
                sim_hdd_done(s, sl);
        return false;
    }
    if (sl->phase == 4)
        s->reclaimer = NULL; /* its head writes are done: the request ends */
    if (sl->phase == 1 && sl->nf > 0) {
        sl->phase = 2;
        sim_hdd_submit(s, sl, mem, sim_draw(s, s->fw, sl->nf, mem), EMUL_DIR_WRITE, true);
        return false;
    }
    if ((sl->phase == 1 || sl->phase == 2) && sl->nw > 0) {
        sl->phase = 3;
        sim_hdd_submit(s, sl, mem, sim_draw(s, s->ww, sl->nw, mem), EMUL_DIR_WRITE, false);
        return false;
    }
    bool ended = sl->phase != 0;
    if (ended && sl->locked)
        sim_row_unlock(s, sl);
    if (s->lpure) {
        sl->nw = 0;
        sl->nf = 0;
        sl->phase = 1;
        sim_hdd_layout_read(s, sl);
        return ended;
    }
    int nr, nw, nf;
    sim_plan(s, &nr, &nw, &nf);
    sl->reclaim = nw + nf > 0 && sim_plan_reclaim(s);
    sl->nr = nr;
    sl->nw = nw;
    sl->nf = nf;
    sl->phase = 1;
    if (nw + nf > 0 && (s->bm || s->lockrows || s->in->level == RK_LEVEL_RAID1)) {
        sl->aoff = sim_write_aoff(s);
        if (sim_bm_wait(s, sl))
            return ended; /* sim_bm_kicks starts it once its bits are durable */
    }
    sim_hdd_start(s, sl);
    return ended;
}

void sim_hdd_start(struct sim *s, struct sim_slot *sl)
{
    int mem[2 * RK_MAX_MEMBERS], k;
    if (s->lockrows && sl->nw + sl->nf > 0) {
        sim_row_lock(s, sl);
        return;
    }
    if (s->g && sl->nr > 0 && sl->nw + sl->nf == 0) { /* a mixed job's read: fio's read stream */
        sim_hdd_layout_read(s, sl);
        return;
    }
    if (sl->nr == 1 && sl->nw + sl->nf == 0 && (k = sim_mirror_read(s, s->now, true)) >= 0) {
        mem[0] = k;
        k = 1;
    } else {
        k = sim_draw(s, s->rw, sl->nr, mem);
    }
    sim_hdd_submit(s, sl, mem, k, EMUL_DIR_READ, false);
}

/* Events in time order: a slot whose phase ended moves on; else the member whose head finishes
 * first completes its command (and starts the next). */
double sim_hdd_loop(struct sim *s, double req_bytes)
{
    uint32_t finished = 0;
    uint64_t t_open = 0;
    for (int i = 0; i < s->depth; i++)
        s->slot[i].ready = true;
    for (;;) {
        int ks = -1, km = -1;
        uint64_t t = UINT64_MAX;
        for (int i = 0; i < s->depth; i++)
            if (s->slot[i].ready && s->slot[i].t < t) {
                t = s->slot[i].t;
                ks = i;
            }
        for (int i = 0; i < s->n; i++)
            if (s->hq[i].busy && s->hq[i].busy_until < t) {
                t = s->hq[i].busy_until;
                km = i;
                ks = -1;
            }
        if (ks < 0 && km < 0)
            return 0; /* nothing in flight: a model that never completes */
        s->now = t;
        if (km >= 0) {
            emul_hq_advance(&s->m[km], &s->hq[km], t, sim_hdd_done, s);
            sim_ring_kicks(s);
            sim_bm_kicks(s);
            sim_ring_kicks(s);
            continue;
        }
        bool ended = sim_hdd_step(s, &s->slot[ks]);
        sim_ring_kicks(s); /* a queue's catch-up in the step may have ended a log write */
        sim_bm_kicks(s);
        sim_ring_kicks(s); /* ... or the writers the bitmap woke */
        if (!ended)
            continue;
        if (++finished == SIM_WARM)
            t_open = t;
        if (finished == SIM_WARM + SIM_MEASURED) {
            double secs = (double)(t - t_open) / 1e9;
            return secs > 0 ? req_bytes * SIM_MEASURED / secs / 1e6 : 0;
        }
    }
}
