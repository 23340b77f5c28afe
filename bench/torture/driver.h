/* What the torture driver's files share (docs/TORTURE.md "The fast driver"): the run's
 * configuration, one level's array of member files, what one cycle found, and the checks after a
 * cut (checks.c) that rk_torture.c's cycles run. */
#ifndef RK_TORTURE_DRIVER_H
#define RK_TORTURE_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "workload.h"

#define MAX_MEMBERS 8
#define CHUNK       (WL_CHUNK_BLOCKS * STAMP_BLOCK) /* the arrays' chunk, 16 KiB */

struct cfg {
    char levels[128], variants[64];
    uint64_t cuts, seed, cut_max, member_bytes, max_ops;
    int threads, max_fail, verbose;
    unsigned flush_pct, fua_pct; /* workload mix overrides (0: defaults; workload.h) */
    double deadline;             /* seconds after start: stop cycling (0 = none) */
    double t0;
    bool nbd;
    bool no_resync; /* fail variant: stop the restart's resync before the scrub (diagnosis) */
    char dir[400];
    char logpath[450];
};

/* One level's array: its member paths and the template image (only its non-zero blocks). */
struct arr {
    const char *name;
    int level, n;
    char path[MAX_MEMBERS][480];
    uint8_t *tpl[MAX_MEMBERS]; /* member_bytes each */
    uint64_t *nz[MAX_MEMBERS]; /* non-zero 4 KiB block indexes of the template */
    uint64_t nnz[MAX_MEMBERS];
    uint64_t nblocks; /* array blocks */
};

/* What one cycle found. */
struct cyc {
    uint64_t seed, cut_after;
    bool cut;
    struct wl_verify v1, v2;
    uint64_t mism, mism_lax; /* scrub mismatches: judged, and not judged (cycle_scrub lax) */
    bool fail;
    bool refused; /* remove, rocheck: the dirty + degraded start was refused (-EUCLEAN): safe */
    bool forced;  /* remove: then started with force and its replay's claims checked */
    char why[400];
};

/* Record cy's first failure (printf-style reason) and mark the cycle failed. */
#define FAILF(cy, ...)                                                                             \
    do {                                                                                           \
        if (!(cy)->fail)                                                                           \
            snprintf((cy)->why, sizeof((cy)->why), __VA_ARGS__);                                   \
        (cy)->fail = true;                                                                         \
    } while (0)

/* The checks after the cut and the unclean close of phase 1, one per variant (checks.c). Each
 * reopens the array from a's member files and records what it found in cy (cy->fail, cy->why);
 * w holds what the workload wrote and what must have survived. */

/* fail: all members, verify, wait for the resync, scrub (0 mismatches), fail a slot, verify. */
void cycle_fail(const struct cfg *c, struct arr *a, struct wl *w, struct cyc *cy);

/* remove: the dirty + degraded start without one slot, verify, replace and rebuild that slot,
 * scrub (0 mismatches), verify. */
void cycle_remove(const struct cfg *c, struct arr *a, struct wl *w, struct cyc *cy);

/* rocheck: the read-only dirty + degraded start that reads the log, refused or accepted; when
 * accepted, verify, nothing written to the members, then the writable start, verify. */
void cycle_rocheck(const struct cfg *c, struct arr *a, struct wl *w, struct cyc *cy);

#endif
