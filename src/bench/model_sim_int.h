/* Private to the model simulation (model_sim.c: the shared draws, the SSD loop and
 * run_model_sim; model_sim_hdd.c: the HDD loop through the emul member's command queue). */
#ifndef RK_BENCH_MODEL_SIM_INT_H
#define RK_BENCH_MODEL_SIM_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "bench/run.h"
#include "member/emul_model.h"
#include "raid/raid5_ppl.h"
#include "raidkit/raid.h"

#define SIM_MAX_DEPTH 256
#define SIM_WARM      2000u  /* requests completed before the measured window opens */
#define SIM_MEASURED  20000u /* requests in the measured window */

/* One outstanding client request: its current phase's member operations. */
struct sim_slot {
    uint64_t t;   /* when the current phase ends (or the slot is free, at start) */
    int phase;    /* 0: new request next; 1: reads in flight; 2: HDD: FUA (metadata) writes in
                   * flight; 3 (HDD; 2 on an SSD): writes in flight; 4: HDD: its log
                   * reclaim's member flushes in flight */
    int nw;       /* write operations of the request's last phase */
    int nf;       /* HDD: FUA writes of its phase 2 (bitmap and log writes, before the data) */
    bool reclaim; /* HDD: a log reclaim after its writes (phase 4): every member flushed */
    int fj;       /* reclaim: 0 flushes to send, 1 flushes in flight, 2 head writes in flight */
    int nops;     /* member operations in flight */
    int mem[2 * RK_MAX_MEMBERS];
    uint64_t done[2 * RK_MAX_MEMBERS];
    bool ready; /* HDD: the phase has ended (at t); the slot moves on */
    /* HDD, stripe locks (sim.lockrows): the stripe row this write holds (locked) or waits for
     * (blocked; its member operations nr, nw, nf are drawn, none submitted), and when it came */
    bool locked, blocked;
    uint64_t row, order;
    int nr;
    /* HDD, a write: fio's array offset of it (aoff); with a write-intent bitmap (sim.bm), the
     * area write generation it waits for (bmwait: its bits are not durable yet) */
    uint64_t aoff, bmgen;
    bool bmwait;
};

/* HDD, an array with a write-intent bitmap (src/raid/bitmap.c): before a write reaches the
 * level, the bits of the member regions it touches are durable; a write into a region whose bit
 * is not set sets it in the image and waits for an area write (FUA, every member at once, at the
 * area's place) that began after; one area write at a time, shared by every writer that came
 * meanwhile. model_sim_bm.c. */
struct sim_bm {
    uint64_t region, off, size; /* member data bytes per region; the area's offset and bytes */
    uint64_t nreg;              /* regions of the job's member span */
    uint64_t *gen;              /* per region: 0 bit clear, else the generation that set it */
    uint64_t *pass;             /* per region: the sequential pass that drew its state */
    double entries, bits;       /* the trial's region entries and bits set (sim_bm_init) */
    uint64_t nent;              /* a sequential stream's region entries so far */
    uint64_t ahead_end;         /* bitmap.c's stream look-ahead: one past the last region set */
    uint32_t ahead_run;         /* ... regions set one after the other up to it */
    uint64_t refill_at;         /* bitmap.c bm_refill: a stream write here sets the next window */
    uint64_t want, done;        /* generations asked for / durable (bitmap.c gen_want, gen_done) */
    uint64_t wgen;              /* the generation of the area write in flight */
    bool writing, ended;        /* an area write in flight / it ended (the loop wakes writers) */
    int nops;                   /* members whose part of it is still in flight */
};

/* HDD, an array with a log: a member's log ring has one FUA write in flight at a time; the
 * ones that arrive meanwhile wait in order (FIFO). The counted FUA writes are already the
 * array's merged ones (src/raid/raid5_ppl_commit.c r5_ppl_commit, the group commit of a slow ring),
 * so the ring does not merge them again (sim_ring_write). */
struct sim_ring {
    bool busy, kick; /* a write in flight / it ended (the loop writes the next waiting one) */
    int npend;
    struct sim_slot *cur; /* the request whose FUA write is in flight */
    struct sim_slot *pend[2 * SIM_MAX_DEPTH];
};

struct sim {
    const struct run_sim_in *in;
    struct sim_ring *ring;      /* HDD with a log: one per member (else NULL) */
    struct sim_bm *bm;          /* HDD with a write-intent bitmap (else NULL) */
    struct sim_slot *reclaimer; /* HDD with a log: the write reclaiming log space, if any */
    struct emul_model *m;
    struct emul_hq *hq;               /* HDD: one command queue per member */
    uint64_t now;                     /* HDD: the event time being handled */
    uint64_t span;                    /* HDD: bytes of each member covered */
    uint64_t next[2][RK_MAX_MEMBERS]; /* HDD sequential: next offset per direction, member */
    const struct rk_raid_geom *g;     /* HDD sequential reads through the layout (else NULL) */
    bool lpure;                       /* ... every request such a read (a read job) */
    uint64_t pos, aspan, creq;        /* layout: next array offset, array bytes, client bytes */
    struct sim_slot *slot;
    int depth, n;
    double rw[RK_MAX_MEMBERS], ww[RK_MAX_MEMBERS]; /* member shares of reads / writes */
    double fw[RK_MAX_MEMBERS];                     /* HDD: member shares of FUA writes */
    double rpr, wpr, fpr; /* reads / writes / (HDD) FUA writes per client request */
    double flpr;          /* HDD, with a log: reclaims (a flush of every member) per request */
    uint64_t flen;        /* HDD: bytes per FUA write */
    uint64_t dbase;       /* HDD: member offset of the data area (0: geometry unknown) */
    uint64_t mbase, msize, moff[RK_MAX_MEMBERS]; /* HDD, with a log: its region, next write */
    /* HDD sequential writes on raid5/raid6: a write holds its stripe row's lock from its first
     * member operation to its last (src/raid/stripe.c), so writes of one row run one at a time;
     * wpos: fio's next write offset in the array (HDD, any write job), wspan: the array bytes
     * the job covers, rowbytes: data bytes per row */
    bool lockrows;
    uint64_t wpos, wspan, rowbytes, order;
    uint64_t wpass;       /* HDD: fio's passes over wspan so far (sequential writes) */
    double rfrac;         /* mixed job: share of client requests that are reads (0: not mixed) */
    double mrr, mwr, mww; /* mixed: reads per client read; reads, writes per client write */
    double mfw;           /* mixed, HDD: FUA writes per client write */
    uint64_t rlen, wlen;  /* bytes per member read / write */
    uint64_t rng;
    uint32_t rr; /* round robin of ties between copies */
};

/* The next 64-bit pseudo-random number / a uniform double in [0, 1) of s's generator. */
uint64_t sim_rand(struct sim *s);
double sim_unit(struct sim *s);
/* cnt members drawn with weights w into out (see model_sim.c); returns how many were drawn. */
int sim_draw(struct sim *s, const double *w, int cnt, int *out);
/* A count drawn around mean x: floor(x), plus one with probability frac(x). */
int sim_count(struct sim *s, double x);
/* Members of n whose data one array byte's row spreads over (1 for a mirror). */
int sim_data_members(int level, int n);
/* Member reads, writes and (HDD, with a log) FUA writes of the next client request. */
void sim_plan(struct sim *s, int *nr, int *nw, int *nf);
/* The read member of one client read of a mirrored level at t (hdd: by queue length), or -1. */
int sim_mirror_read(struct sim *s, uint64_t t, bool hdd);
/* The HDD closed loop (model_sim_hdd.c): MB/s of req_bytes client requests, 0 if none end. */
double sim_hdd_loop(struct sim *s, double req_bytes);
/* Queue the planned member operations of request sl (its bits durable) at s->now. */
void sim_hdd_start(struct sim *s, struct sim_slot *sl);
/* Completion of one member operation of ctx at s->now (the member queues call this). */
void sim_hdd_done(void *arg, void *ctx);

/* The write-intent bitmap (model_sim_bm.c). Set s->bm up from the counts between a and b
 * (none: NULL) for client requests of creq bytes, cwrites of them writes; returns the area
 * writes per member it simulates itself (the counted FUA writes that set bits), which the
 * caller takes out of the write mix, or 0. */
double sim_bm_init(struct sim *s, const struct run_counts *a, const struct run_counts *b,
                   double creq, double cwrites);
void sim_bm_free(struct sim *s);
/* fio's array offset of the next client write: sequential (wrapping at wspan) or random. */
uint64_t sim_write_aoff(struct sim *s);
/* Does write sl (sl->aoff) wait for bits first? Then it is registered and the area write
 * started when none runs; sim_bm_kicks starts it once they are durable. */
bool sim_bm_wait(struct sim *s, struct sim_slot *sl);
/* One member's part of the area write ended (from sim_hdd_done). */
void sim_bm_done(struct sim *s);
/* After an event: an ended area write wakes its writers and the next one starts. */
void sim_bm_kicks(struct sim *s);

#endif
