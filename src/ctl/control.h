/* The control socket of a served volume, a front end over the volume (meta) and its raid
 * device: a unix-socket server thread (control.c) that answers one JSON request per line with
 * one JSON reply per line (commands.c: status, fail, replace, scrub). */
#ifndef RK_CTL_CONTROL_H
#define RK_CTL_CONTROL_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "raidkit/volume.h"

/* Longest request line accepted (bytes, newline excluded); longer lines get an error reply and
 * the connection is closed. */
#define RK_CONTROL_LINE_MAX 8192

/* Clients served at once (one thread each); more get an error reply and are closed. */
#define RK_CONTROL_CLIENTS_MAX 16
/* Seconds a client has to send each whole request line (from the accept or the last reply). */
#define RK_CONTROL_TIMEOUT_S 10

struct rk_control;

/*
 * Listen on unix socket path, mode 0600 from the start (rk_unix_listen: a stale socket file
 * there is replaced, a live one or any other file is refused) and serve requests for v until
 * rk_control_stop, up to RK_CONTROL_CLIENTS_MAX clients at once. Requests:
 *   {"cmd":"status"}
 *   {"cmd":"fail","slot":N}
 *   {"cmd":"replace","slot":N,"with":"/abs/path","rate":BYTES_PER_S[,"force":true]}
 *   {"cmd":"scrub","repair":BOOL,"rate":BYTES_PER_S}
 * Replies: {"ok":true,...} or {"ok":false,"error":"one line"}; status adds "status":{...}.
 * v must stay open until rk_control_stop. Returns 0 and *out, or -errno with one line in err:
 * -EINVAL bad path length, -EEXIST a non-socket file at path, -EADDRINUSE a live server's
 * socket at path, -ENOMEM, socket/thread errors.
 */
int rk_control_start(const char *path, struct rk_volume *v, struct rk_control **out, char *err,
                     size_t errlen);

/* Only the socket of rk_control_start: bind and listen on path (mode 0600, as there) into *fd,
 * so that a caller can prove the path usable before it opens the volume (serve). 0, or the
 * -errno of rk_control_start with one line in err. */
int rk_control_listen(const char *path, int *fd, char *err, size_t errlen);

/* Give up a socket rk_control_listen made at path (before rk_control_start_fd took it): close
 * fd and remove the socket file. No-op when fd < 0. */
void rk_control_unlisten(int fd, const char *path);

/* rk_control_start over fd, a socket rk_control_listen made at path (owned from here on:
 * closed, and path unlinked, on failure and by rk_control_stop). Same returns. */
int rk_control_start_fd(int fd, const char *path, struct rk_volume *v, struct rk_control **out,
                        char *err, size_t errlen);

/* Stop the threads (clients are cut off), close and unlink the socket, free c (NULL accepted). */
void rk_control_stop(struct rk_control *c);

/* Answer one request line for v (the server's handler; also for tests). Returns the reply
 * JSON without newline (malloc'ed, caller frees), NULL on ENOMEM. */
char *rk_control_handle(struct rk_volume *v, const char *line);

/*
 * The live status document of v (the "status" of a status reply): rk_volume_status_tree
 * extended with each slot's "rebuild_percent" (while rebuilt) and "io" counters, "job",
 * "last_scrub" and "bad_ranges". A new tree (caller frees with cJSON_Delete); NULL on ENOMEM.
 */
cJSON *rk_control_status_tree(struct rk_volume *v);

/* The error reply {"ok":false,"error":"<printf of fmt>"} (message truncated to 599 bytes), as
 * JSON text without newline (malloc'ed, caller frees); NULL on ENOMEM. */
char *rk_control_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
