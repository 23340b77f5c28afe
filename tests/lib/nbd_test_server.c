/* Test helper: export a memory or file device (optionally behind a fault device) over NBD with
 * rk_nbd_server_*, print "ready" to stderr once listening, stop cleanly on SIGINT/SIGTERM. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "raidkit/device.h"
#include "raidkit/member.h"
#include "raidkit/nbd.h"

static struct rk_nbd_server *ts_srv;

static void ts_on_signal(int sig)
{
    (void)sig;
    if (ts_srv)
        rk_nbd_server_stop(ts_srv);
}

static void ts_usage(void)
{
    fprintf(stderr, "usage: nbd_test_server --listen unix:PATH|tcp:[HOST:]PORT [--size SIZE]\n"
                    "       [--file PATH] [--block 512|4096] [--read-only] [--fault SPEC]\n"
                    "       [--export NAME] [--description TEXT] [--threads N]\n"
                    "       [--max-request BYTES]\n");
}

int main(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"size", required_argument, NULL, 's'},
        {"file", required_argument, NULL, 'f'},
        {"block", required_argument, NULL, 'b'},
        {"read-only", no_argument, NULL, 'r'},
        {"fault", required_argument, NULL, 'F'},
        {"export", required_argument, NULL, 'e'},
        {"description", required_argument, NULL, 'd'},
        {"threads", required_argument, NULL, 't'},
        {"max-request", required_argument, NULL, 'm'},
        {NULL, 0, NULL, 0},
    };
    struct rk_nbd_opts no = {.export_name = ""};
    uint64_t size = 64ull << 20, block = 512, threads = 0, maxreq = 0;
    const char *file = NULL, *fault = NULL;
    struct rk_dev *dev = NULL;
    char err[256] = "";
    int rc = 2, r, ch;

    while ((ch = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
        switch (ch) {
        case 'l':
            no.listen = optarg;
            break;
        case 's':
            if (rk_parse_size(optarg, &size))
                goto usage;
            break;
        case 'f':
            file = optarg;
            break;
        case 'b':
            if (rk_parse_u64(optarg, &block) || (block != 512 && block != 4096))
                goto usage;
            break;
        case 'r':
            no.read_only = true;
            break;
        case 'F':
            fault = optarg;
            break;
        case 'e':
            no.export_name = optarg;
            break;
        case 'd':
            no.description = optarg;
            break;
        case 't':
            if (rk_parse_u64(optarg, &threads) || threads > 1024)
                goto usage;
            no.threads = (int)threads;
            break;
        case 'm':
            if (rk_parse_size(optarg, &maxreq) || maxreq > UINT32_MAX)
                goto usage;
            no.max_request = (uint32_t)maxreq;
            break;
        default:
            goto usage;
        }
    }
    if (!no.listen || optind != argc)
        goto usage;

    rc = 1;
    if (file)
        r = rk_file_open(file, no.read_only ? RK_FILE_READ_ONLY : 0, &dev);
    else
        r = rk_mem_open(size, (uint32_t)block, &dev);
    if (r) {
        fprintf(stderr, "nbd_test_server: cannot open device: %s\n", strerror(-r));
        goto out;
    }
    if (fault) {
        struct rk_dev *fd = NULL;
        r = rk_fault_open(dev, true, &fd);
        if (r) {
            fprintf(stderr, "nbd_test_server: fault device: %s\n", strerror(-r));
            goto out;
        }
        dev = fd;
        r = rk_fault_apply_spec(dev, fault, err, sizeof(err));
        if (r) {
            fprintf(stderr, "nbd_test_server: --fault: %s\n", err);
            goto out;
        }
    }

    struct sigaction sa = {.sa_handler = ts_on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    r = rk_nbd_server_create(dev, &no, &ts_srv, err, sizeof(err));
    if (r) {
        fprintf(stderr, "nbd_test_server: %s\n", err);
        goto out;
    }
    fprintf(stderr, "ready\n");
    r = rk_nbd_server_run(ts_srv);
    if (r)
        fprintf(stderr, "nbd_test_server: run: %s\n", strerror(-r));
    else
        rc = 0;
out:
    rk_nbd_server_destroy(ts_srv);
    rk_dev_close(dev);
    return rc;
usage:
    ts_usage();
    return rc;
}
