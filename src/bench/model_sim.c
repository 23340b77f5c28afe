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
};

struct sim {
    const struct run_sim_in *in;
    struct emul_model *m;
    struct sim_slot *slot;
    int depth, n;
    double rw[RK_MAX_MEMBERS], ww[RK_MAX_MEMBERS]; /* member shares of reads / writes */
    double rpr, wpr;                               /* reads / writes per client request */
    uint64_t rlen, wlen;                           /* bytes per member read / write */
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

/* Read members of one client read of a mirrored level: the least busy copy (ties round robin),
 * as src/raid/copies_rw.c picks; raid1 = any member, raid10 near 2 = the pair of a random
 * chunk. Returns -1 when the level has no copies to choose from. */
static int sim_mirror_read(struct sim *s, uint64_t t)
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
        int b = sim_busy(s, mem, t);
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
    int nr = sim_count(s, s->rpr), nw = sim_count(s, s->wpr), k = 0;
    if (nr == 1 && nw == 0 && (k = sim_mirror_read(s, sl->t)) >= 0) {
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

double run_model_sim(const struct run_sim_in *in, const struct run_counts *a,
                     const struct run_counts *b)
{
    const struct rk_emul_params *p = in->p;
    if (!p || p->kind != RK_EMUL_SSD || b->bytes <= a->bytes || b->ops <= a->ops || b->n < 1)
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
    s.depth = in->iodepth < 1 ? 1 : in->iodepth > SIM_MAX_DEPTH ? SIM_MAX_DEPTH : in->iodepth;
    s.m = calloc((size_t)s.n, sizeof(*s.m));
    s.slot = calloc((size_t)s.depth, sizeof(*s.slot));
    double mbs = 0;
    if (s.m && s.slot) {
        bool ok = true;
        for (int i = 0; i < s.n && ok; i++)
            ok = emul_model_init(&s.m[i], p, p->capacity ? p->capacity : 1ull << 30) == 0;
        if (ok)
            mbs = sim_loop(&s, (double)(b->bytes - a->bytes) / ops);
    }
    free(s.m);
    free(s.slot);
    return mbs;
}
