/* The "plain" comparison back-end: one plain file (in the work directory, beside where the
 * members would be) behind a loop device, no RAID layer and no model. Raw jobs run fio with
 * libaio, direct, on the loop device; filesystem jobs make their filesystem on a loop device over
 * one such file (job_fs_dev.c): the peer row of every filesystem table. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/run.h"
#include "core/util.h"

/* State of a plain configuration (t->priv). */
struct plain_state {
    char path[600];
    char loop[64];
};

static bool plain_describe(struct bench_config *bc, const char *name, int members)
{
    (void)members;
    if (strcmp(name, "plain"))
        return false;
    snprintf(bc->label, sizeof(bc->label), "plain loop file");
    bc->members = 1;
    return true;
}

static int plain_start(struct run_ctx *x, const struct bench_config *bc, struct run_target *t,
                       char *err, size_t errlen)
{
    (void)bc;
    if (geteuid() != 0) {
        rk_set_err(err, errlen, "needs root (loop device)");
        return -EPERM;
    }
    struct plain_state *st = run_priv_new(t, sizeof(*st), err, errlen);
    if (!st)
        return -ENOMEM;
    snprintf(st->path, sizeof(st->path), "%.580s/plain.img", x->work);
    int r = run_fill_file(st->path, bench_suite_max_size(&x->suite), err, errlen);
    if (r < 0)
        return r;
    char out[256];
    char *argv[] = {"losetup", "--direct-io=on", "-f", "--show", st->path, NULL};
    if (run_cmd(argv, out, sizeof(out), false) != 0) {
        rk_set_err(err, errlen, "losetup %s failed", st->path);
        return -EIO;
    }
    run_chomp(out);
    snprintf(st->loop, sizeof(st->loop), "%.63s", out);
    snprintf(t->filename, sizeof(t->filename), "%s", st->loop);
    return 0;
}

static void plain_stop(struct run_ctx *x, struct run_target *t)
{
    (void)x;
    struct plain_state *st = t->priv;
    if (!st)
        return;
    if (st->loop[0])
        run_loop_detach(st->loop);
    if (st->path[0])
        unlink(st->path);
    free(st);
    t->priv = NULL;
}

const struct bench_backend bench_backend_plain = {
    .kind = "plain",
    .names = "plain",
    .describe = plain_describe,
    .start = plain_start,
    .stop = plain_stop,
};
