/* The study's rows beside the configurations that play them in a filesystem table (seed 003's
 * SQLite table on the cache configurations, a fixed report): the suite's seed_config pairs the
 * study's labels with configuration names, and text, JSON, CSV and HTML all put each seed figure
 * on its configuration's row, name the study's row there, keep the study's rows of their own,
 * and give cache rows no prediction. A raidkit row keeps the label rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "bench/bench.h"
#include "bench/render.h"

/* seed 003's SQLite table (seconds, lower is better) with its four seed rows and its suite's
 * seed_config pairs, and a Single Disk figure given as seed_ref (the label rule). */
static void make_suite(struct bench_suite *s)
{
    static const char *const labels[] = {"120GB Mushkin SSD", "Seagate ST500DM002-1BD14",
                                         "BCache Writethrough", "BCache Writeback"};
    static const char *const configs[] = {"cache-ssd", "cache-hdd", "cache-writethrough",
                                          "cache-writeback"};
    static const double secs[] = {680.90, 636.75, 651.20, 607.83};
    memset(s, 0, sizeof(*s));
    snprintf(s->name, sizeof(s->name), "seed003");
    s->njobs = 1;
    struct bench_job *j = &s->jobs[0];
    snprintf(j->name, sizeof(j->name), "sqlite");
    snprintf(j->title, sizeof(j->title), "SQLite 3.40 Test Target: Default Test Directory");
    snprintf(j->tool, sizeof(j->tool), "sqlite");
    snprintf(j->fs, sizeof(j->fs), "ext4");
    snprintf(j->unit, sizeof(j->unit), "Seconds");
    snprintf(j->args, sizeof(j->args), "500");
    j->lower_better = true;
    j->fs_size = 1ull << 30;
    j->size = 256u << 20;
    j->bs = 4096;
    j->iodepth = 1;
    for (int i = 0; i < 4; i++) {
        snprintf(j->seed[i].label, sizeof(j->seed[i].label), "%s", labels[i]);
        j->seed[i].mbs = secs[i];
        snprintf(s->seed_configs[i].label, sizeof(s->seed_configs[i].label), "%s", labels[i]);
        snprintf(s->seed_configs[i].config, sizeof(s->seed_configs[i].config), "%s", configs[i]);
    }
    snprintf(j->seed[4].label, sizeof(j->seed[4].label), "Single Disk");
    j->seed[4].mbs = 100.0;
    j->seed[4].ref_only = true;
    j->nseed = 5;
    s->nseed_configs = 4;
}

/* The run: cache-ssd, cache-writeback, cache-writearound (no study row), Single Disk and plain;
 * cache-hdd and cache-writethrough not run. Two trials each, mean = value. */
static struct bench_report *make(struct bench_suite *s)
{
    static const struct {
        const char *name, *label, *kind;
        double v;
    } rows[] = {{"cache-ssd", "raidkit raw cache SSD", "cache", 20.0},
                {"cache-writeback", "raidkit cache writeback", "cache", 30.0},
                {"cache-writearound", "raidkit cache writearound", "cache", 60.0},
                {"single", "Single Disk", "raidkit", 50.0},
                {"plain", "plain loop file", "plain", 10.0}};
    struct bench_report *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    make_suite(s);
    r->suite = s;
    snprintf(r->fio_version, sizeof(r->fio_version), "3.33");
    r->min_trials = 2;
    r->nconfigs = 5;
    for (int c = 0; c < 5; c++) {
        snprintf(r->configs[c].name, sizeof(r->configs[c].name), "%s", rows[c].name);
        snprintf(r->configs[c].label, sizeof(r->configs[c].label), "%s", rows[c].label);
        snprintf(r->configs[c].kind, sizeof(r->configs[c].kind), "%s", rows[c].kind);
        r->configs[c].members = 1;
        struct bench_cell *cell = &r->cells[c][0];
        cell->ntrials = 2;
        cell->trials[0] = cell->trials[1] = rows[c].v;
        cell->read_mbs[0] = cell->read_mbs[1] = rows[c].v;
    }
    bench_report_finish(r);
    return r;
}

/* Not inlined: GCC 12 then takes the memstream's buffer for the caller's dangling local. */
__attribute__((noinline)) static char *
render_to_text(const struct bench_report *r, int (*fn)(const struct bench_report *, FILE *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_non_null(m);
    assert_int_equal(fn(r, m), 0);
    fclose(m);
    return buf;
}

static int text_job0(const struct bench_report *r, FILE *f)
{
    return bench_render_text_job(r, 0, f);
}

static void test_text(void **state)
{
    struct bench_report *r = make(*state);
    char *buf = render_to_text(r, text_job0);
    /* The figure on the configuration's row (ratio measured / seed), the study's rows still of
     * their own, and one line naming which study row each configuration plays. */
    assert_non_null(strstr(buf, "\nraidkit raw cache SSD ........... 20.00 |=  [seed 680.90, "
                                "x0.03]\n"));
    assert_non_null(strstr(buf, "\nraidkit cache writeback ......... 30.00 |==  [seed 607.83, "
                                "x0.05]\n"));
    assert_non_null(strstr(buf, "\n120GB Mushkin SSD (seed) ........ 680.90 |==="));
    assert_non_null(strstr(buf, "\nBCache Writeback (seed) ......... 607.83 |==="));
    assert_non_null(strstr(buf, "\n[seed X, xR]: the study's row of the configuration, xR = "
                                "measured / seed: raidkit raw cache SSD = 120GB Mushkin SSD "
                                "(seed); raidkit cache writeback = BCache Writeback (seed)\n"));
    /* No study row for writearound or plain: nothing beside them. The raidkit row keeps the
     * label rule (seed_ref "Single Disk") and is not named on that line. */
    assert_non_null(strstr(buf, "\nraidkit cache writearound ....... 60.00 |===\n"));
    assert_non_null(strstr(buf, "\nplain loop file ................. 10.00 |=\n"));
    assert_non_null(strstr(buf, "\nSingle Disk ..................... 50.00 |===  [seed 100.00, "
                                "x0.50]\n"));
    assert_null(strstr(buf, "Single Disk = "));
    assert_null(strstr(buf, "[model"));
    assert_non_null(strstr(buf, RENDER_NO_FS_MODEL ".\n"));
    free(buf);
    free(r);
}

/* The result of configuration name in the job's results, or NULL. */
static cJSON *result(cJSON *job, const char *name)
{
    cJSON *x;
    cJSON_ArrayForEach(x, cJSON_GetObjectItem(job, "results"))
    {
        if (!strcmp(cJSON_GetObjectItem(x, "config")->valuestring, name))
            return x;
    }
    return NULL;
}

static void test_json(void **state)
{
    struct bench_report *r = make(*state);
    char *js = bench_render_json(r);
    cJSON *root = cJSON_Parse(js);
    assert_non_null(root);
    cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "jobs"), 0);
    assert_string_equal(cJSON_GetObjectItem(job, "kind")->valuestring, "fs");
    /* seed_rows: each names the configuration whose row carries it; null when it is not run. */
    static const char *const carried[] = {"cache-ssd", NULL, NULL, "cache-writeback", "single"};
    cJSON *rows = cJSON_GetObjectItem(job, "seed_rows");
    assert_int_equal(cJSON_GetArraySize(rows), 5);
    for (int i = 0; i < 5; i++) {
        cJSON *cfg = cJSON_GetObjectItem(cJSON_GetArrayItem(rows, i), "config");
        assert_non_null(cfg);
        if (carried[i])
            assert_string_equal(cfg->valuestring, carried[i]);
        else
            assert_true(cJSON_IsNull(cfg));
    }
    cJSON *ssd = result(job, "cache-ssd"), *wb = result(job, "cache-writeback");
    assert_true(cJSON_GetObjectItem(ssd, "seed_mbs")->valuedouble == 680.9);
    assert_string_equal(cJSON_GetObjectItem(ssd, "seed_label")->valuestring, "120GB Mushkin SSD");
    assert_true(cJSON_GetObjectItem(wb, "seed_mbs")->valuedouble == 607.83);
    assert_string_equal(cJSON_GetObjectItem(wb, "seed_label")->valuestring, "BCache Writeback");
    assert_true(cJSON_GetObjectItem(wb, "seed_ratio")->valuedouble == 0.049); /* 30 / 607.83 */
    /* No prediction for any filesystem row; a cache row says the cache is not predicted. */
    const char *names[] = {"cache-ssd", "cache-writeback", "cache-writearound", "single", "plain"};
    for (int i = 0; i < 5; i++) {
        cJSON *x = result(job, names[i]);
        assert_non_null(x);
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(x, "prediction")));
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(x, "model_seed_reason")));
        const char *why = cJSON_GetObjectItem(x, "prediction_reason")->valuestring;
        assert_true(!strncmp(why, RENDER_NO_FS_MODEL, strlen(RENDER_NO_FS_MODEL)));
        assert_true((strstr(why, "cache tier") != NULL) == (i < 3));
    }
    cJSON *wa = result(job, "cache-writearound"), *plain = result(job, "plain");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(wa, "seed_mbs")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(wa, "seed_label")));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(plain, "seed_mbs")));
    assert_string_equal(cJSON_GetObjectItem(result(job, "single"), "seed_label")->valuestring,
                        "Single Disk");
    cJSON_Delete(root);
    free(js);
    free(r);
}

static void test_csv_html(void **state)
{
    struct bench_report *r = make(*state);
    char *csv = render_to_text(r, bench_render_csv);
    assert_non_null(strstr(csv, ",p_loss_rebuild,seed_label,table_note\n"));
    char *line = strstr(csv, ",cache-ssd,raidkit raw cache SSD,");
    assert_non_null(line);
    assert_non_null(strstr(line, ",680.900,0.029,,,no,,,120GB Mushkin SSD,\n"));
    line = strstr(csv, ",cache-writearound,");
    assert_non_null(line);
    char row[512];
    snprintf(row, sizeof(row), "%.*s", (int)strcspn(line, "\n"), line);
    size_t n = strlen(row);
    assert_true(n > 11 && !strcmp(row + n - 11, ",,,,,no,,,,")); /* no seed, no label, no note */
    free(csv);
    char *html = render_to_text(r, bench_render_html);
    assert_non_null(strstr(html, "<td>680.90 <small>(120GB Mushkin SSD)</small></td>"));
    assert_non_null(strstr(html, "<td>607.83 <small>(BCache Writeback)</small></td>"));
    assert_null(strstr(html, "(Single Disk)</small>")); /* its own label: the figure alone */
    assert_non_null(strstr(html, "<td>100.00</td>"));
    free(html);
    free(r);
}

/* A check after the trials failed (the writeback cache's drain: the backing alone then failed
 * its filesystem check): the configuration is listed under Failed in text and HTML and marked in
 * JSON. A study title that names its own Disk Target gets the members as "Members", so the
 * heading says Disk Target once. */
static void test_failed_check_heading(void **state)
{
    struct bench_report *r = make(*state);
    snprintf(r->configs[1].note, sizeof(r->configs[1].note),
             "filesystem check failed: the backing alone after the cache drain: e2fsck -fn exit 4");
    r->configs[1].failed = true;
    char *txt = render_to_text(r, bench_render_text);
    assert_non_null(strstr(txt, "\nFailed:\n  cache-writeback: filesystem check failed: the "
                                "backing alone after the cache drain: e2fsck -fn exit 4\n"));
    free(txt);
    char *html = render_to_text(r, bench_render_html);
    assert_non_null(strstr(html, "Failed measurements:<br>\n<b>cache-writeback</b>: filesystem "
                                 "check failed"));
    free(html);
    char *js = bench_render_json(r);
    assert_non_null(js);
    cJSON *root = cJSON_Parse(js);
    assert_non_null(root);
    int nfailed = 0;
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "configs"))
    {
        if (cJSON_IsTrue(cJSON_GetObjectItem(c, "failed"))) {
            nfailed++;
            assert_string_equal(cJSON_GetObjectItem(c, "name")->valuestring, "cache-writeback");
        }
    }
    assert_int_equal(nfailed, 1);
    cJSON_Delete(root);
    free(js);

    char head[512];
    struct bench_suite *s = *state;
    snprintf(s->jobs[0].title, sizeof(s->jobs[0].title),
             "fio Type: Random Read - Disk Target: Default Test Directory (256MB file)");
    snprintf(r->model_name, sizeof(r->model_name), "hdd-7200");
    bench_job_heading(r, 0, head, sizeof(head));
    assert_string_equal(head, "fio Type: Random Read - Disk Target: Default Test Directory (256MB "
                              "file) - File System: ext4 on 1GB - Members: hdd-7200");
    free(r);
}

int main(void)
{
    static struct bench_suite suite; /* static: the report points at it */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_text, &suite),
        cmocka_unit_test_prestate(test_json, &suite),
        cmocka_unit_test_prestate(test_csv_html, &suite),
        cmocka_unit_test_prestate(test_failed_check_heading, &suite),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
