/* The comparison back-ends, outside raidkit: "nbdkit" (one file served by nbdkit's file plugin)
 * and "btrfs-PROFILE" (kernel btrfs over loop devices, fio with libaio on a file in it). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/run.h"
#include "core/util.h"

/* State of a peer configuration (t->priv). */
struct peer_state {
    pid_t nbdkit;
    char paths[RK_MAX_MEMBERS][600];
    int npaths;
    char loops[RK_MAX_MEMBERS][64];
    int nloops;
    char mnt[600];
    bool mounted;
};

static void peer_stop(struct run_ctx *x, struct run_target *t)
{
    struct peer_state *st = t->priv;
    if (!st)
        return;
    if (st->nbdkit > 0) {
        kill(st->nbdkit, SIGTERM);
        waitpid(st->nbdkit, NULL, 0);
    }
    if (st->mounted) {
        char *argv[] = {"umount", st->mnt, NULL};
        run_cmd(argv, NULL, 0, false);
    }
    if (st->mnt[0])
        rmdir(st->mnt);
    for (int i = 0; i < st->nloops; i++)
        run_loop_detach(st->loops[i]);
    for (int i = 0; i < st->npaths; i++)
        unlink(st->paths[i]);
    free(st);
    t->priv = NULL;
}

/* ---- nbdkit ---- */

static bool nbdkit_describe(struct bench_config *bc, const char *name, int members)
{
    if (strcmp(name, "nbdkit"))
        return false;
    snprintf(bc->label, sizeof(bc->label), "nbdkit file");
    bc->members = 1;
    return true;
}

static int nbdkit_start(struct run_ctx *x, const struct bench_config *bc, struct run_target *t,
                        char *err, size_t errlen)
{
    if (!run_have_prog("nbdkit")) {
        rk_set_err(err, errlen, "nbdkit is not installed");
        return -ENOENT;
    }
    struct peer_state *st = run_priv_new(t, sizeof(*st), err, errlen);
    if (!st)
        return -ENOMEM;
    snprintf(st->paths[0], sizeof(st->paths[0]), "%s/nbdkit-m0.img", x->work);
    st->npaths = 1;
    int r = run_make_file(st->paths[0], bench_suite_max_size(&x->suite), err, errlen);
    if (r < 0)
        return r;
    char sock[560], fileopt[700], threads[32];
    run_socket_path(x, sock, sizeof(sock));
    snprintf(fileopt, sizeof(fileopt), "file=%s", st->paths[0]);
    snprintf(threads, sizeof(threads), "%d", 2 * x->max_iodepth < 16 ? 16 : 2 * x->max_iodepth);
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int dn = open("/dev/null", O_RDWR);
        dup2(dn, 0);
        dup2(dn, 1);
        execlp("nbdkit", "nbdkit", "--foreground", "--exit-with-parent", "--unix", sock,
               "--threads", threads, "file", fileopt, (char *)NULL);
        _exit(127);
    }
    st->nbdkit = pid;
    for (int i = 0; i < 500; i++) {
        if (access(sock, F_OK) == 0) {
            snprintf(t->uri, sizeof(t->uri), "nbd+unix:///?socket=%.570s", sock);
            return 0;
        }
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            st->nbdkit = 0;
            rk_set_err(err, errlen, "nbdkit exited at start");
            return -EIO;
        }
        usleep(10000);
    }
    rk_set_err(err, errlen, "nbdkit did not create its socket in 5 s");
    return -ETIMEDOUT;
}

/* ---- btrfs ---- */

static bool btrfs_describe(struct bench_config *bc, const char *name, int members)
{
    if (strncmp(name, "btrfs-", 6) || !name[6])
        return false;
    snprintf(bc->label, sizeof(bc->label), "btrfs %s (%d)", name + 6, members);
    bc->members = members;
    return true;
}

static int btrfs_start(struct run_ctx *x, const struct bench_config *bc, struct run_target *t,
                       char *err, size_t errlen)
{
    char out[256];
    const char *profile = bc->name + 6;
    if (geteuid() != 0) {
        rk_set_err(err, errlen, "needs root (loop devices, mount)");
        return -EPERM;
    }
    if (!run_have_prog("mkfs.btrfs") || !run_have_prog("losetup")) {
        rk_set_err(err, errlen, "mkfs.btrfs (btrfs-progs) or losetup is missing");
        return -ENOENT;
    }
    struct peer_state *st = run_priv_new(t, sizeof(*st), err, errlen);
    if (!st)
        return -ENOMEM;
    /* btrfs wants some room beyond the test file for its metadata and chunk allocation. */
    uint64_t msize = x->member_size < (512ull << 20) ? (512ull << 20) : x->member_size;
    for (int i = 0; i < bc->members; i++) {
        snprintf(st->paths[i], sizeof(st->paths[i]), "%s/%s-m%d.img", x->work, bc->name, i);
        st->npaths = i + 1;
        int r = run_make_file(st->paths[i], msize, err, errlen);
        if (r < 0)
            return r;
        char *argv[] = {"losetup", "-f", "--show", st->paths[i], NULL};
        if (run_cmd(argv, out, sizeof(out), true) != 0) {
            run_chomp(out);
            rk_set_err(err, errlen, "losetup: %s", out);
            return -EIO;
        }
        run_chomp(out);
        snprintf(st->loops[i], sizeof(st->loops[i]), "%.*s", (int)sizeof(st->loops[i]) - 1, out);
        st->nloops = i + 1;
    }
    char *mk[8 + RK_MAX_MEMBERS] = {"mkfs.btrfs",    "-f", "-d",
                                    (char *)profile, "-m", (char *)profile};
    int k = 6;
    for (int i = 0; i < st->nloops; i++)
        mk[k++] = st->loops[i];
    mk[k] = NULL;
    /* Metadata profile raid5/6 is discouraged; data carries the profile under test. */
    if (!strcmp(profile, "raid5") || !strcmp(profile, "raid6"))
        mk[5] = "raid1";
    char msg[2048];
    if (run_cmd(mk, msg, sizeof(msg), true) != 0) {
        char *nl = strrchr(msg, '\n');
        while (nl && nl[1] == '\0' && nl != msg) {
            *nl = '\0';
            nl = strrchr(msg, '\n');
        }
        rk_set_err(err, errlen, "mkfs.btrfs -d %s failed: %s", profile, nl ? nl + 1 : msg);
        return -EIO;
    }
    snprintf(st->mnt, sizeof(st->mnt), "%s/mnt-%s", x->work, bc->name);
    if (mkdir(st->mnt, 0755) < 0) {
        rk_set_err(err, errlen, "%s: %s", st->mnt, strerror(errno));
        st->mnt[0] = '\0';
        return -errno;
    }
    char *mnt[] = {"mount", "-t", "btrfs", st->loops[0], st->mnt, NULL};
    if (run_cmd(mnt, msg, sizeof(msg), true) != 0) {
        run_chomp(msg);
        rk_set_err(err, errlen, "mount: %s", msg);
        return -EIO;
    }
    st->mounted = true;
    snprintf(t->filename, sizeof(t->filename), "%.580s/fio.dat", st->mnt);
    return 0;
}

const struct bench_backend bench_backend_nbdkit = {
    .kind = "nbdkit",
    .names = "nbdkit",
    .describe = nbdkit_describe,
    .start = nbdkit_start,
    .stop = peer_stop,
};

const struct bench_backend bench_backend_btrfs = {
    .kind = "btrfs",
    .names = "btrfs-PROFILE",
    .describe = btrfs_describe,
    .start = btrfs_start,
    .stop = peer_stop,
};
