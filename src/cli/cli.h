/* Subcommands of the raidkit command line; each takes the argv shifted so that argv[0] is the
 * command name, and returns the process exit status (0 ok, 1 failure, 2 usage error). */
#ifndef RK_CLI_H
#define RK_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

int cli_create(int argc, char **argv);
int cli_info(int argc, char **argv);
int cli_bitmap(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_fail(int argc, char **argv);
int cli_replace(int argc, char **argv);
int cli_readd(int argc, char **argv); /* cmd_manage_jobs.c */
int cli_scrub(int argc, char **argv);
int cli_cache(int argc, char **argv); /* cmd_cache.c: `raidkit cache SUB` */
/* cmd_cache_online.c: `raidkit cache mode|detach|attach|fault` (argv[0] the subcommand). */
int cli_cache_mode(int argc, char **argv);
int cli_cache_detach(int argc, char **argv);
int cli_cache_attach(int argc, char **argv);
int cli_cache_fault(int argc, char **argv);

/* Control-socket helpers of manage_ctl.c, shared with cmd_cache_online.c. mgmt_call sends req
 * (freed) as one line to the socket at path and returns the parsed reply (NULL after a message on
 * stderr prefixed by cmd); mgmt_check prints the reply's error and returns CLI_EXIT_FAIL, or
 * CLI_EXIT_OK when it says ok. */
struct cJSON;
/* --json for the helpers below (one command per process): a refusal or a request that got no
 * usable reply also prints {"ok": false, "error": MESSAGE} on stdout, which cli_json_end
 * (json_refusal.h) turns into the one refusal shape {"ok": false, "error": {"code", ...}}. */
void mgmt_set_json(bool on);
/* True after mgmt_set_json(true) (or a manage command's --json). */
bool mgmt_json_on(void);
struct cJSON *mgmt_call(const char *cmd, const char *path, struct cJSON *req);
int mgmt_check(const char *cmd, const struct cJSON *reply);
/* The "cache:" lines of `raidkit status` for the status document's "cache" object (nothing for
 * null or absent). */
void cli_cache_print_status(const struct cJSON *cache);
int cli_assemble(int argc, char **argv);
int cli_fuse(int argc, char **argv); /* cmd_fuse.c */

struct rk_volume;
/* A volume assembled from serve's command line (cli_serve_open). */
struct cli_serve_volume {
    struct rk_volume *vol; /* open volume; the caller closes it (rk_volume_close) */
    const char *control;   /* --control PATH or NULL */
    int control_fd;        /* its socket, bound before the volume opened (rk_control_listen;
                              serve it with rk_control_start_fd), -1 without --control */
    int threads;           /* --threads N, 0 when not given */
    bool read_only;        /* --read-only */
    uint64_t rebuild_rate; /* --rebuild-rate in bytes per second, 0 = unlimited */
    /* Set by the caller before cli_serve_open (NULL: none): checks the caller's `skip`
     * positionals before any member is opened; nonzero (after a message) refuses. */
    int (*check)(char **positionals, int skip);
};
/* Parse argv (argv[0] the command name) with serve's options (cmd_serve.c); after the options,
 * the first `skip` positionals belong to the caller, the rest are the members; open the volume
 * into *out. Returns CLI_EXIT_OK, or CLI_EXIT_USAGE/CLI_EXIT_FAIL after a one-line message. */
int cli_serve_open(int argc, char **argv, int skip, struct cli_serve_volume *out);

#endif
