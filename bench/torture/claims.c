/* The replay's claims of a degraded start, for the torture's verify (see claims.h). */
#include "claims.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "raid/raid5_ppl.h"
#include "stamp.h"
#include "workload.h"

#define CELLS WL_CHUNK_BLOCKS /* 4 KiB cells per chunk */

int claims_init(struct claims *c, uint32_t n, uint32_t np, uint32_t slot, uint64_t rows)
{
    *c = (struct claims){.n = n, .np = np, .slot = slot, .rows = rows};
    c->unprov = calloc(rows, CELLS);
    return c->unprov ? 0 : -ENOMEM;
}

void claims_free(struct claims *c)
{
    free(c->unprov);
    c->unprov = NULL;
}

/* rk_ppl_report_fn: the replay decided columns [lo, hi) of row. ok clears only the cells it
 * covers whole; not ok marks every cell it touches. */
static void claims_report(void *ctx, uint64_t row, uint32_t lo, uint32_t hi, bool ok)
{
    struct claims *c = ctx;
    uint32_t a = ok ? (lo + STAMP_BLOCK - 1) / STAMP_BLOCK : lo / STAMP_BLOCK;
    uint32_t b = ok ? hi / STAMP_BLOCK : (hi + STAMP_BLOCK - 1) / STAMP_BLOCK;
    for (uint32_t i = a; row < c->rows && i < b && i < CELLS; i++)
        c->unprov[row * CELLS + i] = !ok;
}

void claims_begin(struct claims *c)
{
    memset(c->unprov, 0, c->rows * CELLS);
    rk_ppl_set_report(claims_report, c);
}

uint64_t claims_end(struct claims *c)
{
    rk_ppl_set_report(NULL, NULL);
    c->cells = 0;
    for (uint64_t i = 0; i < c->rows * CELLS; i++)
        c->cells += c->unprov[i];
    return c->cells;
}

/* The layout is md's left-symmetric (docs/FORMAT.md "raid5, raid6"): stripe s has P on slot
 * n-1 - s mod n, Q after it, data chunk k on slot (P + nparity + k) mod n. */
bool claims_skip(void *ctx, uint64_t b)
{
    const struct claims *c = ctx;
    uint64_t chunk = (uint64_t)WL_CHUNK_BLOCKS * STAMP_BLOCK, sbytes = chunk * (c->n - c->np);
    uint64_t off = b * STAMP_BLOCK, row = off / sbytes;
    uint32_t k = (uint32_t)(off % sbytes / chunk), cell = (uint32_t)(off % chunk / STAMP_BLOCK);
    uint32_t p = c->n - 1 - (uint32_t)(row % c->n);
    return row < c->rows && (p + c->np + k) % c->n == c->slot && c->unprov[row * CELLS + cell];
}
