/* Bench reports for fixed inputs: the text tables match tests/golden/bench_seed_tables.txt (made
 * from the seeds' own rows), JSON validates against docs/bench-report.schema.json, SVG is XML,
 * the HTML has one chart per job, and host-bound rows are marked in every format. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "bench/bench.h"
#include "bench/render.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char tmp[4096];
    size_t k;
    while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0)
        fwrite(tmp, 1, k, m);
    fclose(m);
    fclose(f);
    return buf;
}

static void src_path(const char *rel, char *buf, size_t len)
{
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    snprintf(buf, len, "%s/%s", src ? src : ".", rel);
}

/* A one-job report with the given rows (one trial each, so mean = value). */
static void make_report(struct bench_report *r, struct bench_suite *s, const char *fio,
                        const char *title, uint32_t bs, int iodepth, const char *const *labels,
                        const double *vals, int n)
{
    memset(r, 0, sizeof(*r));
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "fixed");
    snprintf(s->description, sizeof(s->description), "fixed inputs");
    snprintf(s->reproduces, sizeof(s->reproduces), "seed tables");
    s->njobs = 1;
    snprintf(s->jobs[0].name, sizeof(s->jobs[0].name), "job0");
    snprintf(s->jobs[0].title, sizeof(s->jobs[0].title), "%s", title);
    snprintf(s->jobs[0].rw, sizeof(s->jobs[0].rw), "randread");
    s->jobs[0].bs = bs;
    s->jobs[0].iodepth = iodepth;
    s->jobs[0].size = 1ull << 30;
    s->jobs[0].runtime = 20;
    r->suite = s;
    snprintf(r->fio_version, sizeof(r->fio_version), "%s", fio);
    snprintf(r->raidkit_version, sizeof(r->raidkit_version), "0.0.test");
    r->min_trials = 1;
    r->members = 4;
    r->nconfigs = n;
    for (int i = 0; i < n; i++) {
        snprintf(r->configs[i].name, sizeof(r->configs[i].name), "c%d", i);
        snprintf(r->configs[i].label, sizeof(r->configs[i].label), "%s", labels[i]);
        snprintf(r->configs[i].kind, sizeof(r->configs[i].kind), "raidkit");
        r->cells[i][0].ntrials = 1;
        r->cells[i][0].trials[0] = vals[i];
        r->cells[i][0].read_mbs[0] = vals[i];
    }
    bench_report_finish(r);
}

static void test_text_matches_seed_layout(void **state)
{
    (void)state;
    static const char *const l1[] = {
        "Single Disk", "4 Disks, Non-RAID", "RAID 0", "RAID 1", "RAID 1+0", "RAID 5", "RAID 6"};
    static const double v1[] = {236.89, 787.97, 758.26, 233.00, 469.10, 742.06, 653.54};
    static const char *const l2[] = {"120GB Mushkin SSD", "Seagate ST500DM002-1BD14",
                                     "BCache Writethrough", "BCache Writeback"};
    static const double v2[] = {139.76, 1.47, 1.48, 1.50};
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    char *buf = NULL, path[1024];
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    make_report(r, s, "2.1.11", "Random Read", 16384, 64, l1, v1, 7);
    assert_int_equal(bench_render_text_job(r, 0, m), 0);
    fputc('\n', m);
    make_report(r, s, "2.1.13", "Random Write", 4096, 1, l2, v2, 4);
    assert_int_equal(bench_render_text_job(r, 0, m), 0);
    fclose(m);
    src_path("tests/golden/bench_seed_tables.txt", path, sizeof(path));
    char *want = slurp(path);
    assert_non_null(want);
    if (strcmp(want, buf) != 0)
        print_error("--- want\n%s--- got\n%s", want, buf);
    assert_string_equal(want, buf);
    free(want);
    free(buf);
    free(r);
    free(s);
}

/* ---- a small JSON Schema subset: type, required, properties, items, enum, const ---- */
static bool type_ok(const cJSON *v, const char *t)
{
    if (!strcmp(t, "object"))
        return cJSON_IsObject(v);
    if (!strcmp(t, "array"))
        return cJSON_IsArray(v);
    if (!strcmp(t, "string"))
        return cJSON_IsString(v);
    if (!strcmp(t, "boolean"))
        return cJSON_IsBool(v);
    if (!strcmp(t, "null"))
        return cJSON_IsNull(v);
    if (!strcmp(t, "number"))
        return cJSON_IsNumber(v);
    if (!strcmp(t, "integer"))
        return cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)v->valuedouble;
    return false;
}

static int validate(const cJSON *schema, const cJSON *v, const char *where)
{
    int bad = 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (cJSON_IsString(t) && !type_ok(v, t->valuestring)) {
        print_error("%s: not of type %s\n", where, t->valuestring);
        return 1;
    }
    if (cJSON_IsArray(t)) {
        bool any = false;
        const cJSON *e;
        cJSON_ArrayForEach(e, t) any |= type_ok(v, e->valuestring);
        if (!any) {
            print_error("%s: of none of the allowed types\n", where);
            return 1;
        }
    }
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) {
        const cJSON *en = cJSON_GetObjectItemCaseSensitive(schema, "enum");
        const cJSON *co = cJSON_GetObjectItemCaseSensitive(schema, "const");
        if (en && cJSON_IsString(v)) {
            bool hit = false;
            const cJSON *e;
            cJSON_ArrayForEach(e, en) hit |= !strcmp(e->valuestring, v->valuestring);
            if (!hit) {
                print_error("%s: '%s' not in enum\n", where, v->valuestring);
                bad++;
            }
        }
        if (co && cJSON_IsString(v) && strcmp(co->valuestring, v->valuestring)) {
            print_error("%s: not the constant %s\n", where, co->valuestring);
            bad++;
        }
        return bad;
    }
    if (cJSON_IsObject(v)) {
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required"), *e;
        cJSON_ArrayForEach(e, req)
        {
            if (!cJSON_GetObjectItemCaseSensitive(v, e->valuestring)) {
                print_error("%s: missing required key %s\n", where, e->valuestring);
                bad++;
            }
        }
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
        cJSON_ArrayForEach(e, props)
        {
            const cJSON *child = cJSON_GetObjectItemCaseSensitive(v, e->string);
            char w[256];
            snprintf(w, sizeof(w), "%s.%s", where, e->string);
            if (child)
                bad += validate(e, child, w);
        }
    } else {
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items"), *e;
        int i = 0;
        cJSON_ArrayForEach(e, v)
        {
            char w[256];
            snprintf(w, sizeof(w), "%s[%d]", where, i++);
            if (items)
                bad += validate(items, e, w);
        }
    }
    return bad;
}

/* A two-job report with a noop ceiling, a host-bound row, a normal row and a skipped config. */
static void make_full(struct bench_report *r, struct bench_suite *s)
{
    memset(r, 0, sizeof(*r));
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "fixed2");
    snprintf(s->description, sizeof(s->description), "two jobs <&> \"quoted\"");
    snprintf(s->reproduces, sizeof(s->reproduces), "nothing, a test");
    s->njobs = 2;
    const char *names[] = {"randread", "write"}, *titles[] = {"Random Read", "Sequential Write"};
    for (int j = 0; j < 2; j++) {
        snprintf(s->jobs[j].name, sizeof(s->jobs[j].name), "%s", names[j]);
        snprintf(s->jobs[j].title, sizeof(s->jobs[j].title), "%s", titles[j]);
        snprintf(s->jobs[j].rw, sizeof(s->jobs[j].rw), "%s", j ? "write" : "randread");
        s->jobs[j].bs = j ? 65536 : 4096;
        s->jobs[j].iodepth = 4;
        s->jobs[j].size = 32u << 20;
        s->jobs[j].runtime = 1;
    }
    r->suite = s;
    snprintf(r->fio_version, sizeof(r->fio_version), "3.33");
    snprintf(r->raidkit_version, sizeof(r->raidkit_version), "0.0.test");
    snprintf(r->model_name, sizeof(r->model_name), "sata-ssd-2014");
    r->model_json = strdup("{\"name\":\"sata-ssd-2014\",\"kind\":\"ssd\",\"read_iops\":50000}");
    snprintf(r->target, sizeof(r->target), "model sata-ssd-2014");
    r->min_trials = 3;
    r->members = 4;
    bench_machine_probe(&r->machine);
    const char *cn[] = {"noop", "raid0", "raid1", "raid6"},
               *kinds[] = {"noop", "raidkit", "raidkit", "raidkit"};
    const char *labels[] = {"noop (ceiling)", "RAID 0 (4)", "RAID 1 (4)", "RAID 6 (4)"};
    /* randread: noop 1000, raid0 950 (host-bound), raid1 400; write: noop 800, raid0 500. */
    const double base[4][2] = {{1000, 800}, {950, 500}, {400, 300}, {0, 0}};
    r->nconfigs = 4;
    for (int c = 0; c < 4; c++) {
        snprintf(r->configs[c].name, sizeof(r->configs[c].name), "%s", cn[c]);
        snprintf(r->configs[c].kind, sizeof(r->configs[c].kind), "%s", kinds[c]);
        snprintf(r->configs[c].label, sizeof(r->configs[c].label), "%s", labels[c]);
        r->configs[c].members = 4;
        if (c == 3) {
            r->configs[c].skipped = true;
            snprintf(r->configs[c].note, sizeof(r->configs[c].note), "skipped: not built");
            continue;
        }
        for (int j = 0; j < 2; j++) {
            struct bench_cell *cell = &r->cells[c][j];
            if (c == 2 && j == 1) {
                /* fio failed for raid1/write: no trial, a note. */
                snprintf(cell->note, sizeof(cell->note), "fio failed (status 1): boom");
                continue;
            }
            cell->ntrials = 3;
            for (int t = 0; t < 3; t++) {
                cell->trials[t] = base[c][j] + (t - 1) * 5.0;
                cell->read_mbs[t] = j ? 0 : cell->trials[t];
                cell->write_mbs[t] = j ? cell->trials[t] : 0;
            }
        }
    }
    bench_report_finish(r);
}

/* The columns after the bar: [model], [seed X, xR] for a seed row of the same label, "~" for
 * an RSD above the limit, each explained once under the table; the seed layout before the bar
 * stays as it is. */
static void test_text_model_seed_noisy(void **state)
{
    (void)state;
    static const char *const l[] = {"RAID 1", "RAID 0"};
    static const double v[] = {216.36, 700.00};
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    char *buf = NULL;
    size_t len = 0;
    make_report(r, s, "3.33", "Random Read", 16384, 64, l, v, 2);
    s->jobs[0].nseed = 1;
    snprintf(s->jobs[0].seed[0].label, sizeof(s->jobs[0].seed[0].label), "RAID 1");
    s->jobs[0].seed[0].mbs = 233.00;
    r->cells[0][0].model_mbs = 950.0;
    r->cells[0][0].host_bound = true;
    r->cells[1][0].ntrials = 4;
    for (int t = 0; t < 4; t++)
        r->cells[1][0].trials[t] = 600.0 + 70.0 * t;
    r->cells[1][0].rsd = bench_rsd(r->cells[1][0].trials, 4);
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_text_job(r, 0, m), 0);
    fclose(m);
    assert_non_null(strstr(buf, "216.36 |"));
    assert_non_null(strstr(buf, " *  [model 950.00]  [seed 233.00, x0.93]\n"));
    assert_non_null(strstr(buf, " RAID 0 "));
    assert_non_null(strstr(buf, "~ noisy: the relative standard deviation stayed above 3.5%"));
    assert_non_null(strstr(buf, "% (4 trials);"));
    assert_non_null(strstr(buf, "RAID 1 (seed) ."));
    assert_non_null(strstr(buf, " 233.00 |"));
    assert_non_null(strstr(buf, "read the [model] column"));
    assert_non_null(strstr(buf, "[model X]: the MB/s the device model allows"));
    free(buf);
    free(r);
    free(s);
}

static void test_host_bound_and_stats(void **state)
{
    (void)state;
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    make_full(r, s);
    assert_false(r->cells[0][0].host_bound); /* the ceiling itself */
    assert_true(r->cells[1][0].host_bound);  /* 950 >= 0.9 * 1000 */
    assert_false(r->cells[2][0].host_bound);
    assert_false(r->cells[1][1].host_bound); /* 500 < 720 */
    assert_true(r->cells[1][0].mean == 950.0);
    assert_true(r->cells[1][0].se > 2.88 && r->cells[1][0].se < 2.89); /* 5/sqrt(3) */

    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    bench_render_text(r, m);
    fclose(m);
    assert_non_null(strstr(buf, "RAID 0 (4) ..... 950.00 |"));
    assert_non_null(strstr(buf, "= *\n"));
    assert_non_null(strstr(buf, "* host-bound"));
    assert_non_null(strstr(buf, "raid6: skipped: not built"));
    assert_null(strstr(buf, "RAID 6 (4) ."));
    assert_non_null(strstr(buf, "\nFailed:\n  raid1 write: fio failed (status 1): boom\n"));
    free(buf);

    buf = NULL;
    m = open_memstream(&buf, &len);
    bench_render_csv(r, m);
    fclose(m);
    assert_non_null(strstr(buf, "randread,Random Read,randread,4096,4,raid0,RAID 0 (4),3,950.000,"
                                "2.887,5.000,0.53,yes,945.000 950.000 955.000,host-bound,,"
                                "host-bound; this host's limit, not the layout's,,,,,no,,,,\n"));
    free(buf);
    free(r->model_json);
    free(r);
    free(s);
}

static void test_json_schema(void **state)
{
    (void)state;
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    char path[1024];
    make_full(r, s);
    char *js = bench_render_json(r);
    assert_non_null(js);
    src_path("docs/bench-report.schema.json", path, sizeof(path));
    char *st = slurp(path);
    assert_non_null(st);
    cJSON *schema = cJSON_Parse(st), *doc = cJSON_Parse(js);
    assert_non_null(schema);
    assert_non_null(doc);
    assert_int_equal(validate(schema, doc, "$"), 0);
    /* The validator itself catches a missing key and a wrong type. */
    cJSON_DeleteItemFromObject(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "jobs"), 0), "bs");
    cJSON_ReplaceItemInObject(doc, "members", cJSON_CreateString("4"));
    assert_int_equal(validate(schema, doc, "$"), 2);
    /* Every raw trial is there. */
    cJSON *doc2 = cJSON_Parse(js);
    cJSON *res =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc2, "jobs"), 0), "results");
    assert_int_equal(cJSON_GetArraySize(res), 3);
    cJSON *raid0 = cJSON_GetArrayItem(res, 1);
    assert_string_equal(cJSON_GetObjectItem(raid0, "config")->valuestring, "raid0");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(raid0, "trials")), 3);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(raid0, "host_bound")));
    cJSON *fails = cJSON_GetObjectItem(doc2, "failures");
    assert_int_equal(cJSON_GetArraySize(fails), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(fails, 0), "job")->valuestring,
                        "write");
    /* The failed cell is not a result row. */
    res = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc2, "jobs"), 1), "results");
    assert_int_equal(cJSON_GetArraySize(res), 2);
    assert_non_null(strstr(cJSON_GetObjectItem(raid0, "note")->valuestring, "host-bound"));
    cJSON_Delete(doc2);
    cJSON_Delete(doc);
    cJSON_Delete(schema);
    free(st);
    free(js);
    free(r->model_json);
    free(r);
    free(s);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void test_svg_html(void **state)
{
    (void)state;
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    char dir[] = "/tmp/rk-bench-render-XXXXXX", err[256] = "", path[512];
    make_full(r, s);
    assert_non_null(mkdtemp(dir));
    assert_int_equal(bench_write_reports(r, dir, BENCH_FMT_ALL, err, sizeof(err)), 0);
    const char *files[] = {"report.txt",   "report.json", "report.csv",
                           "randread.svg", "write.svg",   "report.html"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        assert_int_equal(access(path, R_OK), 0);
    }
    /* SVG and (X)HTML-ish charts parse as XML when the system python is there. */
    if (access("/usr/bin/python3", X_OK) == 0) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "/usr/bin/python3 -c 'import sys,xml.etree.ElementTree as E; "
                 "[E.parse(f) for f in sys.argv[1:]]' %s/randread.svg %s/write.svg",
                 dir, dir);
        assert_int_equal(system(cmd), 0);
    }
    snprintf(path, sizeof(path), "%s/report.html", dir);
    char *html = slurp(path);
    assert_non_null(html);
    assert_int_equal(count(html, "<svg "), s->njobs);
    assert_int_equal(count(html, "<table class=\"res\">"), s->njobs);
    /* Self-contained: no external scripts, styles or images. */
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "<link"));
    assert_null(strstr(html, "src="));
    assert_non_null(strstr(html, "host-bound"));
    assert_non_null(strstr(html, "<b>raid1 write</b>: fio failed"));
    assert_non_null(strstr(html, "two jobs &lt;&amp;&gt; &quot;quoted&quot;"));
    snprintf(path, sizeof(path), "%s/randread.svg", dir);
    char *svg = slurp(path);
    assert_int_equal(count(svg, "<rect x="), 3); /* three measured rows */
    free(svg);
    free(html);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    free(r->model_json);
    free(r);
    free(s);
}

static void test_formats(void **state)
{
    (void)state;
    unsigned f = 0;
    assert_int_equal(bench_parse_formats("text,json", &f), 0);
    assert_int_equal(f, BENCH_FMT_TEXT | BENCH_FMT_JSON);
    assert_int_equal(bench_parse_formats("svg,html,csv", &f), 0);
    assert_int_equal(f, BENCH_FMT_SVG | BENCH_FMT_HTML | BENCH_FMT_CSV);
    assert_int_equal(bench_parse_formats("pdf", &f), -EINVAL);
    assert_int_equal(bench_parse_formats("", &f), -EINVAL);
    assert_int_equal(bench_parse_formats("text,", &f), 0);
}

/* A fixed report with seed rows, predictions, a host-bound row, a noisy row and latencies: the
 * seed figure, the ratio, the prediction, the headline and the noisy mark are in every format. */
static void make_seeded(struct bench_report *r, struct bench_suite *s)
{
    make_full(r, s);
    struct bench_job *j = &s->jobs[0];
    j->nseed = 2;
    snprintf(j->seed[0].label, sizeof(j->seed[0].label), "RAID 0");
    j->seed[0].mbs = 760.0;
    j->seed[0].ref_only = true;
    snprintf(j->seed[1].label, sizeof(j->seed[1].label), "RAID 1");
    j->seed[1].mbs = 233.0;
    j->seed[1].ref_only = true;
    r->cells[1][0].model_sum = 1200.0; /* raid0: host-bound, the prediction is the headline */
    r->cells[1][0].model_n = 1;
    r->cells[2][0].model_sum = 380.0; /* raid1: measured 400, noisy */
    r->cells[2][0].model_n = 1;
    for (int t = 0; t < 3; t++)
        r->cells[2][0].trials[t] = r->cells[2][0].read_mbs[t] = 300.0 + 100.0 * t;
    r->cells[2][0].p50_us = 12.5;
    r->cells[2][0].p99_us = 99.0;
    r->cells[2][0].lat_n = 3;
    snprintf(j->note, sizeof(j->note), "a <study> note, here"); /* suite key `note` */
    bench_report_finish(r);
}

static void test_seed_prediction_columns(void **state)
{
    (void)state;
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    char *buf = NULL;
    size_t len = 0;
    make_seeded(r, s);
    assert_true(r->cells[1][0].host_bound);
    assert_false(r->cells[2][0].host_bound);

    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_text_job(r, 0, m), 0);
    fclose(m);
    assert_non_null(strstr(buf, " *  [model 1200.00]  [seed 760.00, x1.25]\n"));
    assert_non_null(strstr(buf, "  [model 380.00]  [seed 233.00, x1.72]\n"));
    assert_non_null(strstr(buf, "~ noisy:"));
    assert_non_null(strstr(buf, " RAID 1 (4) 25.0% (3 trials);"));
    assert_non_null(strstr(buf, "RAID 1 (4): a 4-way mirror"));
    assert_non_null(strstr(buf, "\nNote: a <study> note, here\n")); /* once, under the table */
    assert_null(strstr(strstr(buf, "Note: a <study>") + 1, "Note: a <study>"));
    free(buf);

    buf = NULL;
    m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_csv(r, m), 0);
    fclose(m);
    /* New columns at the end of the header; the old ones keep their places. */
    assert_non_null(strstr(buf, "rsd_pct,host_bound,raw_trials_mbs,note,model_mbs,"
                                "host_bound_words,seed_mbs,seed_ratio,p50_us,p99_us,noisy,"
                                "mttdl_hours,p_loss_rebuild,seed_label,table_note\n"));
    assert_non_null(strstr(buf, ",RAID 0 (4),3,950.000,"));
    assert_non_null(strstr(buf, ",host-bound,1200.000,host-bound; the model's prediction is the "
                                "headline,760.000,1.250,,,no,,,RAID 0,\"a <study> note, here\"\n"));
    assert_non_null(strstr(buf, ",RAID 1 (4),3,400.000,"));
    assert_non_null(strstr(buf, ",380.000,,233.000,1.717,12.5,99.0,yes,,,RAID 1,"));
    assert_non_null(strstr(buf, ",noop (ceiling),3,"));
    free(buf);

    char *js = bench_render_json(r);
    cJSON *doc = cJSON_Parse(js);
    cJSON *res =
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "jobs"), 0), "results");
    cJSON *noop = cJSON_GetArrayItem(res, 0), *r0 = cJSON_GetArrayItem(res, 1),
          *r1 = cJSON_GetArrayItem(res, 2);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(noop, "seed_mbs")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(noop, "p50_us")));
    assert_float_equal(cJSON_GetObjectItem(r0, "seed_mbs")->valuedouble, 760.0, 1e-9);
    assert_float_equal(cJSON_GetObjectItem(r0, "seed_ratio")->valuedouble, 1.25, 1e-9);
    assert_float_equal(cJSON_GetObjectItem(r0, "model_mbs")->valuedouble, 1200.0, 1e-9);
    assert_float_equal(cJSON_GetObjectItem(r0, "headline_mbs")->valuedouble, 1200.0, 1e-9);
    assert_string_equal(cJSON_GetObjectItem(r0, "headline")->valuestring, "model");
    assert_non_null(strstr(cJSON_GetObjectItem(r0, "host_bound_words")->valuestring, "host-bound"));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r0, "noisy")));
    assert_string_equal(cJSON_GetObjectItem(r0, "mapping")->valuestring, "as the study");
    assert_float_equal(cJSON_GetObjectItem(r1, "seed_ratio")->valuedouble, 1.717, 1e-9);
    assert_string_equal(cJSON_GetObjectItem(r1, "headline")->valuestring, "measured");
    assert_float_equal(cJSON_GetObjectItem(r1, "headline_mbs")->valuedouble, 400.0, 1e-9);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r1, "noisy")));
    assert_non_null(strstr(cJSON_GetObjectItem(r1, "mapping")->valuestring, "differs"));
    assert_float_equal(cJSON_GetObjectItem(r1, "p50_us")->valuedouble, 12.5, 1e-9);
    assert_float_equal(cJSON_GetObjectItem(r1, "p99_us")->valuedouble, 99.0, 1e-9);
    cJSON *job0 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "jobs"), 0);
    assert_string_equal(cJSON_GetObjectItem(job0, "note")->valuestring, "a <study> note, here");
    const char *cmd = cJSON_GetObjectItem(job0, "fio_command")->valuestring;
    assert_non_null(strstr(cmd, "fio --name=randread --ioengine=nbd"));
    assert_non_null(strstr(cmd, " --rw=randread --bs=4096 --iodepth=4 "));
    cJSON *c1 = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "configs"), 1);
    assert_int_equal(cJSON_GetObjectItem(c1, "chunk_bytes")->valueint, 65536);
    assert_string_equal(cJSON_GetObjectItem(c1, "member_profile")->valuestring, "sata-ssd-2014");
    cJSON_Delete(doc);
    free(js);

    buf = NULL;
    m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_html(r, m), 0);
    fclose(m);
    assert_non_null(strstr(buf, "<th>Predicted (model)</th><th>Seed</th><th>&#215; seed</th>"));
    assert_non_null(strstr(buf, "<td><b>1200.00</b> (model)</td><td>950.00 *</td><td>1200.00</td>"
                                "<td>760.00</td><td>&#215;1.25</td>"));
    assert_non_null(strstr(buf, "<td><b>400.00</b> ~</td><td>400.00 ~ noisy</td><td>380.00</td>"
                                "<td>233.00</td><td>&#215;1.72</td>"));
    assert_non_null(strstr(buf, "<td>12.5</td><td>99.0</td>"));
    assert_non_null(strstr(buf, "~ noisy: the RSD stayed above 3.5%"));
    assert_non_null(strstr(buf, "Where a row differs from the study:<br>\nRAID 1 (4): a 4-way"));
    assert_non_null(strstr(buf, "fio command: <code>fio --name=randread"));
    assert_non_null(strstr(buf, "<p class=\"note\">Note: a &lt;study&gt; note, here</p>"));
    assert_non_null(strstr(buf, ">Configuration</text>"));
    assert_non_null(strstr(buf, ">MB/s (shared scale"));
    assert_non_null(strstr(buf, "class=\"model\"")); /* the prediction's tick on the chart */
    free(buf);
    free(r->model_json);
    free(r);
    free(s);
}

/* Issue 10 item 4: per row, how far model / seed is and why (a code per row, the legend once
 * under the table) in text, JSON and HTML; item 3: a filesystem table has no prediction and says
 * so once (JSON: prediction null with the reason). */
static void test_model_seed_reasons(void **state)
{
    (void)state;
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    char *buf = NULL;
    size_t len = 0;
    make_seeded(r, s);
    snprintf(s->jobs[1].tool, sizeof(s->jobs[1].tool), "fsmark"); /* job 1: a filesystem job */
    snprintf(s->jobs[1].unit, sizeof(s->jobs[1].unit), "Files/s");
    /* raid0: model 1200 / seed 760 = 1.58, as the study: S; raid1 (a 4-way mirror): M. */
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_text_job(r, 0, m), 0);
    fclose(m);
    assert_non_null(strstr(buf, "model/seed (the prediction over the seed's figure, and why it is "
                                "that far): RAID 0 (4) x1.58 S; RAID 1 (4) x1.63 M;\n"));
    assert_non_null(strstr(buf, "\n  M mapping: the configuration differs"));
    assert_non_null(strstr(buf, "\n  S study scaled less:"));
    assert_null(strstr(buf, "\n  N near"));              /* only the codes used */
    assert_null(strstr(buf, "no model for filesystem")); /* a raw table */
    assert_non_null(strstr(buf, " *  [model 1200.00]  [seed 760.00, x1.25]\n")); /* layout kept */
    free(buf);
    buf = NULL;
    m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_text_job(r, 1, m), 0);
    fclose(m);
    const char *once = strstr(buf, "no model for filesystem workloads: ");
    assert_non_null(once);
    assert_null(strstr(once + 1, "no model for filesystem workloads"));
    free(buf);

    char *js = bench_render_json(r);
    cJSON *doc = cJSON_Parse(js);
    cJSON *jobs = cJSON_GetObjectItem(doc, "jobs");
    cJSON *res = cJSON_GetObjectItem(cJSON_GetArrayItem(jobs, 0), "results");
    cJSON *noop = cJSON_GetArrayItem(res, 0), *r0 = cJSON_GetArrayItem(res, 1),
          *r1 = cJSON_GetArrayItem(res, 2);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(noop, "model_seed_reason")));
    assert_string_equal(cJSON_GetObjectItem(r0, "model_seed_reason")->valuestring, "S");
    assert_non_null(strstr(cJSON_GetObjectItem(r0, "model_seed_why")->valuestring, "scaled"));
    assert_float_equal(cJSON_GetObjectItem(r0, "model_seed_ratio")->valuedouble, 1.579, 1e-9);
    assert_float_equal(cJSON_GetObjectItem(r0, "prediction")->valuedouble, 1200.0, 1e-9);
    assert_string_equal(cJSON_GetObjectItem(r0, "prediction_reason")->valuestring, "");
    assert_string_equal(cJSON_GetObjectItem(r1, "model_seed_reason")->valuestring, "M");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(jobs, 0), "prediction_note")));
    cJSON *fsjob = cJSON_GetArrayItem(jobs, 1);
    assert_non_null(strstr(cJSON_GetObjectItem(fsjob, "prediction_note")->valuestring,
                           "no model for filesystem workloads"));
    cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItem(fsjob, "results"), 1);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(f0, "prediction")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(f0, "model_seed_reason")));
    assert_non_null(strstr(cJSON_GetObjectItem(f0, "prediction_reason")->valuestring,
                           "no model for filesystem workloads"));
    cJSON_Delete(doc);
    free(js);

    buf = NULL;
    m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_html(r, m), 0);
    fclose(m);
    assert_non_null(strstr(buf, "<th>&#215; seed</th><th>Model &#247; seed</th>"));
    assert_non_null(strstr(buf, "<td>&#215;1.25</td><td>&#215;1.58 S</td>"));
    assert_non_null(strstr(buf, "<td>&#215;1.72</td><td>&#215;1.63 M</td>"));
    assert_non_null(strstr(buf, "Model &#247; seed, why:<br>\nM mapping"));
    assert_non_null(strstr(buf, "no model for filesystem workloads"));
    free(buf);

    /* Near: model within 15% of the seed. */
    s->jobs[0].seed[0].mbs = 1100.0;
    assert_string_equal(render_model_seed_reason(r, 1, 0)->code, "N");
    /* Profile: a Single Disk row whose prediction is far from its seed makes every row P. */
    snprintf(r->configs[0].label, sizeof(r->configs[0].label), "Single Disk");
    s->jobs[0].nseed = 3;
    snprintf(s->jobs[0].seed[2].label, sizeof(s->jobs[0].seed[2].label), "Single Disk");
    s->jobs[0].seed[2].mbs = 500.0;
    s->jobs[0].seed[2].ref_only = true;
    r->cells[0][0].model_mbs = 1000.0;
    assert_string_equal(render_model_seed_reason(r, 1, 0)->code, "P");
    assert_string_equal(render_model_seed_reason(r, 2, 0)->code, "M");
    free(r->model_json);
    free(r);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_matches_seed_layout),
        cmocka_unit_test(test_text_model_seed_noisy),
        cmocka_unit_test(test_model_seed_reasons),
        cmocka_unit_test(test_host_bound_and_stats),
        cmocka_unit_test(test_json_schema),
        cmocka_unit_test(test_svg_html),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_seed_prediction_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
