/* Per-thread io_uring of file members (rk_dev_ops.start_local / wait_local): the member I/O of
 * one rk_io_run round is prepared on the calling thread's own ring, submitted with one
 * io_uring_enter that also waits, and reaped by the same thread, so a mirrored write to O_DIRECT
 * members costs no hand-off to the member's reaper thread and back (docs/ARCHITECTURE.md
 * "Which mechanism per member"). */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "member/file_int.h"

/*
 * One ring per thread, made on the thread's first round and freed when the thread exits (a
 * pthread key destructor). It has FILE_LOCAL_ENTRIES SQEs and twice as many CQEs; at most
 * FILE_LOCAL_ENTRIES ios are on it at a time (file_local_start refuses more, the caller then
 * uses the shared ring), so the CQ never overflows. Setup asks for DEFER_TASKRUN and
 * SINGLE_ISSUER (completion work runs when this thread waits, no inter-processor interrupt);
 * older kernels get the ring without them, a kernel without io_uring none (the ios then take
 * the normal path).
 *
 * An io on the ring has member_priv = the ring's state; the thread that reaps its CQE clears it
 * and sets result. A wait reaps every CQE of the ring, so a round nested inside another on the
 * same thread (a device whose synchronous path runs a round of its own) completes the outer
 * round's ios too, and the outer wait then finds them done.
 */
#define FILE_LOCAL_ENTRIES 64u

struct file_tl {
    struct io_uring ring;
    int state;         /* 0 = not tried, 1 = ready, -1 = unavailable on this thread */
    unsigned inflight; /* ios on the ring (prepared or in the kernel) */
};

static __thread struct file_tl file_tl;
static pthread_key_t file_tl_key;
static pthread_once_t file_tl_once = PTHREAD_ONCE_INIT;
static bool file_tl_key_ok;

static void file_tl_free(void *arg)
{
    struct file_tl *t = arg;
    if (t && t->state == 1) {
        io_uring_queue_exit(&t->ring);
        t->state = -1;
    }
}

static void file_tl_key_init(void)
{
    file_tl_key_ok = pthread_key_create(&file_tl_key, file_tl_free) == 0;
}

/* The calling thread's ring, set up on first use; NULL when it cannot have one. */
static struct file_tl *file_tl_get(void)
{
    struct file_tl *t = &file_tl;
    if (t->state == 1)
        return t;
    if (t->state < 0)
        return NULL;
    t->state = -1;
    pthread_once(&file_tl_once, file_tl_key_init);
    if (!file_tl_key_ok)
        return NULL;
    struct io_uring_params prm = {
        .flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
    };
    if (io_uring_queue_init_params(FILE_LOCAL_ENTRIES, &t->ring, &prm) < 0) {
        memset(&prm, 0, sizeof(prm));
        if (io_uring_queue_init_params(FILE_LOCAL_ENTRIES, &t->ring, &prm) < 0)
            return NULL;
    }
    if (pthread_setspecific(file_tl_key, t)) {
        io_uring_queue_exit(&t->ring);
        return NULL;
    }
    t->state = 1;
    t->inflight = 0;
    return t;
}

bool file_local_start(struct rk_dev *dev, struct rk_io *io)
{
    struct file_priv *p = dev->priv;
    if (!p->local_io || (io->op == RK_OP_WRITE && p->read_only) ||
        (io->op != RK_OP_READ && io->op != RK_OP_WRITE && io->op != RK_OP_FLUSH))
        return false;
    struct file_tl *t = file_tl_get();
    if (!t || t->inflight >= FILE_LOCAL_ENTRIES)
        return false;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
    if (!sqe)
        return false;
    io->member_done = 0;
    io->member_priv = t;
    file_prep_sqe(sqe, p->fd, io, 0);
    t->inflight++;
    return true;
}

/* Handle every CQE now on t's ring: finish ios or prepare their next stage. */
static void file_local_reap(struct file_tl *t)
{
    struct io_uring_cqe *cqe;
    unsigned head, n = 0;
    io_uring_for_each_cqe(&t->ring, head, cqe)
    {
        uint64_t data = io_uring_cqe_get_data64(cqe), tag = data & FILE_TAG_FSYNC;
        struct rk_io *io = (struct rk_io *)(uintptr_t)(data & ~FILE_TAG_FSYNC);
        int result = 0;
        n++;
        if (file_step(io, &tag, cqe->res, &result)) {
            io->result = result;
            io->member_priv = NULL;
            t->inflight--;
            continue;
        }
        /* Next stage in the same place: an SQE is free, since every io on the ring holds at
         * most one and the ring has FILE_LOCAL_ENTRIES of them. */
        struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
        struct file_priv *p = io->dev->priv;
        if (!sqe) {
            io_uring_submit(&t->ring);
            sqe = io_uring_get_sqe(&t->ring);
        }
        if (!sqe) { /* cannot happen (see above); fail the io rather than lose it */
            io->result = -EIO;
            io->member_priv = NULL;
            t->inflight--;
            continue;
        }
        file_prep_sqe(sqe, p->fd, io, tag);
    }
    io_uring_cq_advance(&t->ring, n);
}

void file_local_wait(struct rk_io *const *ios, int n)
{
    struct file_tl *t = &file_tl;
    unsigned spins = 0;
    if (n == 0) {
        if (t->state == 1)
            io_uring_submit(&t->ring); /* what fails here is submitted again by the wait */
        return;
    }
    for (;;) {
        unsigned left = 0;
        for (int i = 0; i < n; i++)
            left += ios[i]->member_priv != NULL;
        if (!left)
            return;
        int r = io_uring_submit_and_wait(&t->ring, left);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && ++spins % 1000 == 1)
            rk_err("io_uring_submit_and_wait: %s (retrying)", strerror(-r));
        if (r < 0 && r != -EINTR)
            usleep(50); /* short of memory, or the CQ is being drained */
        file_local_reap(t);
    }
}
