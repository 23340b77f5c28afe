/* serve's front-end conventions: socket sources, captive command, pid file (serve_front.h). */
#include "cli/serve_front.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/util.h"
#include "raidkit/nbd.h"

int front_check_listen(const char *listen, char *err, size_t errlen)
{
    struct sockaddr_un sa;
    if (!strncmp(listen, "unix:", 5)) {
        size_t l = strlen(listen + 5);
        if (l == 0 || l >= sizeof(sa.sun_path)) {
            rk_set_err(err, errlen, "bad --listen '%s' (socket path empty or longer than %zu)",
                       listen, sizeof(sa.sun_path) - 1);
            return -1;
        }
        return 0;
    }
    if (strncmp(listen, "tcp:", 4)) {
        rk_set_err(err, errlen, "bad --listen '%s' (unix:PATH or tcp:[HOST:]PORT)", listen);
        return -1;
    }
    const char *colon = strrchr(listen + 4, ':');
    const char *port = colon ? colon + 1 : listen + 4;
    uint64_t v;
    if (rk_parse_u64(port, &v) || v < 1 || v > 65535 || (colon && colon == listen + 4)) {
        rk_set_err(err, errlen, "bad tcp port in --listen '%s' (tcp:[HOST:]PORT, PORT 1..65535)",
                   listen);
        return -1;
    }
    return 0;
}

int front_bind(const char *listen, const struct rk_nbd_opts *perm, int *fd, char *hidden,
               size_t hlen, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    const char *path = listen + 5;
    hidden[0] = '\0';
    if (strncmp(listen, "unix:", 5) || strlen(path) + 24 >= sizeof(sa.sun_path))
        return rk_nbd_listen(listen, perm, fd, err, errlen) ? -1 : 0;
    struct stat st;
    if (lstat(path, &st) == 0) {
        memcpy(sa.sun_path, path, strlen(path) + 1);
        int probe = S_ISSOCK(st.st_mode) ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
        bool live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        if (probe >= 0)
            close(probe);
        if (!S_ISSOCK(st.st_mode) || live) {
            rk_set_err(err, errlen, "%s %s", path,
                       live ? "is in use by a running server" : "exists and is not a socket");
            return -1;
        }
    }
    char l[sizeof(sa.sun_path) + 8];
    snprintf(hidden, hlen, "%s.raidkit-%d", path, (int)getpid());
    snprintf(l, sizeof(l), "unix:%s", hidden);
    if (rk_nbd_listen(l, perm, fd, err, errlen)) {
        hidden[0] = '\0';
        return -1;
    }
    return 0;
}

int front_publish(const char *listen, const char *hidden, char *err, size_t errlen)
{
    if (!hidden[0] || rename(hidden, listen + 5) == 0)
        return 0;
    rk_set_err(err, errlen, "cannot put the socket at %s: %s", listen + 5, strerror(errno));
    return -1;
}

int front_single_fd(int *fd, char *err, size_t errlen)
{
    struct stat st;
    int type = 0;
    socklen_t tl = sizeof(type);
    if (fstat(0, &st) || !S_ISSOCK(st.st_mode) || getsockopt(0, SOL_SOCKET, SO_TYPE, &type, &tl) ||
        type != SOCK_STREAM) {
        rk_set_err(err, errlen,
                   "--single: stdin is not a connected stream socket (run it "
                   "under nbdfuse --command, or libnbd's connect_command)");
        return -1;
    }
    int s = fcntl(0, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (s < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0) {
        rk_set_err(err, errlen, "--single: %s", strerror(errno));
        return -1;
    }
    close(null);
    *fd = s;
    return 0;
}

int front_activation_fd(int *fd, char *err, size_t errlen)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    uint64_t p, n;
    if (!pid || !fds || rk_parse_u64(pid, &p) || p != (uint64_t)getpid())
        return 0;
    int type = 0, acc = 0;
    socklen_t tl = sizeof(type), al = sizeof(acc);
    if (rk_parse_u64(fds, &n) || n != 1) {
        rk_set_err(err, errlen, "socket activation: LISTEN_FDS=%s, want exactly 1 socket", fds);
        return -1;
    }
    if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_STREAM ||
        getsockopt(3, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) || !acc) {
        rk_set_err(err, errlen, "socket activation: fd 3 is no listening stream socket");
        return -1;
    }
    fcntl(3, F_SETFD, FD_CLOEXEC);
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    *fd = 3;
    return 1;
}

int front_private_listen(char *dir, size_t dlen, char *listen, size_t llen, char *err,
                         size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dlen, "%s/raidkit-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        rk_set_err(err, errlen, "--run: cannot make a private socket directory %s: %s", dir,
                   strerror(errno));
        return -1;
    }
    snprintf(listen, llen, "unix:%s/socket", dir);
    return 0;
}

/* True when s needs no percent-encoding in a URI path. */
static bool front_uri_safe(const char *s)
{
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~", *s))
            return false;
    return true;
}

void front_uri(const char *listen, const char *export_name, char *uri, size_t len)
{
    const char *e = export_name && front_uri_safe(export_name) ? export_name : "";
    if (!strncmp(listen, "tcp:", 4)) {
        const char *hp = listen + 4;
        bool host = strchr(hp, ':') != NULL;
        snprintf(uri, len, "nbd://%s%s/%s", host ? "" : "127.0.0.1:", hp, e);
    } else {
        snprintf(uri, len, "nbd+unix:///%s?socket=%s", e,
                 strncmp(listen, "unix:", 5) ? listen : listen + 5);
    }
}

void front_notify(const char *state)
{
    const char *p = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t l = p ? strlen(p) : 0;
    if (!l || l >= sizeof(sa.sun_path) || (p[0] != '/' && p[0] != '@'))
        return;
    memcpy(sa.sun_path, p, l);
    if (p[0] == '@')
        sa.sun_path[0] = '\0'; /* abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + l));
    (void)w;
    close(fd);
}

int front_control_check(const char *path, char *err, size_t errlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct stat st;
    if (!path[0] || strlen(path) >= sizeof(sa.sun_path)) {
        rk_set_err(err, errlen, "--control %s: not a usable unix socket path (1..%zu bytes)", path,
                   sizeof(sa.sun_path) - 1);
        return -1;
    }
    if (lstat(path, &st) < 0) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
        if (errno != ENOENT || access(d, W_OK | X_OK) < 0) {
            rk_set_err(err, errlen, "--control %s: %s%s%s", path, errno == ENOENT ? d : "",
                       errno == ENOENT ? ": " : "", strerror(errno));
            return -1;
        }
        return 0;
    }
    if (!S_ISSOCK(st.st_mode)) {
        rk_set_err(err, errlen, "--control %s: exists and is not a socket; not replacing it", path);
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    if (live) {
        rk_set_err(err, errlen, "control socket %s is in use by a running server", path);
        return -1;
    }
    return 0;
}

int front_pidfile_check(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno != ENOENT) {
            rk_set_err(err, errlen, "--pidfile %s: %s", path, strerror(errno));
            return -1;
        }
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        const char *d = slash ? (slash == dir ? "/" : (*slash = 0, dir)) : ".";
        if (access(d, W_OK | X_OK) < 0) {
            rk_set_err(err, errlen, "--pidfile %s: directory %s: %s", path, d, strerror(errno));
            return -1;
        }
        return 0;
    }
    /* Only an old pid file is replaced: a member named by mistake, or any other file, is not. */
    char buf[40] = "";
    int fd = S_ISREG(st.st_mode) && st.st_size < (off_t)sizeof(buf) ? open(path, O_RDONLY) : -1;
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0)
        close(fd);
    bool pid = n >= 0 && (size_t)n == (size_t)st.st_size;
    for (ssize_t i = 0; pid && i < n; i++)
        pid = (buf[i] >= '0' && buf[i] <= '9') || (buf[i] == '\n' && i == n - 1);
    if (!pid) {
        rk_set_err(err, errlen, "--pidfile %s exists and is not a pid file; not overwriting it",
                   path);
        return -1;
    }
    return 0;
}

/* The temporary name front_pidfile_write writes the pid to before renaming it onto path. */
static int front_pidfile_tmp(const char *path, char *tmp, size_t len, char *err, size_t errlen)
{
    if ((size_t)snprintf(tmp, len, "%s.tmp%d", path, (int)getpid()) >= len) {
        rk_set_err(err, errlen, "--pidfile %s: path too long", path);
        return -1;
    }
    return 0;
}

int front_pidfile_probe(const char *path, char *err, size_t errlen)
{
    char tmp[4096];
    if (front_pidfile_check(path, err, errlen) ||
        front_pidfile_tmp(path, tmp, sizeof(tmp), err, errlen))
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        rk_set_err(err, errlen, "--pidfile %s: cannot create a file there: %s", path,
                   strerror(errno));
        return -1;
    }
    close(fd);
    unlink(tmp);
    return 0;
}

int front_pidfile_write(const char *path, char *err, size_t errlen)
{
    if (front_pidfile_check(path, err, errlen))
        return -1;
    char tmp[4096];
    if (front_pidfile_tmp(path, tmp, sizeof(tmp), err, errlen))
        return -1;
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) || rename(tmp, path)) {
        rk_set_err(err, errlen, "--pidfile %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int front_exit_with_parent(char *err, size_t errlen)
{
    pid_t parent = getppid();
    if (prctl(PR_SET_PDEATHSIG, SIGTERM)) {
        rk_set_err(err, errlen, "--exit-with-parent: prctl: %s", strerror(errno));
        return -1;
    }
    if (parent == 1 || getppid() != parent)
        raise(SIGTERM); /* the parent is already gone */
    return 0;
}

pid_t front_run_start(const char *cmd, const char *listen, const char *export_name, char *err,
                      size_t errlen)
{
    char uri[4200];
    front_uri(listen, export_name, uri, sizeof(uri));
    pid_t pid = fork();
    if (pid < 0) {
        rk_set_err(err, errlen, "--run: fork: %s", strerror(errno));
        return -1;
    }
    if (pid > 0)
        return pid;
    /* Child: the server's signal handlers and mask are not the command's. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setenv("uri", uri, 1);
    setenv("exportname", export_name ? export_name : "", 1);
    if (!strncmp(listen, "tcp:", 4)) {
        const char *c = strrchr(listen + 4, ':');
        setenv("port", c ? c + 1 : listen + 4, 1);
    } else {
        setenv("unixsocket", strncmp(listen, "unix:", 5) ? listen : listen + 5, 1);
    }
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    fprintf(stderr, "raidkit serve: --run: /bin/sh: %s\n", strerror(errno));
    _exit(127);
}

int front_run_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}
