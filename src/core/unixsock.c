/* Listening unix sockets created safely: live-socket protection, atomic mode/owner (unixsock.h). */
#include "core/unixsock.h"

#include <errno.h>
#include <stdbool.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/util.h"

#define UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path))

/* Refuse a non-socket file or a live socket at path; a stale socket stays (rename replaces). */
static int unix_check_existing(const char *path, const char *what, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISSOCK(st.st_mode)) {
        rk_set_err(err, errlen, "%s %s: a file that is not a socket exists there", what, path);
        return -EEXIST;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (probe >= 0)
        close(probe);
    if (live) {
        rk_set_err(err, errlen, "%s %s is in use by a running server", what, path);
        return -EADDRINUSE;
    }
    return 0;
}

/* socket + bind + listen at p; 0 and *fd or -errno. */
static int unix_bind(const char *p, int backlog, int *fd)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, p, strlen(p) + 1);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(s, backlog) < 0) {
        int e = -errno;
        close(s);
        return e;
    }
    *fd = s;
    return 0;
}

/* The fallback for long paths: the umask makes bind create the file with the final mode. umask
 * is process-wide, so concurrent callers are serialized (other threads create no files then). */
static int unix_listen_umask(const char *path, const struct rk_unix_perm *perm, int backlog,
                             int *fd)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    if (perm->uid != (uid_t)-1 || perm->gid != (gid_t)-1)
        return -ENAMETOOLONG;
    pthread_mutex_lock(&lock);
    unlink(path); /* stale (checked) */
    mode_t old = umask((mode_t)(~perm->mode & 0777));
    int r = unix_bind(path, backlog, fd);
    umask(old);
    pthread_mutex_unlock(&lock);
    return r;
}

int rk_unix_listen(const char *path, const struct rk_unix_perm *perm, int backlog, const char *what,
                   int *fd, char *err, size_t errlen)
{
    struct rk_unix_perm def = RK_UNIX_PERM_DEFAULT;
    if (!perm)
        perm = &def;
    if (!path || !*path || strlen(path) >= UNIX_PATH_MAX) {
        rk_set_err(err, errlen, "%s path '%s' is empty or longer than %zu bytes", what,
                   path ? path : "", UNIX_PATH_MAX - 1);
        return -EINVAL;
    }
    int r = unix_check_existing(path, what, err, errlen);
    if (r)
        return r;
    /* A private directory next to the final path (same file system, so rename is atomic). */
    char dir[UNIX_PATH_MAX + 32], tmp[UNIX_PATH_MAX + 40];
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, sizeof(dir), "./.raidkit-XXXXXX");
    else
        snprintf(dir, sizeof(dir), "%.*s/.raidkit-XXXXXX", (int)(slash - path), path);
    *fd = -1;
    if (strlen(dir) + 2 >= UNIX_PATH_MAX) {
        r = unix_listen_umask(path, perm, backlog, fd);
        if (r)
            rk_set_err(err, errlen, "cannot listen on %s %s: %s%s", what, path, strerror(-r),
                       r == -ENAMETOOLONG ? " (path too long to set the owner atomically)" : "");
        return r;
    }
    if (!mkdtemp(dir)) {
        r = -errno;
        rk_set_err(err, errlen, "cannot listen on %s %s: private directory: %s", what, path,
                   strerror(-r));
        return r;
    }
    snprintf(tmp, sizeof(tmp), "%s/s", dir);
    const char *step = "bind";
    r = unix_bind(tmp, backlog, fd);
    /* Inside the 0700 directory nobody else can reach the socket before its final mode. */
    if (!r && (step = "chown", (perm->uid != (uid_t)-1 || perm->gid != (gid_t)-1)) &&
        chown(tmp, perm->uid, perm->gid) < 0)
        r = -errno;
    if (!r && (step = "chmod", chmod(tmp, perm->mode) < 0))
        r = -errno;
    if (!r && (step = "rename", rename(tmp, path) < 0))
        r = -errno;
    if (r) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        unlink(tmp);
        rk_set_err(err, errlen, "cannot listen on %s %s: %s: %s", what, path, step, strerror(-r));
    }
    rmdir(dir);
    return r;
}

int rk_unix_parse_mode(const char *s, mode_t *mode)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 8);
    if (!*s || *end || errno || v > 0777)
        return -EINVAL;
    *mode = (mode_t)v;
    return 0;
}

int rk_unix_parse_user(const char *s, uid_t *uid)
{
    uint64_t v;
    if (!*s)
        return -EINVAL;
    if (rk_parse_u64(s, &v) == 0 && v < (uid_t)-1) {
        *uid = (uid_t)v;
        return 0;
    }
    struct passwd pw, *res = NULL;
    char buf[4096];
    if (getpwnam_r(s, &pw, buf, sizeof(buf), &res) || !res)
        return -EINVAL;
    *uid = res->pw_uid;
    return 0;
}

int rk_unix_parse_group(const char *s, gid_t *gid)
{
    uint64_t v;
    if (!*s)
        return -EINVAL;
    if (rk_parse_u64(s, &v) == 0 && v < (gid_t)-1) {
        *gid = (gid_t)v;
        return 0;
    }
    struct group gr, *res = NULL;
    char buf[4096];
    if (getgrnam_r(s, &gr, buf, sizeof(buf), &res) || !res)
        return -EINVAL;
    *gid = res->gr_gid;
    return 0;
}
