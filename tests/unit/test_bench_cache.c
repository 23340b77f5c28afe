/* The bench's cache configurations without running them: names and modes, the `raidkit serve` and
 * `raidkit fuse` command lines each one uses, the SSD profile lookup, the hit counters taken from
 * `status
 * --json`, and the seed rows, warm-up and hit ratios in the text and JSON reports. */
#include <errno.h>
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
#include "bench/run.h"

static void test_describe_and_modes(void **state)
{
    (void)state;
    static const char *const names[] = {"cache-writethrough", "cache-writeback",
                                        "cache-writearound", "cache-none"};
    static const char *const modes[] = {"writethrough", "writeback", "writearound", "none"};
    const struct bench_backend *be = bench_backend_find("cache");
    assert_non_null(be);
    for (int i = 0; i < 4; i++) {
        struct bench_config bc = {0};
        assert_true(be->describe(&bc, names[i], 4));
        assert_int_equal(bc.members, 1); /* one backing member whatever --members says */
        assert_non_null(strstr(bc.label, modes[i]));
        assert_string_equal(bench_cache_mode(names[i]), modes[i]);
    }
    struct bench_config bc = {0};
    assert_true(be->describe(&bc, "cache-ssd", 4));
    assert_true(be->describe(&bc, "cache-hdd", 4));
    assert_null(bench_cache_mode("cache-ssd"));
    assert_null(bench_cache_mode("cache-hdd"));
    assert_false(be->describe(&bc, "cache-bogus", 4));
    assert_false(be->describe(&bc, "single", 4));
    assert_non_null(be->hits);
    assert_null(be->counts); /* its models are its own, not --model's */
    assert_false(be->modelled);
    assert_true(be->own_models);
}

static void test_serve_argv(void **state)
{
    (void)state;
    char a[BENCH_CACHE_ARGS][640], *argv[BENCH_CACHE_ARGS + 1];
    struct bench_cache_devs d = {.rk = "/bin/raidkit",
                                 .ssd = "/src/bench/profiles/mushkin-ssd-2015.ini",
                                 .hdd = "hdd-7200",
                                 .backing = "/w/b.img",
                                 .cachedev = "/w/c.img"};
    const char *serve[] = {"serve", "--threads=16", "--listen=unix:/w/nbd.sock", "--control=/w/ctl",
                           NULL};
    int n = bench_cache_argv(&d, "cache-writeback", serve, a, argv);
    static const char *const want[] = {
        "/bin/raidkit",     "serve",
        "--threads=16",     "--listen=unix:/w/nbd.sock",
        "--control=/w/ctl", "--emulate=hdd-7200",
        "--cache=/w/c.img", "--cache-emulate=/src/bench/profiles/mushkin-ssd-2015.ini",
        "/w/b.img"};
    assert_int_equal(n, 9);
    for (int i = 0; i < n; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[n]);
    /* The filesystem jobs run the same models and cache under raidkit fuse. */
    const char *fuse[] = {"fuse", "/w/fs-export", "--control=/w/fs-ctl.sock", NULL};
    n = bench_cache_argv(&d, "cache-writeback", fuse, a, argv);
    assert_int_equal(n, 8);
    assert_string_equal(argv[1], "fuse");
    assert_string_equal(argv[2], "/w/fs-export");
    for (int i = 4; i < n; i++)
        assert_string_equal(argv[i], want[i + 1]);
    /* The raw devices: one model each, no cache. */
    snprintf(d.ssd, sizeof(d.ssd), "SSD");
    snprintf(d.hdd, sizeof(d.hdd), "HDD");
    n = bench_cache_argv(&d, "cache-ssd", serve, a, argv);
    assert_int_equal(n, 7);
    assert_string_equal(argv[5], "--emulate=SSD");
    n = bench_cache_argv(&d, "cache-hdd", fuse, a, argv);
    assert_string_equal(argv[4], "--emulate=HDD");
    for (int i = 0; i < n; i++)
        assert_null(strstr(argv[i], "--cache"));
}

static void test_profile_lookup(void **state)
{
    (void)state;
    char buf[1024];
    assert_int_equal(bench_cache_profile("hdd-7200", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "hdd-7200"); /* built-in: as is */
    assert_int_equal(bench_cache_profile("mushkin-ssd-2015", buf, sizeof(buf)), 0);
    assert_non_null(strstr(buf, "/bench/profiles/mushkin-ssd-2015.ini"));
    struct rk_emul_params p;
    char err[256];
    assert_int_equal(rk_emul_profile_load(buf, &p, err, sizeof(err)), 0);
    assert_int_equal(p.kind, RK_EMUL_SSD);
    assert_int_equal(bench_cache_profile("no-such-profile", buf, sizeof(buf)), -ENOENT);
    assert_int_equal(bench_cache_profile("/nonexistent/x.ini", buf, sizeof(buf)), -ENOENT);
}

static void test_parse_status(void **state)
{
    (void)state;
    uint64_t c[4] = {9, 9, 9, 9};
    assert_int_equal(bench_cache_parse_status("{\"ok\":true,\"status\":{\"cache\":{\"read_hits\":"
                                              "90,\"read_misses\":10,\"write_hits\":5}}}",
                                              c),
                     0);
    assert_true(c[0] == 90 && c[1] == 10 && c[2] == 5 && c[3] == 0);
    assert_int_equal(bench_cache_parse_status("{\"cache\":{\"write_misses\":7}}", c), 0);
    assert_true(c[0] == 0 && c[3] == 7);
    assert_int_equal(bench_cache_parse_status("{\"level\":\"linear\"}", c), -ENOENT);
    assert_int_equal(bench_cache_parse_status("not json", c), -ENOENT);
    assert_int_equal(bench_cache_parse_status("{\"cache\":null}", c), -ENOENT);
    uint64_t dirty = 9;
    char st[16];
    assert_int_equal(bench_cache_parse_dirty("{\"status\":{\"cache\":{\"state\":\"detached\","
                                             "\"dirty_bytes\":0}}}",
                                             &dirty, st, sizeof(st)),
                     0);
    assert_true(dirty == 0);
    assert_string_equal(st, "detached");
    assert_int_equal(
        bench_cache_parse_dirty("{\"cache\":{\"dirty_bytes\":65536}}", &dirty, st, sizeof(st)), 0);
    assert_true(dirty == 65536);
    assert_string_equal(st, "?");
    assert_int_equal(bench_cache_parse_dirty("{\"cache\":null}", &dirty, st, sizeof(st)), -ENOENT);
}

static void test_hit_pct(void **state)
{
    (void)state;
    assert_true(bench_hit_pct(0, 0) < 0);
    assert_true(bench_hit_pct(3, 1) == 75.0);
    assert_true(bench_hit_pct(0, 5) == 0.0);
}

/* A report of one job with a cache row, a raw row and two seed rows (free r->suite and r). */
static struct bench_report *make(void)
{
    struct bench_report *r = calloc(1, sizeof(*r));
    struct bench_suite *s = calloc(1, sizeof(*s));
    assert_non_null(r);
    assert_non_null(s);
    snprintf(s->name, sizeof(s->name), "seed003");
    s->njobs = 1;
    struct bench_job *j = &s->jobs[0];
    snprintf(j->name, sizeof(j->name), "hotread");
    snprintf(j->title, sizeof(j->title), "Random Read, Hot Set");
    snprintf(j->rw, sizeof(j->rw), "randread");
    j->bs = 4096;
    j->iodepth = 1;
    j->size = 128u << 20;
    j->runtime = 20;
    j->warmup = 2;
    j->nseed = 2;
    snprintf(j->seed[0].label, sizeof(j->seed[0].label), "120GB Mushkin SSD");
    j->seed[0].mbs = 48.09;
    snprintf(j->seed[1].label, sizeof(j->seed[1].label), "BCache Writethrough");
    j->seed[1].mbs = 1.67;
    r->suite = s;
    snprintf(r->fio_version, sizeof(r->fio_version), "3.33");
    r->min_trials = 1;
    r->nconfigs = 2;
    static const char *const names[] = {"cache-writeback", "cache-ssd"};
    static const char *const labels[] = {"raidkit cache writeback", "raidkit raw cache SSD"};
    static const double vals[] = {40.0, 45.0};
    for (int i = 0; i < 2; i++) {
        snprintf(r->configs[i].name, sizeof(r->configs[i].name), "%s", names[i]);
        snprintf(r->configs[i].label, sizeof(r->configs[i].label), "%s", labels[i]);
        snprintf(r->configs[i].kind, sizeof(r->configs[i].kind), "cache");
        r->cells[i][0].ntrials = 1;
        r->cells[i][0].trials[0] = vals[i];
        r->cells[i][0].read_mbs[0] = vals[i];
    }
    r->cells[0][0].has_cache = true;
    r->cells[0][0].read_hits = 995;
    r->cells[0][0].read_misses = 5;
    bench_report_finish(r);
    return r;
}

static void test_render(void **state)
{
    (void)state;
    struct bench_report *r = make();
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    assert_int_equal(bench_render_text_job(r, 0, m), 0);
    fclose(m);
    /* Rows in order, the seed's after ours, dots to one column (as in the seed's tables); bars
     * scaled over all rows, the published ones included. */
    assert_non_null(strstr(buf, "IO Depth: 1"));
    assert_non_null(strstr(buf, "\nraidkit cache writeback .... 40.00 |====="));
    assert_non_null(strstr(buf, "\nraidkit raw cache SSD ...... 45.00 |"));
    assert_non_null(strstr(buf, "\n120GB Mushkin SSD (seed) ... 48.09 |"));
    assert_non_null(strstr(buf, "\nBCache Writethrough (seed) . 1.67 |=\n"));
    assert_true(strstr(buf, "raw cache SSD") < strstr(buf, "Mushkin SSD (seed)"));
    assert_non_null(strstr(buf, "Warm-up: 2 passes of 64KB random reads (iodepth 16) over the "
                                "128MB region before the first trial\n"));
    assert_non_null(strstr(buf, "Cache hit ratio, raidkit cache writeback: read 99.5%, write -\n"));
    assert_null(strstr(buf, "Cache hit ratio, raidkit raw cache SSD"));
    /* Every line of the table is at most 79 characters (the seed's rule). */
    for (char *p = buf, *nl; (nl = strchr(p, '\n')); p = nl + 1)
        if (strncmp(p, "fio ", 4) && strncmp(p, "Warm-up", 7) && strncmp(p, "Cache hit", 9))
            assert_true(nl - p <= 79);
    free(buf);

    char *js = bench_render_json(r);
    cJSON *root = cJSON_Parse(js);
    cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "jobs"), 0);
    assert_int_equal(cJSON_GetObjectItem(job, "warmup_passes")->valueint, 2);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(job, "seed_rows")), 2);
    cJSON *res = cJSON_GetObjectItem(job, "results");
    cJSON *cache = cJSON_GetObjectItem(cJSON_GetArrayItem(res, 0), "cache");
    assert_non_null(cache);
    assert_true(cJSON_GetObjectItem(cache, "read_hit_pct")->valuedouble == 99.5);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cache, "write_hit_pct")));
    assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(res, 1), "cache"));
    cJSON_Delete(root);
    free(js);
    free((void *)r->suite);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe_and_modes),
        cmocka_unit_test(test_serve_argv),
        cmocka_unit_test(test_profile_lookup),
        cmocka_unit_test(test_parse_status),
        cmocka_unit_test(test_hit_pct),
        cmocka_unit_test(test_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
