/* `raidkit bench`: run a fio suite over raidkit configurations (member files or device models)
 * and write the seed-style text tables, JSON, CSV, SVG and HTML reports (docs/BENCHMARKS.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "core/util.h"
#include "raidkit/raid.h"

static const char bench_usage[] =
    "Usage: raidkit bench [--suite NAME|FILE] [--configs LIST] [--members N]\n"
    "                     [--dir DIR | --model NAME] [--out DIR] [--format LIST] [--trials N]\n"
    "                     [--json]\n"
    "\n"
    "Build each configuration, serve it in-process over NBD on a private unix socket and run\n"
    "the suite's fio jobs against it (fio --ioengine=nbd), at least N trials each and more while\n"
    "the relative standard deviation is above 3.5% (at most 4x N). Progress goes to stderr;\n"
    "Ctrl-C stops cleanly and writes the reports with the results so far (exit 130).\n"
    "\n"
    "  -s, --suite NAME|FILE  bench/suites/NAME.ini (seed000, seed001, seed002, seed003, quick,\n"
    "                         tiny, tiny-fs) or a suite file (default quick)\n"
    "  -c, --configs LIST     comma list of single, linear, raid0, raid1, raid10, raid5, raid6,\n"
    "                         noop, nbdkit, plain, btrfs-PROFILE (default: single..raid6)\n"
    "  -n, --members N        members of the multi-disk configurations (default 4)\n"
    "  -d, --dir DIR          put member files in DIR (default a temporary dir on /dev/shm)\n"
    "  -m, --model NAME|FILE  wrap every member in a device model (sata-ssd-2014, hdd-7200 or an\n"
    "                         INI profile); adds the noop ceiling row and host-bound notes\n"
    "  -o, --out DIR          report directory (default bench-out)\n"
    "  -f, --format LIST      text,json,csv,svg,html (default all)\n"
    "  -t, --trials N         minimum trials per cell (default 3)\n"
    "  -j, --json             print the JSON report on stdout instead of the text tables\n"
    "  -h, --help             show this help\n"
    "\n"
    "Comparison rows: nbdkit (the member file served by nbdkit's file plugin) and\n"
    "btrfs-PROFILE (kernel btrfs over loop devices, fio with libaio; root and btrfs-progs).\n";

int cli_bench(int argc, char **argv)
{
    static const struct option longopts[] = {{"suite", required_argument, NULL, 's'},
                                             {"configs", required_argument, NULL, 'c'},
                                             {"members", required_argument, NULL, 'n'},
                                             {"dir", required_argument, NULL, 'd'},
                                             {"model", required_argument, NULL, 'm'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"format", required_argument, NULL, 'f'},
                                             {"trials", required_argument, NULL, 't'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct bench_opts o = {.suite = "quick", .members = 4, .trials = 3};
    uint64_t v;
    int ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":s:c:n:d:m:o:f:t:jh", longopts, NULL)) != -1) {
        switch (ch) {
        case 's':
            o.suite = optarg;
            break;
        case 'c':
            o.configs = optarg;
            break;
        case 'n':
            if (rk_parse_u64(optarg, &v) < 0 || v < 1 || v > RK_MAX_MEMBERS) {
                fprintf(stderr, "raidkit bench: --members: '%s' is not 1..%d\n", optarg,
                        RK_MAX_MEMBERS);
                return CLI_EXIT_USAGE;
            }
            o.members = (int)v;
            break;
        case 'd':
            o.dir = optarg;
            break;
        case 'm':
            o.model = optarg;
            break;
        case 'o':
            o.out = optarg;
            break;
        case 'f':
            if (bench_parse_formats(optarg, &o.formats) < 0) {
                fprintf(stderr,
                        "raidkit bench: --format: '%s' is not a comma list of text, json, csv, "
                        "svg, html\n",
                        optarg);
                return CLI_EXIT_USAGE;
            }
            break;
        case 't':
            if (rk_parse_u64(optarg, &v) < 0 || v < 1 || v > BENCH_MAX_TRIALS / 4) {
                fprintf(stderr, "raidkit bench: --trials: '%s' is not 1..%d\n", optarg,
                        BENCH_MAX_TRIALS / 4);
                return CLI_EXIT_USAGE;
            }
            o.trials = (int)v;
            break;
        case 'j':
            o.json_stdout = true;
            break;
        case 'h':
            fputs(bench_usage, stdout);
            return CLI_EXIT_OK;
        case ':':
            fprintf(stderr, "raidkit bench: option '%s' needs a value\n", argv[optind - 1]);
            return CLI_EXIT_USAGE;
        default:
            fprintf(stderr, "raidkit bench: unknown option '%s' (see raidkit bench --help)\n",
                    argv[optind - 1]);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "raidkit bench: unexpected argument '%s' (see raidkit bench --help)\n",
                argv[optind]);
        return CLI_EXIT_USAGE;
    }
    if (o.dir && o.model) {
        fprintf(stderr, "raidkit bench: --dir and --model are exclusive\n");
        return CLI_EXIT_USAGE;
    }
    return bench_run(&o);
}
