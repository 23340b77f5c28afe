/* Shared reporting of the raidkit commands: the exit-code table, progress on a terminal or as
 * log lines, JSON output, and who holds a member's lock. docs/CLI.md "Exit status",
 * "Progress" and "Logging" describe what users see. */
#ifndef RK_CLI_REPORT_H
#define RK_CLI_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/*
 * Exit codes of every command (cli.h keeps CLI_EXIT_OK/FAIL/USAGE = 0/1/2, the same values):
 *   0  success (with --test: the array is healthy)
 *   1  failure: a member problem, an I/O error, a refused operation, a server that is not there
 *   2  usage error: a bad option, value or argument, an option the command does not take, a
 *      member count the level does not allow; nothing was written or started
 * With --test (`status --test`, `info --test`) the array's state is the exit code:
 *   3  degraded: a member is failed or missing, every byte still readable, nothing recovering
 *   4  recovering: a rebuild or resync is running (the array may be degraded meanwhile)
 *   5  failed: data unreachable (too many members missing) or the volume refuses writes
 * Without --test, `info` on a member whose superblock has the raidkit magic but fails a check
 * (checksum, version, header size, a field out of bounds) exits
 *   6  corrupt superblock (a file with no raidkit magic at all exits 1: not a raidkit member)
 */
#define CLI_EXIT_DEGRADED   3
#define CLI_EXIT_RECOVERING 4
#define CLI_EXIT_BROKEN     5
#define CLI_EXIT_CORRUPT    6

/* How a long job reports progress (--progress / --no-progress / neither). */
enum cli_progress_mode { CLI_PROGRESS_AUTO = 0, CLI_PROGRESS_ON, CLI_PROGRESS_OFF };

/* Progress of one job on stderr: on a terminal (AUTO with isatty(2), or ON) one bar redrawn in
 * place with \r; otherwise (AUTO without a terminal) one log line per 10 % step; OFF prints
 * nothing. Zero-initialise, then cli_progress_init. */
struct cli_progress {
    const char *what; /* "replace", "scrub": the command word */
    bool bar;         /* redraw a bar */
    bool lines;       /* a log line per step */
    bool drawn;       /* a bar is on the screen (cli_progress_end ends its line) */
    int last_step;    /* last 10 % step logged */
};

/* Set p up for mode (what is kept, not copied). */
void cli_progress_init(struct cli_progress *p, const char *what, enum cli_progress_mode mode);
/* Report pos of end bytes at rate bytes/s; eta_s < 0 = unknown. Cheap when nothing changes. */
void cli_progress_update(struct cli_progress *p, uint64_t pos, uint64_t end, double rate,
                         double eta_s);
/* End the bar's line (if drawn); the caller prints the result itself. */
void cli_progress_end(struct cli_progress *p);

/* Print j (pretty JSON text) and a newline on stdout, then free it. Returns CLI_EXIT_OK, or
 * CLI_EXIT_FAIL when j is NULL (out of memory). */
int cli_print_json(cJSON *j);

/*
 * Who holds the exclusive lock of a member file (flock, taken by a writable open): parses
 * /proc/locks for an FLOCK/POSIX/OFDLCK write lock on path's device and inode. Writes
 * "pid N (COMM)" into out (len bytes) and returns 0, or -ENOENT when no lock is found
 * (or /proc is not mounted), -errno when path cannot be stat'ed.
 */
int cli_lock_holder(const char *path, char *out, size_t len);

/* After a refused open: "; PATH is in use by pid N (COMM)" for the first of the n paths some
 * process holds the lock of, else "" — appended to the one-line error. Returns out. */
const char *cli_busy_hint(const char *const *paths, int n, char *out, size_t len);

/* The --test state (CLI_EXIT_OK, _DEGRADED, _RECOVERING, _BROKEN) of the array an
 * rk_volume_info JSON document describes, as the members it was given leave it (cmd_info.c). */
int cli_info_state(const cJSON *doc);

#endif
