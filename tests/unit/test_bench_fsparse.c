/* The filesystem tools' parsers (src/bench/fsparse_*.c) against outputs recorded from the real
 * tools on this project's Debian 12 machine (tests/golden/fs/: fs_mark 3.3, bonnie++ 2.00a,
 * PostMark 1.51, dbench 4.00, sqlite3 3.40, pgbench 15), and their refusals of broken output. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench/fsparse.h"
#include "bench/job_fs.h"

/* The golden file tests/golden/fs/NAME as text (malloc'ed). */
static char *golden(const char *name)
{
    char path[1024];
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s/tests/golden/fs/%s", src ? src : ".", name);
    char *t = fsjob_slurp(path);
    if (!t)
        fail_msg("cannot read %s", path);
    return t;
}

static void test_fsmark(void **state)
{
    (void)state;
    double v = 0;
    char *t = golden("fsmark-3.3.txt");
    assert_int_equal(fsparse_fsmark(t, &v), 0);
    assert_true(fabs(v - 35.1) < 1e-9);
    free(t);
    t = golden("fsmark-3.3-t4.txt"); /* 4 threads: one result line, Count 32 */
    assert_int_equal(fsparse_fsmark(t, &v), 0);
    assert_true(fabs(v - 35.9) < 1e-9);
    free(t);
    /* Two loops: the mean. */
    assert_int_equal(fsparse_fsmark("FSUse%  Count Size Files/sec App\n 1 8 1048576 10.0 5\n"
                                    " 2 16 1048576 20.0 6\n",
                                    &v),
                     0);
    assert_true(fabs(v - 15.0) < 1e-9);
    assert_int_equal(fsparse_fsmark("fs_mark: directory pathname too long\nUsage: fs_mark\n", &v),
                     -EINVAL);
}

static void test_bonnie(void **state)
{
    (void)state;
    double v = 0;
    char *t = golden("bonnie-2.00a-D.txt");
    assert_int_equal(fsparse_bonnie(t, "block_output", &v), 0);
    assert_true(v == 62778);
    assert_int_equal(fsparse_bonnie(t, "rewrite", &v), 0);
    assert_true(v == 205220);
    assert_int_equal(fsparse_bonnie(t, "block_input", &v), -ERANGE); /* +++++ */
    assert_int_equal(fsparse_bonnie(t, "seeks", &v), 0);
    assert_true(v == 6342);
    assert_int_equal(fsparse_bonnie(t, "per_char", &v), -EINVAL);
    free(t);
    t = golden("bonnie-2.00a.txt"); /* CSV first, then the human table */
    assert_int_equal(fsparse_bonnie(t, "block_output", &v), 0);
    assert_true(v == 85115);
    assert_int_equal(fsparse_bonnie(t, "rewrite", &v), -ERANGE);
    free(t);
    assert_int_equal(fsparse_bonnie("Can't open file\n", "seeks", &v), -EINVAL);
}

static void test_postmark_dbench_pgbench_sqlite(void **state)
{
    (void)state;
    double v = 0;
    long rows = 0;
    char *t = golden("postmark-1.51.txt");
    assert_int_equal(fsparse_postmark(t, &v), 0);
    assert_true(v == 250);
    free(t);
    t = golden("dbench-4.txt");
    assert_int_equal(fsparse_dbench(t, &v), 0);
    assert_true(fabs(v - 50.2533) < 1e-9);
    free(t);
    t = golden("pgbench-15.txt");
    assert_int_equal(fsparse_pgbench(t, &v), 0);
    assert_true(fabs(v - 376.1127) < 1e-9);
    free(t);
    t = golden("sqlite3-rows.txt");
    assert_int_equal(fsparse_sqlite_rows(t, &rows), 0);
    assert_int_equal(rows, 200);
    free(t);
    assert_int_equal(fsparse_pgbench("tps = 12.5 (including connections establishing)\n"
                                     "tps = 13.5 (excluding connections establishing)\n",
                                     &v),
                     0);
    assert_true(v == 13.5);
    assert_int_equal(fsparse_postmark("Creating files...Done\n", &v), -EINVAL);
    assert_int_equal(fsparse_dbench("  2 clients  0.00 MB/sec warmup\n", &v), -EINVAL);
    assert_int_equal(fsparse_pgbench("pgbench: error: connection failed\n", &v), -EINVAL);
    assert_int_equal(fsparse_sqlite_rows("Error: near line 3: disk I/O error\n", &rows), -EINVAL);
}

/* Suite keys of filesystem jobs: units, defaults and refusals. */
static void test_suite_keys(void **state)
{
    (void)state;
    struct bench_job j = {.size = 16u << 20, .bs = 4096};
    char err[256];
    assert_int_equal(fsjob_suite_key(&j, "tool", "nosuch"), -EINVAL);
    assert_int_equal(fsjob_suite_key(&j, "tool", "sqlite"), 0);
    assert_int_equal(fsjob_suite_key(&j, "fs", "zfs"), -EINVAL);
    assert_int_equal(fsjob_suite_key(&j, "fs_size", "1M"), -EINVAL);
    assert_int_equal(fsjob_suite_key(&j, "colour", "x"), -ENOENT);
    assert_int_equal(fsjob_suite_check("s.ini", &j, err, sizeof(err)), 0);
    assert_string_equal(j.unit, "Seconds");
    assert_true(j.lower_better);
    assert_string_equal(j.fs, "ext4");
    assert_true(j.fs_size == 512ull << 20);
    struct bench_job b = {.size = 16u << 20, .bs = 4096};
    assert_int_equal(fsjob_suite_key(&b, "tool", "bonnie"), 0);
    assert_int_equal(fsjob_suite_check("s.ini", &b, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "needs a 'metric'"));
    assert_int_equal(fsjob_suite_key(&b, "metric", "seeks"), 0);
    assert_int_equal(fsjob_suite_check("s.ini", &b, err, sizeof(err)), 0);
    assert_string_equal(b.unit, "Seeks/s");
    struct bench_job r = {.size = 16u << 20, .bs = 4096};
    assert_int_equal(fsjob_suite_key(&r, "fs", "xfs"), 0);
    assert_int_equal(fsjob_suite_check("s.ini", &r, err, sizeof(err)), -EINVAL); /* no tool */
    struct bench_job x = {.size = 16u << 20, .bs = 4096};
    assert_int_equal(fsjob_suite_key(&x, "tool", "fio"), 0);
    assert_int_equal(fsjob_suite_key(&x, "fs", "xfs"), 0);
    assert_int_equal(fsjob_suite_key(&x, "fs_size", "256M"), 0);
    assert_int_equal(fsjob_suite_check("s.ini", &x, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "300M"));
    /* A title longer than the field is refused, never cut (it names the study's test). */
    char path[] = "/tmp/rk-fssuite-XXXXXX", text[400];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int n = snprintf(text, sizeof(text), "[j]\ntool = sqlite\ntitle = %0150d\n", 0);
    assert_int_equal(write(fd, text, (size_t)n), n);
    close(fd);
    struct bench_suite *su = calloc(1, sizeof(*su));
    assert_int_equal(bench_suite_parse(path, su, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":3: bad value"));
    unlink(path);
    free(su);
}

/* A filesystem job's table: the tool's unit and direction, the filesystem in the heading, skipped
 * cells under "Skipped jobs:" (not "Failed:"), the JSON's kind/tool/unit. */
static void test_render_fs_job(void **state)
{
    (void)state;
    struct bench_suite *s = calloc(1, sizeof(*s));
    struct bench_report *r = calloc(1, sizeof(*r));
    char err[256];
    assert_non_null(s);
    assert_non_null(r);
    struct bench_job *j = &s->jobs[0];
    s->njobs = 1;
    snprintf(j->name, sizeof(j->name), "sqlite");
    snprintf(j->title, sizeof(j->title), "SQLite Timed INSERTs");
    j->bs = 4096;
    j->size = 16u << 20;
    assert_int_equal(fsjob_suite_key(j, "tool", "sqlite"), 0);
    assert_int_equal(fsjob_suite_check("s.ini", j, err, sizeof(err)), 0);
    r->suite = s;
    r->nconfigs = 2;
    snprintf(r->configs[0].name, sizeof(r->configs[0].name), "single");
    snprintf(r->configs[0].label, sizeof(r->configs[0].label), "Single Disk");
    snprintf(r->configs[1].name, sizeof(r->configs[1].name), "noop");
    snprintf(r->configs[1].label, sizeof(r->configs[1].label), "noop (ceiling)");
    r->cells[0][0].ntrials = 1;
    r->cells[0][0].trials[0] = r->cells[0][0].read_mbs[0] = 2.5;
    r->cells[1][0].skipped = true;
    snprintf(r->cells[1][0].note, sizeof(r->cells[1][0].note), "skipped: no filesystem path");
    bench_report_finish(r);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(bench_render_text(r, f), 0);
    fclose(f);
    assert_non_null(strstr(buf, "SQLite Timed INSERTs - File System: ext4 on 512MB - Disk Target"));
    assert_non_null(strstr(buf, "\nSeconds > Lower Is Better\nSingle Disk . 2.50 |="));
    assert_non_null(strstr(buf, "Skipped jobs:\n  noop sqlite: skipped: no filesystem path\n"));
    assert_null(strstr(buf, "Failed:"));
    free(buf);
    char *js = bench_render_json(r);
    assert_non_null(js);
    assert_non_null(strstr(js, "\"kind\":\t\"fs\""));
    assert_non_null(strstr(js, "\"unit\":\t\"Seconds\""));
    assert_non_null(strstr(js, "\"lower_is_better\":\ttrue"));
    free(js);
    free(r);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fsmark),
        cmocka_unit_test(test_bonnie),
        cmocka_unit_test(test_postmark_dbench_pgbench_sqlite),
        cmocka_unit_test(test_suite_keys),
        cmocka_unit_test(test_render_fs_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
