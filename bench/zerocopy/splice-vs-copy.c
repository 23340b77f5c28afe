/* Sender CPU of one NBD read reply's data path, two ways (bench/RESULTS.md "Zero-copy reads"):
 *   copy:   pread(member) into a buffer, then sendmsg(header, buffer) on a unix stream socket
 *           (what `raidkit serve` and nbdkit do: two copies);
 *   splice: send(header, MSG_MORE), then splice(member -> pipe) and splice(pipe -> socket)
 *           (page references, no copy on the sending side).
 * A second thread drains the socket (the client's copy, not counted).
 * Usage: splice-vs-copy copy|splice LEN COUNT FILE  -> "MODE len LEN: X us CPU/op, Y MiB/s" */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int sv[2];

static void *drain(void *arg)
{
    (void)arg;
    char *b = malloc(1 << 20);
    while (b && recv(sv[1], b, 1 << 20, 0) > 0)
        ;
    free(b);
    return NULL;
}

static double thread_cpu_s(void)
{
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return (double)r.ru_utime.tv_sec + (double)r.ru_stime.tv_sec +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static double wall_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Send all n iovecs (blocking). 0 or -1. */
static int send_all(int fd, struct iovec *iov, int n)
{
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    while (m.msg_iovlen) {
        ssize_t w = sendmsg(fd, &m, 0);
        if (w < 0)
            return -1;
        size_t d = (size_t)w;
        while (m.msg_iovlen && d >= m.msg_iov->iov_len) {
            d -= m.msg_iov->iov_len;
            m.msg_iov++;
            m.msg_iovlen--;
        }
        if (m.msg_iovlen) {
            m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + d;
            m.msg_iov->iov_len -= d;
        }
    }
    return 0;
}

/* One reply of len bytes from off by splice: 0 or -1. */
static int send_splice(int fd, int p[2], uint8_t *hdr, off_t off, size_t len)
{
    if (send(sv[0], hdr, 16, MSG_MORE) != 16)
        return -1;
    loff_t o = off;
    while (len) {
        ssize_t k = splice(fd, &o, p[1], NULL, len, SPLICE_F_MOVE);
        if (k <= 0)
            return -1;
        len -= (size_t)k;
        while (k) {
            ssize_t m = splice(p[0], NULL, sv[0], NULL, (size_t)k, SPLICE_F_MOVE);
            if (m <= 0)
                return -1;
            k -= m;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5 || (strcmp(argv[1], "copy") && strcmp(argv[1], "splice"))) {
        fprintf(stderr, "usage: %s copy|splice LEN COUNT FILE\n", argv[0]);
        return 2;
    }
    size_t len = strtoul(argv[2], NULL, 0);
    long count = strtol(argv[3], NULL, 0);
    int fd = open(argv[4], O_RDONLY);
    off_t size = fd < 0 ? 0 : lseek(fd, 0, SEEK_END);
    int p[2];
    if (fd < 0 || len == 0 || count <= 0 || size <= (off_t)len ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(p)) {
        fprintf(stderr, "splice-vs-copy: bad arguments or file '%s'\n", argv[4]);
        return 2;
    }
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    pthread_t t;
    pthread_create(&t, NULL, drain, NULL);
    uint8_t *buf = aligned_alloc(4096, (len + 4095) & ~(size_t)4095), hdr[16] = {0};
    bool copy = !strcmp(argv[1], "copy");
    double c0 = thread_cpu_s(), w0 = wall_s();
    for (long i = 0; i < count; i++) {
        off_t off = (off_t)(((uint64_t)i * len) % (uint64_t)(size - (off_t)len)) & ~(off_t)4095;
        int r;
        if (copy) {
            struct iovec iov[2] = {{hdr, 16}, {buf, len}};
            r = pread(fd, buf, len, off) == (ssize_t)len ? send_all(sv[0], iov, 2) : -1;
        } else {
            r = send_splice(fd, p, hdr, off, len);
        }
        if (r) {
            perror("splice-vs-copy");
            return 1;
        }
    }
    double c1 = thread_cpu_s(), w1 = wall_s();
    printf("%s len %zu: %.1f us CPU/op, %.0f MiB/s\n", argv[1], len, (c1 - c0) * 1e6 / count,
           (double)count * (double)len / (w1 - w0) / 1048576);
    shutdown(sv[0], SHUT_WR);
    pthread_join(t, NULL);
    return 0;
}
