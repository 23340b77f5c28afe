/*
 * Internal state of the partial parity log shared by raid5_ppl.c (the write step: rings, group
 * commit, reclaim) and raid5_ppl_replay.c (scan, replay, start). docs/FORMAT.md "Partial parity
 * log"; the on-disk codec is raid5_ppl_fmt.c (raid5_ppl.h).
 */
#ifndef RK_RAID5_PPL_INT_H
#define RK_RAID5_PPL_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "raid/raid5_int.h"
#include "raid/raid5_ppl.h"

/* Where an entry's log write stands (group commit, ppl_commit). */
enum ppl_wstate { PPL_FILLING, PPL_READY, PPL_WRITING, PPL_DURABLE };

struct ppl_ent {
    uint64_t seq, pos, size;
    enum ppl_wstate ws;
    int result;   /* of its log write, once PPL_DURABLE (0 or -errno) */
    uint64_t run; /* PPL_WRITING: the log write carrying it (its leader's seq) */
    bool done;    /* the stripe write completed (durable after the next member flush) */
    bool durable; /* done and durable: its member writes were FUA, or a flush followed */
};

/* One member's ring: live entries [first, first + count) of q (circular, cap entries). Entries
 * are encoded in place in stage (the ring's image, ring bytes), so that adjacent entries of
 * concurrent writers go out as one member write (ppl_commit). */
struct ppl_ring {
    struct rk_dev *dev; /* member whose head this session wrote; other: adopt it first */
    uint64_t head;      /* next free position (ring bytes) */
    uint64_t retired;   /* the durable retirement point (head block) */
    uint32_t first, count;
    unsigned writing; /* log writes of this ring in flight */
    uint64_t lat_ns;  /* moving mean duration of its log writes (group commit decides by it) */
    struct ppl_ent *q;
    char *stage;
};

struct r5_ppl {
    pthread_mutex_t lock;         /* everything below; never held across I/O */
    pthread_cond_t cond;          /* an entry completed, or a reclaim ended */
    bool on;                      /* started (rk_raid_log_start); off: writes log nothing */
    bool busy;                    /* one thread reclaims or adopts (outside the lock) */
    int waiters;                  /* threads in ppl_wait */
    uint64_t id, off, size, ring; /* generation, member offset and bytes of the region, ring */
    uint32_t cap;
    uint64_t next_seq;
    char *hbuf; /* head block of the thread that is busy */
    struct ppl_ring m[RK_MAX_MEMBERS];
};

/* One valid live entry found by the scan; payload points into the scan buffer of its slot. */
struct ppl_found {
    struct rk_ppl_entry e;
    const char *payload;
};

struct ppl_scan {
    char *buf[RK_MAX_MEMBERS]; /* region image of each readable slot, NULL: none */
    struct ppl_found *f;
    size_t nf, cap;
    uint64_t next; /* > every seq seen, >= every retirement point */
};

/* Write slot's head block with retirement point retired (FUA). Caller is the busy thread (or
 * the only one: start) and holds no lock. Returns 0 or -errno (the slot is failed). */
int r5_ppl_write_head(struct raid_priv *r, struct r5_ppl *L, uint32_t slot, uint64_t retired);

/* Read slot's log region and collect into sc its valid entries newer than its head's retirement
 * point (sc->buf[slot] keeps the region image; caller frees it and sc->f). Untrusted blocks are
 * logged and ignored. Holds no lock. */
void r5_ppl_scan_slot(struct raid_priv *r, struct r5_ppl *L, uint32_t slot, struct ppl_scan *sc);

#endif
