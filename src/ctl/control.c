/* The control socket server of a served volume: a unix socket (mode 0600, never taken over from
 * a live server), an accept thread, and one thread per client (at most RK_CONTROL_CLIENTS_MAX):
 * one request line in, one reply line out (ctl/commands.c answers, one request at a time). Each
 * request line must arrive whole within RK_CONTROL_TIMEOUT_S of the previous reply, so a client
 * that drips bytes holds only its own thread, and only that long. */
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
#include <time.h>
#include <unistd.h>

#include "core/unixsock.h"
#include "core/util.h"

/* One client connection: its thread owns fd until it sets done. */
struct ctl_client {
    struct rk_control *c;
    int fd;
    bool used, done;
    pthread_t thread;
};

struct rk_control {
    int fd;      /* listening socket */
    int stop[2]; /* pipe: a byte in stop[1] ends the accept thread */
    char path[108];
    struct rk_volume *v;
    pthread_t thread;
    pthread_mutex_t lock;        /* clients[] */
    pthread_mutex_t handle_lock; /* one request handled at a time */
    bool stopping;
    bool warned_full;
    struct ctl_client clients[RK_CONTROL_CLIENTS_MAX];
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

static char *ctl_handle(struct rk_control *c, const char *line)
{
    pthread_mutex_lock(&c->handle_lock);
    char *reply = rk_control_handle(c->v, line);
    pthread_mutex_unlock(&c->handle_lock);
    return reply;
}

static int64_t ctl_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Receive into buf within the deadline: bytes received, 0 at EOF, -1 on error, -2 on timeout. */
static ssize_t ctl_recv(int fd, char *buf, size_t len, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - ctl_now_ms();
        if (left <= 0)
            return -2;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return -1;
        if (pr == 0)
            return -2;
        ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        return n < 0 ? -1 : n;
    }
}

/* Serve one connection: lines until EOF, an error, a too-long line or a line not complete
 * within RK_CONTROL_TIMEOUT_S of the previous reply (or of the accept). */
static void ctl_serve_client(struct rk_control *c, int fd)
{
    char *line = malloc(RK_CONTROL_LINE_MAX + 1);
    size_t used = 0;
    if (!line)
        return;
    struct timeval tv = {.tv_sec = RK_CONTROL_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    int64_t deadline = ctl_now_ms() + RK_CONTROL_TIMEOUT_S * 1000;
    for (;;) {
        char *nl = memchr(line, '\n', used);
        if (nl) {
            *nl = '\0';
            size_t consumed = (size_t)(nl - line) + 1;
            if (!ctl_reply(fd, ctl_handle(c, line)))
                break;
            memmove(line, line + consumed, used - consumed);
            used -= consumed;
            deadline = ctl_now_ms() + RK_CONTROL_TIMEOUT_S * 1000;
            continue;
        }
        if (used >= RK_CONTROL_LINE_MAX) {
            ctl_reply(fd,
                      rk_control_error("request line longer than %d bytes", RK_CONTROL_LINE_MAX));
            break;
        }
        ssize_t n = ctl_recv(fd, line + used, RK_CONTROL_LINE_MAX - used, deadline);
        if (n == -2) {
            ctl_reply(fd,
                      rk_control_error("request not complete within %d s", RK_CONTROL_TIMEOUT_S));
            break;
        }
        if (n <= 0) {
            if (n == 0 && used) { /* last line without newline */
                line[used] = '\0';
                ctl_reply(fd, ctl_handle(c, line));
            }
            break;
        }
        used += (size_t)n;
    }
    free(line);
}

static void *ctl_client_thread(void *arg)
{
    struct ctl_client *cl = arg;
    ctl_serve_client(cl->c, cl->fd);
    shutdown(cl->fd, SHUT_RDWR);
    pthread_mutex_lock(&cl->c->lock);
    cl->done = true;
    pthread_mutex_unlock(&cl->c->lock);
    return NULL;
}

/* Join finished clients (all of them with all=true, after shutting their sockets down). */
static void ctl_reap(struct rk_control *c, bool all)
{
    for (int i = 0; i < RK_CONTROL_CLIENTS_MAX; i++) {
        struct ctl_client *cl = &c->clients[i];
        pthread_mutex_lock(&c->lock);
        bool used = cl->used, done = cl->done;
        if (used && all && !done)
            shutdown(cl->fd, SHUT_RDWR);
        pthread_mutex_unlock(&c->lock);
        if (!used || (!done && !all))
            continue;
        pthread_join(cl->thread, NULL);
        close(cl->fd);
        pthread_mutex_lock(&c->lock);
        cl->used = cl->done = false;
        pthread_mutex_unlock(&c->lock);
    }
}

/* Hand fd to a free client slot and its thread; a full table gets one error reply. */
static void ctl_accept_client(struct rk_control *c, int fd)
{
    ctl_reap(c, false);
    struct ctl_client *cl = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < RK_CONTROL_CLIENTS_MAX && !cl; i++)
        if (!c->clients[i].used)
            cl = &c->clients[i];
    if (cl)
        *cl = (struct ctl_client){.c = c, .fd = fd, .used = true};
    pthread_mutex_unlock(&c->lock);
    if (cl && pthread_create(&cl->thread, NULL, ctl_client_thread, cl) == 0)
        return;
    if (cl) {
        pthread_mutex_lock(&c->lock);
        cl->used = false;
        pthread_mutex_unlock(&c->lock);
    }
    if (!c->warned_full)
        rk_warn("control socket %s: more than %d clients at once; refusing the extra ones", c->path,
                RK_CONTROL_CLIENTS_MAX);
    c->warned_full = true;
    char *e = rk_control_error("too many control clients (%d) at once; try again",
                               RK_CONTROL_CLIENTS_MAX);
    if (e)
        send(fd, e, strlen(e), MSG_NOSIGNAL | MSG_DONTWAIT);
    send(fd, "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    free(e);
    close(fd);
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
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
                usleep(10000);
            continue;
        }
        ctl_accept_client(c, fd);
    }
    ctl_reap(c, true);
    return NULL;
}

int rk_control_listen(const char *path, int *fd, char *err, size_t errlen)
{
    struct rk_unix_perm perm = RK_UNIX_PERM_DEFAULT;
    return rk_unix_listen(path, &perm, 16, "control socket", fd, err, errlen);
}

void rk_control_unlisten(int fd, const char *path)
{
    if (fd < 0)
        return;
    close(fd);
    unlink(path);
}

int rk_control_start(const char *path, struct rk_volume *v, struct rk_control **out, char *err,
                     size_t errlen)
{
    int fd = -1;
    *out = NULL;
    int r = rk_control_listen(path, &fd, err, errlen);
    return r ? r : rk_control_start_fd(fd, path, v, out, err, errlen);
}

int rk_control_start_fd(int fd, const char *path, struct rk_volume *v, struct rk_control **out,
                        char *err, size_t errlen)
{
    *out = NULL;
    struct rk_control *c = calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        unlink(path);
        return -ENOMEM;
    }
    c->v = v;
    c->fd = fd;
    c->stop[0] = c->stop[1] = -1;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->handle_lock, NULL);
    int r = 0;
    if (strlen(path) >= sizeof(c->path)) {
        r = -EINVAL;
        rk_set_err(err, errlen, "control socket %s: path too long", path);
        unlink(path);
        goto fail;
    }
    memcpy(c->path, path, strlen(path) + 1);
    if (pipe2(c->stop, O_CLOEXEC)) {
        r = -errno;
        rk_set_err(err, errlen, "control socket %s: %s", path, strerror(-r));
        unlink(path);
        goto fail;
    }
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
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->handle_lock);
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
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->handle_lock);
    free(c);
}
