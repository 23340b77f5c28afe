/* Listening unix sockets created safely (docs/SECURITY.md "Sockets"): a live socket at the path
 * is never taken over, a stale one is replaced, and the socket appears at its path already with
 * its final mode and owner (bound in a private 0700 directory, then renamed into place). */
#ifndef RK_CORE_UNIXSOCK_H
#define RK_CORE_UNIXSOCK_H

#include <stddef.h>
#include <sys/types.h>

/* Permissions of a socket file. uid/gid (uid_t)-1 / (gid_t)-1 leave the owner/group as the
 * server's. mode: permission bits only (e.g. 0600). */
struct rk_unix_perm {
    mode_t mode;
    uid_t uid;
    gid_t gid;
};

/* The default: 0600, the server's own user and group. */
#define RK_UNIX_PERM_DEFAULT                                                                       \
    ((struct rk_unix_perm){.mode = 0600, .uid = (uid_t)-1, .gid = (gid_t)-1})

/*
 * Bind and listen (backlog) on the unix socket path with perm. what names the socket in
 * messages ("control socket", "NBD socket"). Returns 0 and *fd (SOCK_CLOEXEC, blocking), or
 * -errno with one line in err naming the path: -EINVAL path empty or longer than 107 bytes,
 * -EEXIST a file that is not a socket exists there, -EADDRINUSE a server accepts on it ("is in
 * use by a running server"), -EPERM/-EACCES chown/chmod/bind refused, other socket errors.
 * A path too long for the private-directory name (its directory + 19 bytes) is bound with the
 * umask set to the mode instead; owner/group are then refused (-ENAMETOOLONG).
 */
int rk_unix_listen(const char *path, const struct rk_unix_perm *perm, int backlog, const char *what,
                   int *fd, char *err, size_t errlen);

/* Parse a --socket-mode value: octal permission bits (e.g. 660, 0600), <= 0777. 0 or -EINVAL. */
int rk_unix_parse_mode(const char *s, mode_t *mode);

/* Parse a user (name or number) into *uid / a group into *gid. 0 or -EINVAL (unknown name). */
int rk_unix_parse_user(const char *s, uid_t *uid);
int rk_unix_parse_group(const char *s, gid_t *gid);

#endif
