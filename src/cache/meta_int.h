/* Internals of the cache device's metadata (src/cache/meta*.c; format in docs/FORMAT.md "Cache
 * device"): the on-disk codecs, the in-memory index and the journal/checkpoint writers.
 *
 * Files: meta_sb.c (superblock, checkpoint header and journal block codecs, layout),
 * meta_index.c (index, free list, record queue, the public index calls), meta_journal.c
 * (commit, replay), meta_ckpt.c (checkpoint write and load, journal epoch start), meta.c
 * (format, open, close, accessors), meta_bind.c (binding check). File calls go one way:
 * meta -> journal -> ckpt -> index, sb (scripts/callgraph.sh build src/cache: no cycle).
 * Lock: m->lock guards every field below except the constants (sb, dev, name, readonly); it is a
 * leaf (never held across device I/O; the committer drops it around its writes).
 */
#ifndef RK_CACHE_META_INT_H
#define RK_CACHE_META_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/meta.h"

#define RKC_BLK        4096u /* metadata block: superblock, checkpoint header, journal block */
#define RKC_VERSION    1u
#define RKC_SB_MAGIC   "RKCACHSB"
#define RKC_CK_MAGIC   "RKCACHCK"
#define RKC_JB_MAGIC   "RKCACHJB"
#define RKC_JB_HDR     48u /* journal block header bytes; records follow */
#define RKC_REC_SIZE   16u
#define RKC_JB_RECS    ((RKC_BLK - RKC_JB_HDR - 4u) / RKC_REC_SIZE) /* 252 records per block */
#define RKC_JB_END     0x1u          /* flag: last block of a commit */
#define RKC_MAX_BLOCKS 0xfffffff0ull /* cache blocks: 32-bit index links (NIL = UINT32_MAX) */
#define RKC_NIL        UINT32_MAX

/* Checkpoint entry (one u64 per cache block, on disk and in memory). */
#define RKC_E_MAPPED (1ull << 63)
#define RKC_E_DIRTY  (1ull << 62)
#define RKC_E_LIMBO  (1ull << 61) /* memory only: unmapped, unmap not durable yet */
#define RKC_E_ALLOC  (1ull << 60) /* memory only: handed out by alloc, not mapped yet */
#define RKC_E_BBLOCK ((1ull << 60) - 1)
#define RKC_E_DISK   (RKC_E_MAPPED | RKC_E_DIRTY | RKC_E_BBLOCK)

/* Journal record ops (record word 0 = op << 56 | cblock, word 1 = argument). */
enum rkc_op {
    RKC_OP_MAP_CLEAN = 1, /* arg = bblock */
    RKC_OP_MAP_DIRTY = 2, /* arg = bblock */
    RKC_OP_SET_DIRTY = 3,
    RKC_OP_SET_CLEAN = 4,
    RKC_OP_UNMAP = 5,
    RKC_OP_MODE = 6, /* cblock 0, arg = enum rk_cache_mode */
};

/* The decoded cache superblock (docs/FORMAT.md "Cache superblock"). */
struct rkc_sb {
    uint32_t version;
    uint32_t mode; /* mode at create (the current one lives in checkpoint/journal) */
    uint8_t cache_uuid[16];
    uint8_t array_uuid[16];
    uint64_t array_size; /* bytes */
    uint32_t block_size; /* bytes */
    uint64_t nblocks;    /* cache blocks in the data area */
    uint64_t instance;   /* generation stamped in every checkpoint and journal block */
    uint64_t ckpt_off[2], ckpt_size;
    uint64_t journal_off, journal_size;
    uint64_t data_off;
    uint64_t ctime;
};

/* A decoded checkpoint header. */
struct rkc_ck {
    uint64_t instance, seq, next_seq, nblocks;
    uint32_t mode, payload_crc;
};

/* A decoded journal block header (records stay in the buffer). */
struct rkc_jb {
    uint64_t instance, seq, commit_first;
    uint32_t nrec, flags;
};

struct rk_cache_meta {
    struct rk_dev *dev;
    char name[256];
    struct rkc_sb sb;
    bool readonly;
    uint64_t array_blocks; /* ceil(array_size / block_size) */

    pthread_mutex_t lock;
    pthread_cond_t cond;
    /* index */
    uint64_t *ent;  /* per cblock: RKC_E_* | bblock */
    uint32_t *next; /* hash chain of a mapped cblock, or free-list link */
    uint32_t *bucket;
    uint32_t bucket_bits;
    uint32_t free_head;
    uint64_t nfree, nmapped, ndirty;
    enum rk_cache_mode mode;
    /* journal: records queued since the last commit round took them */
    uint64_t *pend; /* 2 words per record */
    size_t npend, pend_cap;
    uint64_t queued, durable; /* records queued / made durable since open */
    bool committing;
    int failed;        /* first commit error; every later commit returns it */
    uint64_t jblocks;  /* journal area in blocks */
    uint64_t jpos;     /* blocks used in the current journal epoch */
    uint64_t next_seq; /* sequence number of the next journal block */
    int ck_slot;       /* slot of the newest checkpoint */
    uint64_t ck_seq;   /* its checkpoint number */
    uint64_t commits, checkpoints;
};

/* ---- meta_sb.c: codecs and layout ---- */
/* Page-aligned buffer of len bytes straight from mmap (checkpoint snapshots, the journal read at
 * open), so its memory goes back to the system at once instead of staying in the heap. NULL on
 * ENOMEM; free with rkc_big_free(p, len). */
void *rkc_big_alloc(size_t len);
void rkc_big_free(void *p, size_t len);
void rkc_sb_encode(const struct rkc_sb *sb, uint8_t *out);
/* 0, -ENODATA (no cache magic), -EPROTONOSUPPORT, -EBADMSG (crc) or -EINVAL (field) with err. */
int rkc_sb_decode(const uint8_t *buf, struct rkc_sb *sb, char *err, size_t errlen);
/* Encode a checkpoint header into out (RKC_BLK bytes). */
void rkc_ck_encode(const struct rkc_ck *ck, uint8_t *out);
/* 0 or -EBADMSG with err (magic, crc, reserved bytes). */
int rkc_ck_decode(const uint8_t *buf, struct rkc_ck *ck, char *err, size_t errlen);
/* Encode a journal block: header h, nrec records (2 words each) from rec. */
void rkc_jb_encode(const struct rkc_jb *h, const uint64_t *rec, uint8_t *out);
/* Structural check of a journal block (magic, crc, counts, reserved bytes): 0 or -EBADMSG. */
int rkc_jb_decode(const uint8_t *buf, struct rkc_jb *h);
/* Lay out a device of dev_size bytes for block_size and journal_size (0 = default) into sb
 * (offsets, sizes, nblocks). 0, or -ENOSPC (fewer than 16 blocks fit) / -EINVAL with err. */
int rkc_layout(struct rkc_sb *sb, uint64_t dev_size, uint64_t journal_size, char *err,
               size_t errlen);

/* ---- meta_index.c ---- */
/* Allocate the index for sb.nblocks blocks (all unmapped, free list empty). 0 or -ENOMEM. */
int rkc_index_init(struct rk_cache_meta *m);
void rkc_index_free(struct rk_cache_meta *m);
/* Apply one record (replay or checkpoint load) with full validation; no journal queueing.
 * 0 or -EINVAL with err naming the record. Caller holds the lock or owns m alone. */
int rkc_index_apply(struct rk_cache_meta *m, uint64_t w0, uint64_t w1, char *err, size_t errlen);
/* Rebuild the free list from every unmapped block (after load). */
void rkc_index_build_free(struct rk_cache_meta *m);
/* Push cblock (unmapped) on the free list. Lock held. */
void rkc_free_push(struct rk_cache_meta *m, uint32_t c);
/* Queue one journal record (taken by the next commit round). Lock held. */
void rkc_queue(struct rk_cache_meta *m, enum rkc_op op, uint64_t cblock, uint64_t arg);

/* ---- meta_journal.c ---- */
/* Replay the journal after checkpoint ck; sets m->next_seq past every sequence seen on disk.
 * 0 or -EBADMSG/-EINVAL/-EIO with err. */
int rkc_journal_replay(struct rk_cache_meta *m, const struct rkc_ck *ck, char *err, size_t errlen);

/* ---- meta_ckpt.c ---- */
/* Write a checkpoint of the current index to the other slot, then start a new journal epoch.
 * Called with the lock held and m->committing owned; drops the lock around the I/O. */
int rkc_ckpt_write_locked(struct rk_cache_meta *m);
/* Write block 0 of a new journal epoch (no records, seq m->next_seq) with FUA. Lock not held. */
int rkc_journal_epoch(struct rk_cache_meta *m);
/* Load the newest valid checkpoint into the (empty) index: 0 with *ck, or -EBADMSG/-EIO with
 * err naming both slots. */
int rkc_ckpt_load(struct rk_cache_meta *m, struct rkc_ck *ck, char *err, size_t errlen);

#endif
