/* The control socket server of a served volume: a unix socket and one thread that serves one
 * connection at a time, one request line in and one reply line out (ctl/commands.c answers). */
#include "ctl/control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/util.h"

struct rk_control {
    int fd;      /* listening socket */
    int stop[2]; /* pipe: a byte in stop[1] ends the thread */
    char path[108];
    struct rk_volume *v;
    pthread_t thread;
};

/* Write all of buf; false on error. */
static bool ctl_write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        buf += n;
        len -= (size_t)n;
    }
    return true;
}

static bool ctl_reply(int fd, char *reply)
{
    bool ok = reply && ctl_write_all(fd, reply, strlen(reply)) && ctl_write_all(fd, "\n", 1);
    free(reply);
    return ok;
}

/* Serve one connection: lines until EOF, an error, a too-long line or the 10 s timeout. */
static void ctl_client(struct rk_control *c, int fd)
{
    char *line = malloc(RK_CONTROL_LINE_MAX + 1);
    size_t used = 0;
    if (!line)
        return;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    for (;;) {
        char *nl = memchr(line, '\n', used);
        if (nl) {
            *nl = '\0';
            size_t consumed = (size_t)(nl - line) + 1;
            if (!ctl_reply(fd, rk_control_handle(c->v, line)))
                break;
            memmove(line, line + consumed, used - consumed);
            used -= consumed;
            continue;
        }
        if (used >= RK_CONTROL_LINE_MAX) {
            ctl_reply(fd,
                      rk_control_error("request line longer than %d bytes", RK_CONTROL_LINE_MAX));
            break;
        }
        ssize_t n = recv(fd, line + used, RK_CONTROL_LINE_MAX - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0 && used) { /* last line without newline */
                line[used] = '\0';
                ctl_reply(fd, rk_control_handle(c->v, line));
            }
            break;
        }
        used += (size_t)n;
    }
    free(line);
}

static void *ctl_thread(void *arg)
{
    struct rk_control *c = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN},
                              {.fd = c->stop[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        if (!(p[0].revents & POLLIN))
            continue;
        int fd = accept4(c->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        ctl_client(c, fd);
        close(fd);
    }
    return NULL;
}

int rk_control_start(const char *path, struct rk_volume *v, struct rk_control **out, char *err,
                     size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    int r;
    *out = NULL;
    if (!path || !path[0] || strlen(path) >= sizeof(sa.sun_path)) {
        rk_set_err(err, errlen, "control socket path must be 1..%zu bytes",
                   sizeof(sa.sun_path) - 1);
        return -EINVAL;
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            rk_set_err(err, errlen, "control socket %s: a file that is not a socket exists there",
                       path);
            return -EEXIST;
        }
        unlink(path); /* stale socket of an earlier run */
    }
    struct rk_control *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->v = v;
    c->stop[0] = c->stop[1] = -1;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    memcpy(c->path, path, strlen(path) + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(c->fd, 8) ||
        pipe2(c->stop, O_CLOEXEC)) {
        r = -errno;
        rk_set_err(err, errlen, "control socket %s: %s", path, strerror(-r));
        goto fail;
    }
    chmod(path, 0600);
    r = -pthread_create(&c->thread, NULL, ctl_thread, c);
    if (r) {
        rk_set_err(err, errlen, "control thread: %s", strerror(-r));
        unlink(path);
        goto fail;
    }
    *out = c;
    return 0;
fail:
    if (c->fd >= 0)
        close(c->fd);
    if (c->stop[0] >= 0) {
        close(c->stop[0]);
        close(c->stop[1]);
    }
    free(c);
    return r;
}

void rk_control_stop(struct rk_control *c)
{
    if (!c)
        return;
    ssize_t w;
    do
        w = write(c->stop[1], "x", 1);
    while (w < 0 && errno == EINTR);
    pthread_join(c->thread, NULL);
    close(c->fd);
    close(c->stop[0]);
    close(c->stop[1]);
    unlink(c->path);
    free(c);
}
