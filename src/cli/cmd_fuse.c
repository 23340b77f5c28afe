/* `raidkit fuse MOUNTPOINT [serve options] MEMBER...`: assemble the array as `serve` does and
 * export it as one file through FUSE (src/fuse/export.h) until SIGINT/SIGTERM or unmount; then
 * finish in-flight requests, flush, mark the array clean and exit 0. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/cli.h"
#include "cli/report.h"
#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/volume.h"
#ifdef RK_HAVE_FUSE
#include "fuse/export.h"
#endif

static const char fuse_usage[] =
    "Usage: raidkit fuse MOUNTPOINT [--name NAME] [--allow-other] [--max-io SIZE] [--json]\n"
    "                   [serve options: --read-only --degraded --force --threads N\n"
    "                    --emulate PROFILE --control PATH --rebuild-rate MIB\n"
    "                    --debug-fault SLOT:SPEC] MEMBER...\n"
    "\n"
    "Assemble the array from MEMBER files and export it through FUSE as one file whose size is\n"
    "the array size: MOUNTPOINT itself when it is a regular file, MOUNTPOINT/NAME when it is a\n"
    "directory. Then e.g.: losetup --direct-io=on -f --show FILE; mkfs.ext4 /dev/loopN.\n"
    "fsync flushes the volume, fallocate --punch-hole discards (reads back zeroes),\n"
    "fallocate --zero-range writes zeroes. SIGINT/SIGTERM or fusermount3 -u: finish in-flight\n"
    "requests, unmount, flush, mark the array clean, exit 0.\n"
    "\n"
    "      --name NAME     file name inside a directory MOUNTPOINT (default \"volume\")\n"
    "      --allow-other   let other users open the file (FUSE allow_other)\n"
    "      --max-io SIZE   largest FUSE read/write request (default 1M; 4K..1M)\n"
    "      --json          after the stop, print {mountpoint, file, size, result} as JSON\n"
    "  -t, --threads N     most FUSE worker threads (default 16)\n"
    "  -c, --control PATH  serve the control socket at PATH (raidkit status/fail/replace/scrub)\n"
    "  other options as in raidkit serve --help, except those of the NBD server (refused:\n"
    "                     --listen, --export, --foreground, --socket-*, --tls*, the connection\n"
    "                     limits and timeouts) and --config, --single, --run, --pidfile,\n"
    "                     --exit-with-parent\n";

/* The options of fuse itself, taken out of argv before serve's parser sees the rest. */
struct fuse_only {
    const char *name;
    bool allow_other, json;
    uint64_t max_io;
};

/* Before any member is opened (cli_serve_volume.check): MOUNTPOINT must be an existing regular
 * file or directory, and /dev/fuse usable. 0, or CLI_EXIT_FAIL after a message. */
static int fuse_check_mountpoint(char **pos, int skip)
{
    struct stat st;
    if (skip < 1)
        return 0;
    if (stat(pos[0], &st)) {
        fprintf(stderr, "raidkit fuse: mount point %s: %s\n", pos[0], strerror(errno));
        return CLI_EXIT_FAIL;
    }
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "raidkit fuse: mount point %s: not a regular file or directory\n", pos[0]);
        return CLI_EXIT_FAIL;
    }
    if (access("/dev/fuse", R_OK | W_OK)) {
        fprintf(stderr, "raidkit fuse: /dev/fuse: %s (FUSE is not available here)\n",
                strerror(errno));
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* Remove --name/--allow-other/--max-io (also --opt=value) from argv, compacting it; *argc is
 * updated. 0, -1 after --help, or CLI_EXIT_USAGE after a message. */
static int fuse_take_own(int *argc, char **argv, struct fuse_only *f)
{
    int w = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        size_t kl = strcspn(a, "=");
        if (!strcmp(a, "--")) { /* the rest is positional */
            while (i < *argc)
                argv[w++] = argv[i++];
            break;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(fuse_usage, stdout);
            return -1;
        }
        if (!strcmp(a, "--allow-other")) {
            f->allow_other = true;
            continue;
        }
        if (!strcmp(a, "--json")) {
            f->json = true;
            continue;
        }
        bool is_name = !strncmp(a, "--name", kl) && kl == 6;
        bool is_max = !strncmp(a, "--max-io", kl) && kl == 8;
        if (!is_name && !is_max) {
            argv[w++] = argv[i];
            continue;
        }
        if (a[kl] == '=')
            val = a + kl + 1;
        else if (i + 1 < *argc)
            val = argv[++i];
        if (!val) {
            fprintf(stderr, "raidkit fuse: option '%s' needs a value\n", a);
            return CLI_EXIT_USAGE;
        }
        if (is_name) {
            if (!*val || strchr(val, '/') || !strcmp(val, ".") || !strcmp(val, "..")) {
                fprintf(stderr, "raidkit fuse: bad --name '%s' (a file name)\n", val);
                return CLI_EXIT_USAGE;
            }
            f->name = val;
        } else if (rk_parse_size(val, &f->max_io) || f->max_io < 4096 || f->max_io > 1024 * 1024 ||
                   f->max_io % 4096) {
            fprintf(stderr, "raidkit fuse: bad --max-io '%s' (4K..1M, a multiple of 4K)\n", val);
            return CLI_EXIT_USAGE;
        }
    }
    *argc = w;
    argv[w] = NULL;
    return 0;
}

int cli_fuse(int argc, char **argv)
{
    struct fuse_only f = {0};
    int r = fuse_take_own(&argc, argv, &f);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
#ifndef RK_HAVE_FUSE
    fprintf(stderr, "raidkit fuse: built without libfuse3 (install libfuse3-dev, rebuild)\n");
    return CLI_EXIT_FAIL;
#else
    struct cli_serve_volume sv = {.check = fuse_check_mountpoint};
    r = cli_serve_open(argc, argv, 1, &sv);
    if (r)
        return r;
    const char *mnt = argv[optind]; /* the first positional after serve's parse */
    char err[512] = "";
    struct rk_control *ctl = NULL;
    if (sv.control) {
        r = rk_control_start_fd(sv.control_fd, sv.control, sv.vol, &ctl, err, sizeof(err));
        if (r) {
            fprintf(stderr, "raidkit fuse: %s\n", err[0] ? err : strerror(-r));
            rk_volume_close(sv.vol);
            return CLI_EXIT_FAIL;
        }
        rk_info("control socket on %s", sv.control);
    }
    /* URI members: fail dead connections, reconnect and re-add, as under serve; stopped by
     * rk_volume_close before the volume goes. */
    if (rk_volume_remote_watch(sv.vol, sv.rebuild_rate))
        fprintf(stderr, "raidkit fuse: cannot watch the remote members\n");
    struct rk_fuse_opts fo = {.mountpoint = mnt,
                              .name = f.name,
                              .threads = sv.threads,
                              .read_only = sv.read_only,
                              .allow_other = f.allow_other,
                              .max_io = (uint32_t)f.max_io};
    uint64_t size = rk_volume_dev(sv.vol)->size;
    r = rk_fuse_export_run(rk_volume_dev(sv.vol), &fo, err, sizeof(err));
    if (r)
        fprintf(stderr, "raidkit fuse: %s\n", err[0] ? err : strerror(-r));
    if (sv.read_only)
        rk_info("stopping (read-only: nothing was written, the array's state stays as it was)");
    else
        rk_info("stopping: marking the array clean");
    rk_control_stop(ctl);
    int rc = rk_volume_close(sv.vol);
    if (rc) {
        fprintf(stderr, "raidkit fuse: shutdown: %s\n", strerror(-rc));
        return CLI_EXIT_FAIL;
    }
    if (r)
        return CLI_EXIT_FAIL;
    rk_info("stopped cleanly");
    if (f.json) {
        struct stat st;
        char file[4200];
        bool dir = !stat(mnt, &st) && S_ISDIR(st.st_mode);
        snprintf(file, sizeof(file), "%s%s%s", mnt, dir ? "/" : "",
                 dir ? fo.name ? fo.name : "volume" : "");
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "mountpoint", mnt);
        cJSON_AddStringToObject(j, "file", file);
        cJSON_AddNumberToObject(j, "size", (double)size);
        cJSON_AddStringToObject(j, "result", "stopped cleanly");
        return cli_print_json(j);
    }
    return CLI_EXIT_OK;
#endif
}
