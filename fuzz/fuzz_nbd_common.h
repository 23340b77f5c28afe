/* Shared by the NBD harnesses: one in-process `raidkit serve`-like server (a 16 MiB memory
 * device behind rk_nbd_server_*, on a unix socket in a private temp directory, run by a thread)
 * and a client that sends a byte string, half-closes and reads every reply until the server
 * closes. The server is the real one, so every parser of the handshake and transmission phases
 * is reached exactly as a network client reaches it. */
#ifndef RK_FUZZ_NBD_COMMON_H
#define RK_FUZZ_NBD_COMMON_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/util.h"
#include "raidkit/device.h"
#include "raidkit/nbd.h"

#include "fuzz_tmp.h"

static struct sockaddr_un fz_addr = {.sun_family = AF_UNIX};

static void *fz_server_thread(void *arg)
{
    rk_nbd_server_run(arg);
    return NULL;
}

/* Start the server once (mode: RK_NBD_TLS_OFF, or REQUIRE without credentials is not allowed,
 * so TLS stays off; the require paths are covered by the integration tests). */
static void fz_server_start(void)
{
    if (fz_addr.sun_path[0])
        return;
    signal(SIGPIPE, SIG_IGN);
    rk_log_set_level(RK_LOG_ERROR);
    char dir[104]; /* + "/s": a unix socket path (108 bytes at most) */
    fz_tempdir(dir, sizeof(dir), "rk-fuzz");
    snprintf(fz_addr.sun_path, sizeof(fz_addr.sun_path), "%s/s", dir);
    char listen[128];
    snprintf(listen, sizeof(listen), "unix:%s", fz_addr.sun_path);
    struct rk_dev *dev;
    if (rk_mem_open(16u << 20, 512, &dev))
        abort();
    struct rk_nbd_opts o = {
        .listen = listen, .export_name = "fz", .threads = 4, .max_request = 1u << 20};
    struct rk_nbd_server *srv;
    char err[256];
    if (rk_nbd_server_create(dev, &o, &srv, err, sizeof(err))) {
        fprintf(stderr, "fuzz: server: %s\n", err);
        abort();
    }
    pthread_t t;
    if (pthread_create(&t, NULL, fz_server_thread, srv))
        abort();
}

/* Send pre (len npre) then data, half-close, read until EOF or a 2 s silence. */
static void fz_exchange(const uint8_t *pre, size_t npre, const uint8_t *data, size_t size)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&fz_addr, sizeof(fz_addr)))
        abort();
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    /* Replies are read while sending, so a server answering a long input never blocks. */
    static uint8_t sink[1 << 16];
    const uint8_t *parts[2] = {pre, data};
    size_t lens[2] = {npre, size};
    for (int i = 0; i < 2; i++) {
        size_t off = 0;
        while (off < lens[i]) {
            ssize_t n = send(fd, parts[i] + off, lens[i] - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                off += (size_t)n;
                continue;
            }
            if (recv(fd, sink, sizeof(sink), 0) <= 0)
                goto done; /* the server hung up (or went silent) mid-input */
        }
    }
    shutdown(fd, SHUT_WR);
    while (recv(fd, sink, sizeof(sink), 0) > 0)
        ;
done:
    close(fd);
}

#endif
