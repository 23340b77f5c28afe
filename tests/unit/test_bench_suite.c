/* Bench suites: every shipped suite in bench/suites parses with the documented settings, and bad
 * files are refused with FILE:LINE and the reason. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench/bench.h"

static void load(const char *name, struct bench_suite *s)
{
    char path[1024], err[512] = "";
    const char *src = getenv("RAIDKIT_SOURCE_DIR");
    snprintf(path, sizeof(path), "%s/bench/suites/%s.ini", src ? src : ".", name);
    int r = bench_suite_parse(path, s, err, sizeof(err));
    if (r < 0)
        print_error("%s\n", err);
    assert_int_equal(r, 0);
}

/* Jobs of s that run fio on the raw volume (not filesystem jobs). */
static int raw_jobs(const struct bench_suite *s)
{
    int n = 0;
    for (int j = 0; j < s->njobs; j++)
        n += !s->jobs[j].tool[0];
    return n;
}

static void test_shipped(void **state)
{
    (void)state;
    struct bench_suite *s = calloc(1, sizeof(*s));
    load("seed000", s);
    /* The study's four fio tables on the raw volume first, then its filesystem tables (btrfs,
     * as in the study; docs/BENCHMARKS.md "Filesystem jobs"). */
    assert_int_equal(raw_jobs(s), 4);
    assert_int_equal(s->njobs, 13);
    assert_string_equal(s->jobs[4].tool, "fio");
    assert_non_null(strstr(s->jobs[4].title, "Compile Bench-equivalent (fio)"));
    assert_string_equal(s->jobs[5].tool, "fsmark");
    assert_string_equal(s->jobs[5].fs, "btrfs");
    assert_string_equal(s->jobs[5].unit, "Files/s");
    assert_int_equal(s->jobs[5].nseed, 12);
    assert_non_null(strstr(s->jobs[8].title, "IOzone-equivalent (fio)"));
    assert_string_equal(s->jobs[0].rw, "randread");
    assert_string_equal(s->jobs[3].rw, "write");
    for (int j = 0; j < 4; j++) {
        assert_int_equal(s->jobs[j].bs, 16384);
        assert_int_equal(s->jobs[j].iodepth, 64);
        assert_int_equal(s->jobs[j].size, 1ull << 30);
        assert_int_equal(s->jobs[j].ramp, 5);
        assert_int_equal(s->jobs[j].runtime, 20);
    }
    assert_non_null(strstr(s->reproduces, "seed 000"));
    load("seed003", s);
    assert_int_equal(raw_jobs(s), 6); /* the study's four tables + two hot-set jobs */
    assert_int_equal(s->jobs[1].bs, 4096);
    assert_int_equal(s->jobs[1].iodepth, 1);
    /* The study's rows beside ours: the randread table has no HDD row in the seed. */
    assert_int_equal(s->jobs[0].nseed, 3);
    assert_string_equal(s->jobs[0].seed[1].label, "BCache Writethrough");
    assert_true(s->jobs[0].seed[1].mbs == 1.67);
    assert_int_equal(s->jobs[1].nseed, 4);
    assert_string_equal(s->jobs[1].seed[1].label, "Seagate ST500DM002-1BD14");
    assert_int_equal(s->jobs[0].warmup, 0);
    assert_string_equal(s->jobs[4].name, "hotread");
    assert_int_equal(s->jobs[4].size, 128u << 20);
    assert_int_equal(s->jobs[4].warmup, 2);
    assert_int_equal(s->jobs[5].warmup, 2);
    assert_int_equal(s->jobs[5].iodepth, 1);
    /* Its SSD, HDD and bcache rows are the cache configurations' (seed_config). */
    assert_int_equal(s->nseed_configs, 4);
    assert_string_equal(s->seed_configs[0].label, "120GB Mushkin SSD");
    assert_string_equal(s->seed_configs[0].config, "cache-ssd");
    assert_string_equal(s->seed_configs[3].label, "BCache Writeback");
    assert_string_equal(s->seed_configs[3].config, "cache-writeback");
    load("seed002", s);
    assert_string_equal(s->jobs[0].rw, "read");
    assert_int_equal(s->jobs[0].bs, 1u << 20);
    assert_string_equal(s->jobs[1].rw, "randrw");
    assert_int_equal(s->jobs[1].rwmixread, 50);
    load("quick", s);
    assert_int_equal(s->jobs[0].size, 256u << 20);
    assert_int_equal(s->max_trials, 4);
    load("tiny", s);
    assert_int_equal(s->jobs[0].size, 32u << 20);
    assert_int_equal(bench_suite_max_size(s), 32u << 20);
    free(s);
}

/* Parse text written to a temp file into s; returns the result and the error message. */
static int parse_into(const char *text, struct bench_suite *s, char *err, size_t errlen)
{
    char path[] = "/tmp/rk-suite-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    int r = bench_suite_parse(path, s, err, errlen);
    unlink(path);
    return r;
}

static int parse_text(const char *text, char *err, size_t errlen)
{
    struct bench_suite *s = calloc(1, sizeof(*s));
    int r = parse_into(text, s, err, errlen);
    free(s);
    return r;
}

static void test_errors(void **state)
{
    (void)state;
    char err[512];
    assert_int_equal(parse_text("name = x\nbs = 4K\n[a]\nrw = read\n", err, sizeof(err)), 0);
    assert_int_equal(parse_text("name = x\n[a]\nrw = sideways\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":3: bad value 'sideways' for 'rw'"));
    assert_int_equal(parse_text("[a]\nbogus = 1\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: unknown key 'bogus'"));
    assert_int_equal(parse_text("[a]\nbs = 1000\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: bad value '1000' for 'bs'"));
    assert_int_equal(parse_text("name = x\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "no [job] sections"));
    assert_int_equal(parse_text("[a]\n[a]\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: job 'a' defined twice"));
    assert_int_equal(parse_text("[a b]\n", err, sizeof(err)), -EINVAL);
    assert_int_equal(parse_text("just words\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":1: expected 'key = value'"));
    assert_int_equal(parse_text("[a]\niodepth = 0\n", err, sizeof(err)), -EINVAL);
    assert_int_equal(parse_text("[a]\nseed_row = X | 1.5\nwarmup = 3\n", err, sizeof(err)), 0);
    assert_int_equal(parse_text("[a]\nseed_row = no figure\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: bad value 'no figure' for 'seed_row'"));
    assert_int_equal(parse_text("[a]\nseed_row = | 2\n", err, sizeof(err)), -EINVAL);
    assert_int_equal(parse_text("[a]\nseed_row = X | 2x\n", err, sizeof(err)), -EINVAL);
    assert_int_equal(parse_text("[a]\nseed_row = X | -1\n", err, sizeof(err)), -EINVAL);
    assert_int_equal(parse_text("[a]\nwarmup = 17\n", err, sizeof(err)), -EINVAL);
    /* note: one line of text under the table, never cut. */
    assert_int_equal(parse_text("[a]\nnote =\n", err, sizeof(err)), -EINVAL);
    char longnote[700] = "[a]\nnote = ";
    memset(longnote + strlen(longnote), 'x', 600);
    assert_int_equal(parse_text(longnote, err, sizeof(err)), -EINVAL);
    struct bench_suite *n = calloc(1, sizeof(*n));
    assert_int_equal(
        parse_into("[a]\nnote = the study's row,\nnote = why\n[b]\n", n, err, sizeof(err)), 0);
    assert_string_equal(n->jobs[0].note, "the study's row, why"); /* lines joined */
    assert_string_equal(n->jobs[1].note, "");
    free(n);
    /* seed_config: suite level, a known configuration, each study row once. */
    assert_int_equal(parse_text("seed_config = X | cache-ssd\n[a]\n", err, sizeof(err)), 0);
    assert_int_equal(parse_text("seed_config = X | cache-bogus\n[a]\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":1: bad value 'X | cache-bogus' for 'seed_config'"));
    assert_int_equal(parse_text("seed_config = cache-ssd\n[a]\n", err, sizeof(err)), -EINVAL);
    assert_int_equal(
        parse_text("seed_config = X | raid1\nseed_config = X | raid5\n[a]\n", err, sizeof(err)),
        -EINVAL);
    assert_non_null(strstr(err, ":2: seed_config: row 'X' given twice"));
    assert_int_equal(parse_text("[a]\nseed_config = X | raid1\n", err, sizeof(err)), -EINVAL);
    struct bench_suite *s = calloc(1, sizeof(*s));
    assert_int_equal(bench_suite_load("/nonexistent/suite.ini", s, err, sizeof(err)), -ENOENT);
    assert_int_equal(bench_suite_load("no-such-suite-name", s, err, sizeof(err)), -ENOENT);
    assert_non_null(strstr(err, "no suite 'no-such-suite-name'"));
    free(s);
}

/* The INI syntax of the core reader: comments, blanks, headers, and line numbers that count file
 * lines only (the reader's section marks are not lines of the file). */
static void test_ini_syntax(void **state)
{
    (void)state;
    char err[512];
    const char *text = "# comment\n; also a comment\n  bs = 8K   # inline\n\n[ first ]\n"
                       "  rw = read\n[randread]\n[third]\ntitle = The Third ; note\n";
    struct bench_suite *s = calloc(1, sizeof(*s));
    int r = parse_into(text, s, err, sizeof(err));
    if (r < 0)
        print_error("%s\n", err);
    assert_int_equal(r, 0);
    assert_int_equal(s->njobs, 3);
    assert_string_equal(s->jobs[0].name, "first");
    assert_string_equal(s->jobs[0].rw, "read");
    assert_int_equal(s->jobs[0].bs, 8192);
    /* An empty section is a job with the defaults. */
    assert_string_equal(s->jobs[1].name, "randread");
    assert_string_equal(s->jobs[1].rw, "randread");
    assert_int_equal(s->jobs[1].bs, 8192);
    assert_string_equal(s->jobs[2].title, "The Third");
    free(s);

    assert_int_equal(parse_text("[a]\n[b]\nrw = bad\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":3: bad value 'bad' for 'rw'"));
    assert_int_equal(parse_text("[a]\n[b]\n[c]\nno equals\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":4: expected 'key = value'"));
    assert_int_equal(parse_text("[a] junk\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":1: bad section header '[a] junk'"));
    assert_int_equal(parse_text("[a\n", err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":1: bad section header '[a'"));
    char longline[400];
    snprintf(longline, sizeof(longline), "[a]\ntitle = %0300d\n", 0);
    assert_int_equal(parse_text(longline, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, ":2: line too long"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_ini_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
