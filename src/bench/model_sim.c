/* The device model's prediction of a row as a simulation: fio's closed loop (iodepth requests
 * always outstanding) over the array's members, each member the same SSD model functions the emul
 * member uses (emul_ssd_submit), on a fake clock (docs/BENCHMARKS.md "Validation against the
 * emulation"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/run.h"
#include "member/emul_model.h"
#include "raidkit/raid.h"

#define SIM_MAX_DEPTH 256
#define SIM_WARM      2000u  /* requests completed before the measured window opens */
#define SIM_MEASURED  20000u /* requests in the measured window */

/* One outstanding client request: its current phase's member operations. */
struct sim_slot {
    uint64_t t; /* when the current phase ends (or the slot is free, at start) */
    int phase;  /* 0: new request next; 1: reads in flight; 2: writes in flight */
    int nw;     /* write operations of the request's second phase */
    int nops;   /* member operations in flight */
    int mem[2 * RK_MAX_MEMBERS];
    uint64_t done[2 * RK_MAX_MEMBERS];
    bool ready; /* HDD: the phase has ended (at t); the slot moves on */
};

struct sim {
    const struct run_sim_in *in;
    struct emul_model *m;
    struct emul_hq *hq;               /* HDD: one command queue per member */
    uint64_t now;                     /* HDD: the event time being handled */
    uint64_t span;                    /* HDD: bytes of each member covered */
    uint64_t next[2][RK_MAX_MEMBERS]; /* HDD sequential: next offset per direction, member */
    const struct rk_raid_geom *g;     /* HDD sequential read through the layout (else NULL) */
    uint64_t pos, aspan, creq;        /* layout: next array offset, array bytes, client bytes */
    struct sim_slot *slot;
    int depth, n;
    double rw[RK_MAX_MEMBERS], ww[RK_MAX_MEMBERS]; /* member shares of reads / writes */
    double rpr, wpr;                               /* reads / writes per client request */
    double rfrac;         /* mixed job: share of client requests that are reads (0: not mixed) */
    double mrr, mwr, mww; /* mixed: reads per client read; reads, writes per client write */
    uint64_t rlen, wlen;  /* bytes per member read / write */
    uint64_t rng;
    uint32_t rr; /* round robin of ties between copies */
};

static uint64_t sim_rand(struct sim *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double sim_unit(struct sim *s)
{
    return (double)(sim_rand(s) >> 11) / 9007199254740992.0;
}

/* Member operations still in flight on member mem at time t (all slots). */
static int sim_busy(const struct sim *s, int mem, uint64_t t)
{
    int k = 0;
    for (int i = 0; i < s->depth; i++)
        for (int o = 0; o < s->slot[i].nops; o++)
            k += s->slot[i].mem[o] == mem && s->slot[i].done[o] > t;
    return k;
}

/* cnt members drawn with weights w (members of weight 0 never), without replacement within a
 * round of distinct members; more operations than members start another round (an extra
 * operation, e.g. a metadata write, lands on a member that already has one). */
static int sim_draw(struct sim *s, const double *w, int cnt, int *out)
{
    bool used[RK_MAX_MEMBERS] = {false};
    int k = 0;
    if (cnt > 2 * RK_MAX_MEMBERS)
        cnt = 2 * RK_MAX_MEMBERS;
    for (; k < cnt; k++) {
        double tot = 0;
        for (int i = 0; i < s->n; i++)
            tot += used[i] ? 0 : w[i];
        if (tot <= 0 && k > 0) {
            memset(used, 0, sizeof(used)); /* next round */
            for (int i = 0; i < s->n; i++)
                tot += w[i];
        }
        if (tot <= 0)
            break;
        double u = sim_unit(s) * tot;
        int pick = -1;
        for (int i = 0; i < s->n; i++) {
            if (used[i] || w[i] <= 0)
                continue;
            pick = i;
            if ((u -= w[i]) < 0)
                break;
        }
        used[pick] = true;
        out[k] = pick;
    }
    return k;
}

/* A count drawn around mean x: floor(x), plus one with probability frac(x). */
static int sim_count(struct sim *s, double x)
{
    int k = (int)floor(x);
    return k + (sim_unit(s) < x - k);
}

/* Member reads (*nr) and writes (*nw) of the next client request. A pure job: each drawn around
 * the trial's per-request means. A mixed job (rfrac in (0,1)): the request is a read with
 * probability rfrac (its reads only), else a write (read-modify-write reads, then writes), so a
 * request never makes neither. */
static void sim_plan(struct sim *s, int *nr, int *nw)
{
    if (s->rfrac > 0 && s->rfrac < 1) {
        bool rd = sim_unit(s) < s->rfrac;
        *nr = sim_count(s, rd ? s->mrr : s->mwr);
        *nw = rd ? 0 : sim_count(s, s->mww);
        if (*nr + *nw == 0)
            *nr = rd; /* a write whose writes rounded away still is one request */
        return;
    }
    *nr = sim_count(s, s->rpr);
    *nw = sim_count(s, s->wpr);
}

/* Read members of one client read of a mirrored level: the least busy copy (ties round robin),
 * as src/raid/copies_rw.c picks; raid1 = any member, raid10 near 2 = the pair of a random
 * chunk. Busy is sim_busy at t (SSD), or queued + under the head (hdd). Returns -1 when the
 * level has no copies to choose from. */
static int sim_mirror_read(struct sim *s, uint64_t t, bool hdd)
{
    int lo = 0, cnt = 0;
    if (s->in->level == RK_LEVEL_RAID1) {
        cnt = s->n;
    } else if (s->in->level == RK_LEVEL_RAID10 && s->n % 2 == 0) {
        lo = (int)(sim_rand(s) % (uint64_t)(s->n / 2)) * 2;
        cnt = 2;
    } else {
        return -1;
    }
    uint32_t start = s->rr++;
    int best = -1, bl = 0;
    for (int i = 0; i < cnt; i++) {
        int mem = lo + (int)((start + (uint32_t)i) % (uint32_t)cnt);
        int b = hdd ? s->hq[mem].n + s->hq[mem].busy : sim_busy(s, mem, t);
        if (best < 0 || b < bl) {
            best = mem;
            bl = b;
        }
    }
    return best;
}

/* Submit cnt operations of direction dir on members mem[] at t into slot sl; returns when the
 * last of them completes. */
static uint64_t sim_submit(struct sim *s, struct sim_slot *sl, const int *mem, int cnt, int dir,
                           uint64_t t)
{
    uint64_t end = t;
    sl->nops = cnt;
    for (int o = 0; o < cnt; o++) {
        uint64_t len = dir == EMUL_DIR_READ ? s->rlen : s->wlen;
        sl->mem[o] = mem[o];
        sl->done[o] = emul_ssd_submit(&s->m[mem[o]], dir, len, t);
        end = sl->done[o] > end ? sl->done[o] : end;
    }
    return end;
}

/* Start the next phase of slot sl at its time: a new request's reads (or its writes when it has
 * none), or the writes after the reads (read-modify-write). Returns whether the request ended. */
static bool sim_step(struct sim *s, struct sim_slot *sl)
{
    int mem[2 * RK_MAX_MEMBERS];
    if (sl->phase == 1 && sl->nw > 0) {
        int k = sim_draw(s, s->ww, sl->nw, mem);
        sl->t = sim_submit(s, sl, mem, k, EMUL_DIR_WRITE, sl->t);
        sl->phase = 2;
        return false;
    }
    if (sl->phase != 0) {
        sl->phase = 0;
        sl->nops = 0;
        return true;
    }
    int nr, nw, k = 0;
    sim_plan(s, &nr, &nw);
    if (nr == 1 && nw == 0 && (k = sim_mirror_read(s, sl->t, false)) >= 0) {
        mem[0] = k;
        k = 1;
    } else {
        k = sim_draw(s, s->rw, nr, mem);
    }
    sl->nw = nw;
    sl->phase = 1;
    if (k > 0)
        sl->t = sim_submit(s, sl, mem, k, EMUL_DIR_READ, sl->t);
    else
        return sim_step(s, sl); /* no reads: the writes at once */
    return false;
}

/* The loop: the slot whose phase ends first moves on; a finished request is counted (after the
 * warm-up) and the slot starts a new one at once, as fio does. */
static double sim_loop(struct sim *s, double req_bytes)
{
    uint32_t finished = 0;
    uint64_t t_open = 0;
    for (;;) {
        int k = 0;
        for (int i = 1; i < s->depth; i++)
            k = s->slot[i].t < s->slot[k].t ? i : k;
        struct sim_slot *sl = &s->slot[k];
        if (!sim_step(s, sl))
            continue;
        if (++finished == SIM_WARM)
            t_open = sl->t;
        if (finished == SIM_WARM + SIM_MEASURED) {
            double secs = (double)(sl->t - t_open) / 1e9;
            return secs > 0 ? req_bytes * SIM_MEASURED / secs / 1e6 : 0;
        }
    }
}

/* ---- HDD: the same closed loop through the emul member's command queue, event by event ---- */

/* Completion of one member operation of slot ctx at s->now (the queue calls this). */
static void sim_hdd_done(void *arg, void *ctx)
{
    struct sim *s = arg;
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
        return 0;
    if (s->in->seq) {
        /* a mirror's copies share one stream (each copy sees the others' parts as gaps) */
        int cur = s->in->level == RK_LEVEL_RAID1 ? 0 : mem;
        uint64_t off = s->next[dir][cur];
        if (off + len > blocks * len)
            off = 0;
        s->next[dir][cur] = off + len;
        return off;
    }
    return (sim_rand(s) % blocks) * len;
}

/* Queue cnt operations of direction dir on members mem[] for slot sl at s->now. */
static void sim_hdd_submit(struct sim *s, struct sim_slot *sl, const int *mem, int cnt, int dir)
{
    sl->nops = cnt;
    sl->ready = cnt == 0;
    sl->t = s->now;
    for (int o = 0; o < cnt; o++) {
        uint64_t len = dir == EMUL_DIR_READ ? s->rlen : s->wlen;
        struct emul_hreq r = {.off = sim_hdd_off(s, mem[o], dir, len),
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

/* Slot sl's phase ended at s->now: its writes after its reads, or a new request. Returns whether
 * a request ended. */
static bool sim_hdd_step(struct sim *s, struct sim_slot *sl)
{
    int mem[2 * RK_MAX_MEMBERS];
    sl->ready = false;
    if (sl->phase == 1 && sl->nw > 0) {
        sl->phase = 2;
        sim_hdd_submit(s, sl, mem, sim_draw(s, s->ww, sl->nw, mem), EMUL_DIR_WRITE);
        return false;
    }
    bool ended = sl->phase != 0;
    if (s->g) {
        sl->nw = 0;
        sl->phase = 1;
        sim_hdd_layout_read(s, sl);
        return ended;
    }
    int nr, nw, k;
    sim_plan(s, &nr, &nw);
    if (nr == 1 && nw == 0 && (k = sim_mirror_read(s, s->now, true)) >= 0) {
        mem[0] = k;
        k = 1;
    } else {
        k = sim_draw(s, s->rw, nr, mem);
    }
    sl->nw = nw;
    sl->phase = 1;
    sim_hdd_submit(s, sl, mem, k, EMUL_DIR_READ);
    return ended;
}

/* Events in time order: a slot whose phase ended moves on; else the member whose head finishes
 * first completes its command (and starts the next). */
static double sim_hdd_loop(struct sim *s, double req_bytes)
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
            continue;
        }
        if (!sim_hdd_step(s, &s->slot[ks]))
            continue;
        if (++finished == SIM_WARM)
            t_open = t;
        if (finished == SIM_WARM + SIM_MEASURED) {
            double secs = (double)(t - t_open) / 1e9;
            return secs > 0 ? req_bytes * SIM_MEASURED / secs / 1e6 : 0;
        }
    }
}

/* Bytes of each member a job over span array bytes covers: the level's data members share it
 * (a mirror's every copy holds all of it). */
static uint64_t sim_hdd_span(const struct run_sim_in *in, int n, uint64_t cap)
{
    int data = n;
    if (in->level == RK_LEVEL_RAID1)
        data = 1;
    else if (in->level == RK_LEVEL_RAID10)
        data = n / 2 > 0 ? n / 2 : 1;
    else if (in->level == RK_LEVEL_RAID5)
        data = n > 1 ? n - 1 : 1;
    else if (in->level == RK_LEVEL_RAID6)
        data = n > 2 ? n - 2 : 1;
    uint64_t span = in->span ? in->span / (uint64_t)data : cap;
    return span < cap ? span : cap;
}

/* Does the HDD simulation walk the array's layout? A sequential pure-read job (nw: member
 * writes, 0) on a one-copy level whose geometry is known and matches the members counted. */
static bool sim_layout_ok(const struct run_sim_in *in, int n, double nw)
{
    const struct rk_raid_geom *g = in->geom;
    if (!g || !in->seq || nw > 0 || (in->rfrac > 0 && in->rfrac < 1) || g->level != in->level ||
        (int)g->members != n)
        return false;
    return g->level == RK_LEVEL_LINEAR || g->level == RK_LEVEL_RAID0 ||
           g->level == RK_LEVEL_RAID5 || g->level == RK_LEVEL_RAID6;
}

double run_model_sim(const struct run_sim_in *in, const struct run_counts *a,
                     const struct run_counts *b)
{
    const struct rk_emul_params *p = in->p;
    if (!p || (p->kind != RK_EMUL_SSD && p->kind != RK_EMUL_HDD) || b->bytes <= a->bytes ||
        b->ops <= a->ops || b->n < 1)
        return 0;
    struct sim s = {.in = in, .n = b->n, .rng = in->seed ? in->seed : 1};
    double nr = 0, nw = 0, rb = 0, wb = 0, ops = (double)(b->ops - a->ops);
    for (int i = 0; i < s.n; i++) {
        s.rw[i] = (double)(b->r[i] - a->r[i]);
        s.ww[i] = (double)(b->w[i] - a->w[i]);
        nr += s.rw[i];
        nw += s.ww[i];
        rb += (double)(b->rb[i] - a->rb[i]);
        wb += (double)(b->wb[i] - a->wb[i]);
    }
    if (nr + nw <= 0)
        return 0;
    s.rpr = nr / ops;
    s.wpr = nw / ops;
    s.rlen = nr > 0 ? (uint64_t)(rb / nr) : 0;
    s.wlen = nw > 0 ? (uint64_t)(wb / nw) : 0;
    double req = (double)(b->bytes - a->bytes) / ops;
    s.rfrac = in->rfrac;
    if (s.rfrac > 0 && s.rfrac < 1) { /* mixed: client reads take their own bytes' reads */
        double creads = ops * s.rfrac, cwrites = ops - creads;
        double per = s.rlen ? fmax(1, req / (double)s.rlen) : 0;
        s.mrr = fmin(per, nr / creads);
        s.mwr = (nr - s.mrr * creads) / cwrites;
        s.mww = nw / cwrites;
    }
    s.depth = in->iodepth < 1 ? 1 : in->iodepth > SIM_MAX_DEPTH ? SIM_MAX_DEPTH : in->iodepth;
    s.m = calloc((size_t)s.n, sizeof(*s.m));
    s.slot = calloc((size_t)s.depth, sizeof(*s.slot));
    bool hdd = p->kind == RK_EMUL_HDD;
    uint64_t cap = p->capacity ? p->capacity : 1ull << 30;
    s.hq = hdd ? calloc((size_t)s.n, sizeof(*s.hq)) : NULL;
    s.span = sim_hdd_span(in, s.n, cap);
    if (hdd && sim_layout_ok(in, s.n, nw)) {
        s.g = in->geom;
        s.creq = (uint64_t)req;
        s.aspan = in->span ? in->span : rk_raid_array_size(in->geom);
    }
    double mbs = 0;
    if (s.m && s.slot && (s.hq || !hdd)) {
        bool ok = true;
        for (int i = 0; i < s.n && ok; i++)
            ok = emul_model_init(&s.m[i], p, cap) == 0;
        if (ok)
            mbs = hdd ? sim_hdd_loop(&s, req) : sim_loop(&s, req);
    }
    free(s.hq);
    free(s.m);
    free(s.slot);
    return mbs;
}
