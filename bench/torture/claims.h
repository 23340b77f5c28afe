/* What the partial parity log's replay of a degraded start claims (docs/TORTURE.md "The fast
 * driver", variant remove): per stripe row and 4 KiB column cell of the torture's raid5/raid6
 * arrays, whether the latest live log entry covering it left it as it was (rk_ppl_set_report),
 * so that a forced start can be checked against every other block. */
#ifndef RK_TORTURE_CLAIMS_H
#define RK_TORTURE_CLAIMS_H

#include <stdbool.h>
#include <stdint.h>

struct claims {
    uint32_t n, np;  /* members, parity blocks per stripe (1 or 2) */
    uint32_t slot;   /* the slot missing at the start */
    uint64_t rows;   /* stripe rows */
    uint8_t *unprov; /* rows x cells per chunk: 1 = left as it was */
    uint64_t cells;  /* cells left unproven by the last replay (claims_end) */
};

/* Set up c for an array of n members with np parity blocks per stripe and rows stripe rows
 * (chunks of WL_CHUNK_BLOCKS blocks), started without slot. Returns 0 or -ENOMEM. */
int claims_init(struct claims *c, uint32_t n, uint32_t np, uint32_t slot, uint64_t rows);
void claims_free(struct claims *c);

/* Around one open: claims_begin forgets the last replay's claims and collects the next one's
 * (process-wide: one open at a time); claims_end stops and returns the cells left unproven. */
void claims_begin(struct claims *c);
uint64_t claims_end(struct claims *c);

/* wl_skip_fn (workload.h) over a struct claims: array block b is on the missing slot, in a cell
 * the replay left as it was. Every other block must read old or new. */
bool claims_skip(void *ctx, uint64_t b);

#endif
