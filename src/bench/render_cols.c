/* The columns every report format shares beside the measured figure (docs/BENCHMARKS.md
 * "Reports"): the seed's figure of the same row and the ratio to it, the noisy mark, the headline
 * figure of a row (the model's prediction for a host-bound row), the host-bound words and the
 * configuration's mapping to the study. Used by render.c (text, JSON, CSV) and render_html.c. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/bench.h"
#include "bench/render.h"

/* A seed label names a configuration label: equal, or equal up to the member count suffix
 * (" (4)") that raidkit's labels carry ("RAID 1" names "RAID 1 (4)"). */
static bool render_same_label(const char *seed, const char *config)
{
    size_t n = strlen(seed);
    return !strncmp(seed, config, n) && (!config[n] || !strncmp(config + n, " (", 2));
}

/* Whether the seed row label names configuration c: the suite's seed_config maps the label to
 * c's name (and then to no other configuration), or else the labels agree. */
static bool render_seed_names(const struct bench_report *r, const char *label, int c)
{
    const struct bench_suite *s = r->suite;
    for (int i = 0; i < s->nseed_configs; i++)
        if (!strcmp(s->seed_configs[i].label, label))
            return !strcmp(s->seed_configs[i].config, r->configs[c].name);
    return render_same_label(label, r->configs[c].label);
}

/* The index of the seed row beside configuration c in job's table (the last that names it), or
 * -1. */
static int render_seed_index(const struct bench_report *r, int c, int job)
{
    const struct bench_job *bj = &r->suite->jobs[job];
    int k = -1;
    for (int i = 0; i < bj->nseed; i++)
        if (render_seed_names(r, bj->seed[i].label, c))
            k = i;
    return k;
}

double render_seed_mbs(const struct bench_report *r, int c, int job)
{
    int i = render_seed_index(r, c, job);
    return i < 0 ? 0 : r->suite->jobs[job].seed[i].mbs;
}

const char *render_seed_label(const struct bench_report *r, int c, int job)
{
    int i = render_seed_index(r, c, job);
    return i < 0 ? NULL : r->suite->jobs[job].seed[i].label;
}

const char *render_seed_other_label(const struct bench_report *r, int c, int job)
{
    const char *l = render_seed_label(r, c, job);
    return l && !render_same_label(l, r->configs[c].label) ? l : NULL;
}

int render_seed_config(const struct bench_report *r, int job, int seed)
{
    for (int c = 0; c < r->nconfigs; c++)
        if (render_has_row(r, c, job) && render_seed_index(r, c, job) == seed)
            return c;
    return -1;
}

void render_text_seed_pairs(const struct bench_report *r, int job, FILE *f)
{
    bool head = false;
    for (int c = 0; c < r->nconfigs; c++) {
        const char *l = render_has_row(r, c, job) ? render_seed_other_label(r, c, job) : NULL;
        if (!l)
            continue;
        fprintf(f, "%s %s = %s (seed)",
                head ? ";"
                     : "[seed X, xR]: the study's row of the "
                       "configuration, xR = measured / seed:",
                r->configs[c].label, l);
        head = true;
    }
    if (head)
        fputs("\n", f);
}

bool render_noisy(const struct bench_cell *cell)
{
    return cell->ntrials >= 2 && cell->rsd > BENCH_RSD_LIMIT;
}

bool render_model_headline(const struct bench_cell *cell)
{
    return cell->host_bound && cell->model_mbs > 0;
}

double render_headline(const struct bench_cell *cell)
{
    return render_model_headline(cell) ? cell->model_mbs : cell->mean;
}

const char *render_hb_words(const struct bench_cell *cell)
{
    if (!cell->host_bound)
        return "";
    if (cell->model_mbs > 0)
        return "host-bound: the measured figure is this host's limit, not the layout's; the "
               "model's prediction is the headline";
    return "host-bound: the measured figure is this host's limit, not the layout's";
}

const char *render_mapping(const struct bench_report *r, int c, char *buf, size_t len)
{
    const struct bench_config *bc = &r->configs[c];
    buf[0] = '\0';
    if (strcmp(bc->kind, "raidkit"))
        return buf;
    if (!strcmp(bc->name, "raid1") && bc->members > 2)
        snprintf(buf, len,
                 "%s: a %d-way mirror (every member holds a copy); btrfs RAID-1 keeps 2 "
                 "copies over the disks, which raid10 matches here.",
                 bc->label, bc->members);
    else if (!strcmp(bc->name, "linear") && bc->members > 1)
        snprintf(buf, len,
                 "%s: concatenation, a test region smaller than one member sits on one "
                 "member; the seed's \"4 Disks, Non-RAID\" (btrfs single) spreads a file "
                 "over all disks, which raid0 matches here.",
                 bc->label);
    return buf;
}

const char *render_mapping_short(const struct bench_report *r, int c)
{
    const struct bench_config *bc = &r->configs[c];
    if (strcmp(bc->kind, "raidkit"))
        return "comparison";
    if (!strcmp(bc->name, "raid1") && bc->members > 2)
        return "differs: more copies than the study (reason under the table)";
    if (!strcmp(bc->name, "linear") && bc->members > 1)
        return "differs: not spread over the members (reason under the table)";
    return "as the study";
}

/* How far model / seed may be from 1 and still count as "near" the seed. */
#define RENDER_SEED_NEAR 0.15

/* Whether the run's profile is the study's disk: the "Single Disk" row of job j (if the table
 * has one with a seed figure and a prediction) predicts within RENDER_SEED_NEAR of the seed. */
static bool render_profile_matches(const struct bench_report *r, int j)
{
    for (int c = 0; c < r->nconfigs; c++) {
        const struct bench_cell *cell = &r->cells[c][j];
        double seed = render_seed_mbs(r, c, j);
        if (strcmp(r->configs[c].label, "Single Disk") || seed <= 0 || cell->model_mbs <= 0 ||
            !render_has_row(r, c, j))
            continue;
        return fabs(cell->model_mbs / seed - 1) <= RENDER_SEED_NEAR;
    }
    return true;
}

static const struct render_seed_reason render_seed_reasons[] = {
    {"N", "near: the prediction is within 15% of the seed"},
    {"M", "mapping: the configuration differs from the study's (the reason is printed below)"},
    {"P", "profile: the model's disk is not the study's (its Single Disk row is more than 15% "
          "off the seed), so no row of this table compares"},
    {"S", "study scaled less: the model predicts more than the study's btrfs array reached; the "
          "model has no file system (CoW, checksums, btrfs's RAID code) and no shared controller, "
          "bus or CPU limit, which the study's multi-disk figure includes"},
    {"B", "study beat the model: the study's btrfs array reached more than the model gives "
          "raidkit's layout; raidkit's member I/O for this level costs more than btrfs's "
          "(read-modify-write with a partial parity log and bitmap writes, one member per "
          "sequential chunk) or the study's disks did better than one calibrated disk"},
    {NULL, NULL},
};

const struct render_seed_reason *render_model_seed_reason(const struct bench_report *r, int c,
                                                          int j)
{
    const struct bench_cell *cell = &r->cells[c][j];
    double seed = render_seed_mbs(r, c, j);
    if (seed <= 0 || cell->model_mbs <= 0 || r->suite->jobs[j].tool[0])
        return NULL;
    double q = cell->model_mbs / seed;
    int k = !strncmp(render_mapping_short(r, c), "differs", 7) ? 1
            : !render_profile_matches(r, j)                    ? 2
            : fabs(q - 1) <= RENDER_SEED_NEAR                  ? 0
            : q > 1                                            ? 3
                                                               : 4;
    return &render_seed_reasons[k];
}

const struct render_seed_reason *render_seed_reason_table(void)
{
    return render_seed_reasons;
}

const char *render_prediction_none(const struct bench_report *r, int c, int j)
{
    const struct bench_config *bc = &r->configs[c];
    if (r->cells[c][j].model_mbs > 0)
        return "";
    bool cache = !strcmp(bc->kind, "cache"); /* never predicted: raw or filesystem */
    if (r->suite->jobs[j].tool[0])
        return cache ? RENDER_NO_FS_MODEL "; on a cache configuration the cache tier (admission, "
                                          "hits, write-back) is not predicted either"
                     : RENDER_NO_FS_MODEL;
    if (cache)
        return "no model: the cache tier (admission, hits, write-back) is not predicted; the "
               "configuration's devices run their own emulated models";
    if (!r->model_name[0])
        return "no model: the run has no --model";
    if (strcmp(bc->kind, "raidkit"))
        return "no model: not a modelled configuration";
    return "no model figure: the profile is not an SSD (the HDD head's timing is not counted)";
}

/* A number rounded to 3 decimals, or null for "not known". */
static void render_json_num(cJSON *x, const char *key, double v, bool known)
{
    if (known)
        cJSON_AddNumberToObject(x, key, round(v * 1000.0) / 1000.0);
    else
        cJSON_AddNullToObject(x, key);
}

void render_json_row_extra(cJSON *x, const struct bench_report *r, int c, int j)
{
    const struct bench_cell *cell = &r->cells[c][j];
    double seed = render_seed_mbs(r, c, j);
    const char *label = render_seed_label(r, c, j);
    if (label)
        cJSON_AddStringToObject(x, "seed_label", label);
    else
        cJSON_AddNullToObject(x, "seed_label");
    render_json_num(x, "seed_mbs", seed, seed > 0);
    render_json_num(x, "seed_ratio", seed > 0 ? cell->mean / seed : 0, seed > 0);
    render_json_num(x, "model_seed_ratio", seed > 0 ? cell->model_mbs / seed : 0,
                    seed > 0 && cell->model_mbs > 0);
    cJSON_AddNumberToObject(x, "headline_mbs", round(render_headline(cell) * 1000.0) / 1000.0);
    cJSON_AddStringToObject(x, "headline", render_model_headline(cell) ? "model" : "measured");
    cJSON_AddStringToObject(x, "host_bound_words", render_hb_words(cell));
    cJSON_AddBoolToObject(x, "noisy", render_noisy(cell));
    cJSON_AddStringToObject(x, "mapping", render_mapping_short(r, c));
    char why[300];
    cJSON_AddStringToObject(x, "mapping_reason", render_mapping(r, c, why, sizeof(why)));
    const struct render_seed_reason *why_seed = render_model_seed_reason(r, c, j);
    if (why_seed) {
        cJSON_AddStringToObject(x, "model_seed_reason", why_seed->code);
        cJSON_AddStringToObject(x, "model_seed_why", why_seed->words);
    } else {
        cJSON_AddNullToObject(x, "model_seed_reason");
        cJSON_AddNullToObject(x, "model_seed_why");
    }
    render_json_num(x, "prediction", cell->model_mbs, cell->model_mbs > 0);
    cJSON_AddStringToObject(x, "prediction_reason", render_prediction_none(r, c, j));
    render_json_num(x, "p50_us", cell->p50_us, cell->p50_us > 0);
    render_json_num(x, "p99_us", cell->p99_us, cell->p99_us > 0);
}

void render_csv_row_extra(FILE *f, const struct bench_report *r, int c, int j)
{
    const struct bench_cell *cell = &r->cells[c][j];
    const struct bench_config *bc = &r->configs[c];
    double seed = render_seed_mbs(r, c, j);
    if (cell->model_mbs > 0)
        fprintf(f, ",%.3f", cell->model_mbs);
    else
        fputs(",", f);
    fprintf(f, ",%s",
            render_model_headline(cell) ? "host-bound; the model's prediction is the headline"
            : cell->host_bound          ? "host-bound; this host's limit, not the layout's"
                                        : "");
    if (seed > 0)
        fprintf(f, ",%.3f,%.3f", seed, cell->mean / seed);
    else
        fputs(",,", f);
    if (cell->p50_us > 0)
        fprintf(f, ",%.1f,%.1f", cell->p50_us, cell->p99_us);
    else
        fputs(",,", f);
    fprintf(f, ",%s", render_noisy(cell) ? "yes" : "no");
    if (bc->has_risk && isfinite(bc->mttdl_hours))
        fprintf(f, ",%.6g", bc->mttdl_hours);
    else
        fprintf(f, ",%s", bc->has_risk ? "inf" : "");
    if (bc->has_risk)
        fprintf(f, ",%.6g", bc->p_loss_rebuild);
    else
        fputs(",", f);
    fputc(',', f);
    if (seed > 0)
        render_csv_field(f, render_seed_label(r, c, j)); /* "4 Disks, Non-RAID" is quoted */
}
