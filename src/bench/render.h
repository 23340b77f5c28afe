/* Helpers shared by the report renderers (render.c: text, JSON, CSV, files; render_html.c: SVG,
 * HTML). */
#ifndef RK_BENCH_RENDER_H
#define RK_BENCH_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* The seed's figure (MB/s, or the job's unit) for configuration c in job's table: the seed row
 * the suite's seed_config maps to the configuration's name, else the one whose label names the
 * configuration's label (equal, or up to raidkit's " (N)" member suffix); 0 = none. */
double render_seed_mbs(const struct bench_report *r, int c, int job);
/* The study's row label of that seed figure (NULL = none): the suite's seed_config maps it to
 * the configuration, or it is the configuration's label. Text lives in r's suite. */
const char *render_seed_label(const struct bench_report *r, int c, int job);
/* render_seed_label when it is not the configuration's own label (a seed_config pair), else
 * NULL: the reports name the study's row there. */
const char *render_seed_other_label(const struct bench_report *r, int c, int job);
/* The configuration (index) whose row of job's table carries seed row number seed, or -1. */
int render_seed_config(const struct bench_report *r, int job, int seed);
/* Under a text table, one line naming the study's row beside each configuration whose label is
 * not the study's ("raidkit cache writeback = BCache Writeback (seed)"); nothing if none. */
void render_text_seed_pairs(const struct bench_report *r, int job, FILE *f);
/* The cell's RSD stayed above BENCH_RSD_LIMIT percent (at least 2 trials): marked noisy. */
bool render_noisy(const struct bench_cell *cell);
/* A host-bound cell with a prediction: the model's figure is the row's headline. */
bool render_model_headline(const struct bench_cell *cell);
/* The row's headline figure: model_mbs when render_model_headline, else the measured mean. */
double render_headline(const struct bench_cell *cell);
/* The host-bound mark in words ("" when the cell is not host-bound); static text. */
const char *render_hb_words(const struct bench_cell *cell);
/* Why configuration c differs from the study it is compared with, as one sentence into buf
 * (len bytes; "" when it matches or is not a raidkit array). Returns buf. */
const char *render_mapping(const struct bench_report *r, int c, char *buf, size_t len);
/* The per-row mapping statement: "as the study", "differs: ..." or "comparison"; static text. */
const char *render_mapping_short(const struct bench_report *r, int c);

/* Why a filesystem row has no prediction (printed once under such a table, and the JSON's
 * prediction_reason). */
#define RENDER_NO_FS_MODEL                                                                         \
    "no model for filesystem workloads: the device model predicts the raw volume's member I/O; "   \
    "a filesystem's own I/O pattern (journal, metadata, page cache) is not modelled"

/* A reason code for model / seed of a row (docs/BENCHMARKS.md "Model against the seed"): code is
 * one letter, words the legend line; static text. */
struct render_seed_reason {
    const char *code, *words;
};
/* The reason for cell (c, j)'s model / seed: N near (within 15%), M configuration mapping, P the
 * profile is not the study's disk (judged by the table's Single Disk row), S the study scaled
 * less than the model, B the study beat the model. NULL when the row has no seed figure or no
 * prediction, or is a filesystem row. */
const struct render_seed_reason *render_model_seed_reason(const struct bench_report *r, int c,
                                                          int j);
/* Every reason, in legend order, ended by an entry with code NULL. */
const struct render_seed_reason *render_seed_reason_table(void);
/* Why cell (c, j) has no prediction ("" when it has one): RENDER_NO_FS_MODEL for a filesystem
 * job (with the cache tier's missing model added on a cache configuration), the cache tier's
 * missing model on a cache configuration, else no --model, not modelled, or an HDD profile.
 * Static text. */
const char *render_prediction_none(const struct bench_report *r, int c, int j);

/* The shared columns of a JSON result object x for cell (c, j): seed_mbs, seed_ratio,
 * model_seed_ratio (null without a seed row), headline_mbs, headline ("model"/"measured"),
 * host_bound_words, noisy, mapping, mapping_reason (the sentence, "" if none), p50_us, p99_us (null
 * when unknown), seed_label (render_seed_label; null without a seed figure). */
struct cJSON;
void render_json_row_extra(struct cJSON *x, const struct bench_report *r, int c, int j);
/* A CSV field: quoted when it holds a comma, quote or newline. */
void render_csv_field(FILE *f, const char *s);
/* The CSV columns appended after "note" for cell (c, j), each preceded by a comma: model_mbs,
 * host_bound_words, seed_mbs, seed_ratio, p50_us, p99_us, noisy, mttdl_hours ("inf" when
 * infinite), p_loss_rebuild, seed_label (render_seed_label); empty fields when not known. */
void render_csv_row_extra(FILE *f, const struct bench_report *r, int c, int j);

#endif
