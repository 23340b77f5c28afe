/* Front-end conventions of `raidkit serve` shared with nbdkit (nbdkit(1) "-s", "--run",
 * "--exit-with-parent", "-P", socket activation): where the connections come from, the
 * captive command, the pid file. Everything here runs before a member is touched, except
 * front_run_start (after the socket listens). docs/CLI.md "serve". */
#ifndef RK_CLI_SERVE_FRONT_H
#define RK_CLI_SERVE_FRONT_H

#include <stddef.h>
#include <sys/types.h>

/* Check a --listen value: "unix:PATH" (PATH non-empty, fits sun_path) or
 * "tcp:[HOST:]PORT" (PORT 1..65535, decimal). 0, or -1 with a one-line reason in err. */
int front_check_listen(const char *listen, char *err, size_t errlen);

/*
 * Bind listen early without publishing it yet: a unix socket is bound under a hidden name
 * (PATH.raidkit-PID, written into hidden, hlen bytes) after checking that PATH is free (absent,
 * or a stale socket no one accepts on; a live socket or another file is refused), so that the
 * socket file appears only once the array is open (front_publish); TCP binds at once (hidden
 * ""). 0 and *fd, or -1 with err.
 */
struct rk_nbd_opts;
/* perm: the unix socket's mode and owner (its socket_* fields), NULL for the defaults. */
int front_bind(const char *listen, const struct rk_nbd_opts *perm, int *fd, char *hidden,
               size_t hlen, char *err, size_t errlen);

/* Make the socket bound by front_bind visible at the path of listen (rename over a stale
 * socket). No-op for hidden "". 0, or -1 with err. */
int front_publish(const char *listen, const char *hidden, char *err, size_t errlen);

/* --single: stdin must be a connected stream socket (nbdfuse --command, libnbd
 * connect_command). Moves it to a new close-on-exec fd (*fd) and puts /dev/null on stdin and
 * stdout, so nothing printed can reach the protocol. 0, or -1 with a reason in err. */
int front_single_fd(int *fd, char *err, size_t errlen);

/* systemd socket activation (sd_listen_fds(3) protocol, no libsystemd): when LISTEN_PID is our
 * pid and LISTEN_FDS is 1, *fd = 3 (made close-on-exec) and the LISTEN_* variables are
 * removed; returns 1. 0 when not activated. -1 with a reason in err when LISTEN_FDS is not 1
 * or fd 3 is no listening stream socket. */
int front_activation_fd(int *fd, char *err, size_t errlen);

/* --run without --listen: a private socket in a new directory (mkdtemp under $TMPDIR or /tmp):
 * dir (dlen bytes) and listen "unix:DIR/socket" (llen bytes). 0, or -1 with err. */
int front_private_listen(char *dir, size_t dlen, char *listen, size_t llen, char *err,
                         size_t errlen);

/* The NBD URI of listen + export (nbd+unix:///EXPORT?socket=PATH, nbd://HOST:PORT/EXPORT);
 * the export is left out (the default export matches too) unless it is URI-safe. */
void front_uri(const char *listen, const char *export_name, char *uri, size_t len);

/* Tell systemd's service manager state (e.g. "READY=1"), as sd_notify(3) does without
 * libsystemd: one datagram to $NOTIFY_SOCKET (a path, or @abstract). No-op when unset;
 * errors are ignored (a notification is advisory). */
void front_notify(const char *state);

/* Whether --control PATH can be served, checked before any member is opened (serve then binds
 * it, rk_control_listen, still before the array opens): PATH fits a unix socket
 * address, and it is absent with a writable directory, or a stale socket nobody accepts on. A
 * live socket or any other file is refused. 0, or -1 with the reason (naming PATH) in err. */
int front_control_check(const char *path, char *err, size_t errlen);

/* Whether --pidfile PATH may be written: it does not exist and its directory is writable, or it
 * is a regular file holding only a decimal pid (an old pid file). Anything else (a member named
 * by mistake, any other file, a symlink) is refused. 0, or -1 with the reason in err. */
int front_pidfile_check(const char *path, char *err, size_t errlen);
/* front_pidfile_check, then a real probe before any member is opened: the temporary file
 * front_pidfile_write renames onto PATH is created (O_EXCL) and removed again, so a directory
 * that takes no file (a read-only or virtual file system, where root passes access(2)) or a
 * name too long is refused now. 0, or -1 with the reason (naming PATH) in err. */
int front_pidfile_probe(const char *path, char *err, size_t errlen);

/* Write our pid and a newline to path (0644, atomically via rename). 0, or -1 with err. */
int front_pidfile_write(const char *path, char *err, size_t errlen);

/* --exit-with-parent: SIGTERM when the parent dies (prctl PR_SET_PDEATHSIG); when it has
 * already died (we were reparented) raise SIGTERM now. 0, or -1 with err. */
int front_exit_with_parent(char *err, size_t errlen);

/* --run CMD: fork and run `/bin/sh -c CMD` with $uri, $exportname and $unixsocket (unix) or
 * $port (tcp) in its environment (serve refuses --run with --single).
 * Returns the child's pid, or -1 with err. */
pid_t front_run_start(const char *cmd, const char *listen, const char *export_name, char *err,
                      size_t errlen);

/* The exit status serve reports for a captive command's wait status: its exit code, or
 * 128 + signal when a signal ended it. */
int front_run_status(int wstatus);

#endif
