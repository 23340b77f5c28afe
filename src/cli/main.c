/* raidkit command line: parses arguments with getopt_long and dispatches to the subcommands
 * (docs/CLI.md). Every mistake is one line on stderr and a non-zero exit; nothing is written first.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/json_refusal.h"
#include "core/util.h"
#include "raidkit/version.h"

static const char main_usage[] =
    "Usage: raidkit COMMAND [OPTIONS] [MEMBER...]\n"
    "\n"
    "raidkit builds software RAID volumes (linear, raid0, raid1, raid10, raid5, raid6) over\n"
    "member files or block devices, serves them to NBD clients (nbdinfo, nbdcopy, fio,\n"
    "qemu-img, nbd-client), keeps them healthy (rebuild, scrub) and benchmarks them.\n"
    "\n"
    "Commands:\n"
    "  create   write superblocks and build a new array on MEMBER files\n"
    "  info     show the superblocks and array state of MEMBER files\n"
    "  bitmap   add a write-intent bitmap to a stopped array that has none (--add)\n"
    "  serve    assemble the array from MEMBER files and serve it over NBD\n"
    "  status   show a served array's state, rebuild/scrub progress and I/O counters\n"
    "  fail     mark a member of a served array failed\n"
    "  replace  rebuild a failed slot onto a new member (online or offline)\n"
    "  re-add   take a slot's old member back, resyncing only what changed (online or offline)\n"
    "  scrub    check (and --repair) the copies/parity of an array (online or offline)\n"
    "  cache    SSD cache of an array: create, and online mode, detach, attach\n"
    "  assemble find the members of the arrays of the config file by their superblocks\n"
    "  fuse     assemble the array and export it as one file through FUSE (losetup, mkfs)\n"
    "  bench    run fio suites over RAID configurations and write reports (text, HTML, ...)\n"
    "\n"
    "Options:\n"
    "  -h, --help      show this help (or `raidkit COMMAND --help` for a command)\n"
    "  -V, --version   print the version\n"
    "  -v, --verbose   before COMMAND: debug log lines too (as RAIDKIT_DEBUG=1)\n"
    "  -q, --quiet     before COMMAND: log warnings and errors only\n"
    "\n"
    "Sizes take K, M, G, T suffixes (powers of 1024). Exit status: 0 success, 1 failure,\n"
    "2 usage error; with --test (info, status) 3 degraded, 4 recovering, 5 failed;\n"
    "6 info on a member whose superblock is corrupt (1: not a raidkit member at all).\n"
    "See raidkit(8), docs/CLI.md and docs/FORMAT.md.\n";

/* Run the command cmd (argv[1]); its exit status. */
static int main_run(const char *cmd, int argc, char **argv)
{
    /* Subcommands parse argv[1..]; getopt starts at index 1 of the shifted vector. */
    if (!strcmp(cmd, "create"))
        return cli_create(argc - 1, argv + 1);
    if (!strcmp(cmd, "bitmap"))
        return cli_bitmap(argc - 1, argv + 1);
    if (!strcmp(cmd, "info"))
        return cli_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve"))
        return cli_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "cache"))
        return cli_cache(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench"))
        return cli_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "status"))
        return cli_status(argc - 1, argv + 1);
    if (!strcmp(cmd, "fail"))
        return cli_fail(argc - 1, argv + 1);
    if (!strcmp(cmd, "replace"))
        return cli_replace(argc - 1, argv + 1);
    if (!strcmp(cmd, "re-add"))
        return cli_readd(argc - 1, argv + 1);
    if (!strcmp(cmd, "fuse"))
        return cli_fuse(argc - 1, argv + 1);
    if (!strcmp(cmd, "scrub"))
        return cli_scrub(argc - 1, argv + 1);
    if (!strcmp(cmd, "assemble"))
        return cli_assemble(argc - 1, argv + 1);
    fprintf(stderr, "raidkit: unknown command '%s' (see raidkit --help)\n", cmd);
    return 2;
}

int main(int argc, char **argv)
{
    /* -v/-q before the command set the log level for every command. */
    while (argc >= 2 && (!strcmp(argv[1], "-v") || !strcmp(argv[1], "--verbose") ||
                         !strcmp(argv[1], "-q") || !strcmp(argv[1], "--quiet"))) {
        rk_log_set_level(argv[1][1] == 'v' || argv[1][2] == 'v' ? RK_LOG_DEBUG : RK_LOG_WARN);
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    if (argc < 2) {
        fputs(main_usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(main_usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
        printf("raidkit %s\n", RK_VERSION_STRING);
        return 0;
    }
    /* With --json every refusal still prints one JSON document (json_refusal.h); serve prints
     * nothing on stdout (it is the server). */
    char words[64];
    if (!strcmp(cmd, "cache") && argc >= 3 && argv[2][0] != '-')
        snprintf(words, sizeof(words), "cache %s", argv[2]);
    else
        snprintf(words, sizeof(words), "%s", cmd);
    if (strcmp(cmd, "serve"))
        cli_json_begin(words, argc - 1, argv + 1);
    return cli_json_end(main_run(cmd, argc, argv));
}
