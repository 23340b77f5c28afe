/* Helpers shared by the report renderers (render.c: text, JSON, CSV, files; render_html.c: SVG,
 * HTML). */
#ifndef RK_BENCH_RENDER_H
#define RK_BENCH_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench.h"

/* The long form of the "host-bound" mark. */
#define RENDER_HOST_BOUND_NOTE                                                                     \
    "host-bound: below 90% of what the modelled members allow, or within 10% of the noop "         \
    "ceiling (harness limit, not the model)"

/* A block size as the seeds write it ("16KB", "1MB", "512B") into buf. */
void render_bs(uint32_t bs, char *buf, size_t len);
/* A row of job's table: configuration c was measured for that job. */
bool render_has_row(const struct bench_report *r, int c, int job);
/* What to say about cell (c, j): its own note (a failure), "host-bound", or its configuration's
 * note. The text lives in r. */
const char *render_cell_note(const struct bench_report *r, int c, int j);

#endif
