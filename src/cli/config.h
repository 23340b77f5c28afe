/* The array configuration file, RK_CONF_DEFAULT (or `--config FILE`): arrays named by
 * UUID and/or name, with the member paths or globs to look among, and the serve settings of
 * each. Syntax: the INI of src/core/ini.h. docs/CLI.md "Configuration file". */
#ifndef RK_CLI_CONFIG_H
#define RK_CLI_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/* The build's RAIDKIT_SYSCONFDIR/raidkit/raidkit.conf (CMakeLists.txt; the systemd unit uses the
 * same value). */
#ifndef RK_CONF_DEFAULT
#define RK_CONF_DEFAULT "/etc/raidkit/raidkit.conf"
#endif
#define RK_CONF_MAX_ARRAYS 32
#define RK_CONF_MAX_GLOBS  64

/* One `[array NAME]` section. Strings are owned by the struct (rk_conf_free). */
struct rk_conf_array {
    char *name;                     /* the section's NAME: how `serve NAME` calls it */
    char *uuid;                     /* uuid = ... (normalised: lower case, with dashes), or NULL */
    char *sb_name;                  /* array-name = ... (the name in the superblocks), or NULL */
    char *globs[RK_CONF_MAX_GLOBS]; /* members = PATH|GLOB ... (several lines add up) */
    int nglobs;                     /* 0: the [scan] globs apply */
    char *listen, *control, *export_name, *pidfile; /* serve settings, NULL = the default */
    int degraded, read_only;                        /* -1 unset, else 0/1 */
    int threads;                                    /* 0 unset */
};

struct rk_conf {
    char *path; /* the file read */
    struct rk_conf_array arr[RK_CONF_MAX_ARRAYS];
    int n;
    char *scan[RK_CONF_MAX_GLOBS]; /* [scan] members = ...: where arrays without members look */
    int nscan;
};

/*
 * Read the configuration at path (NULL: RK_CONF_DEFAULT) into *c (zero it first). Sections:
 * `[scan]` with `members = GLOB...`; `[array NAME]` with `uuid`, `array-name`, `members`,
 * `listen`, `control`, `export`, `pidfile`, `degraded`, `read-only` (yes/no), `threads`. An
 * array needs a uuid or an array-name (else the NAME is taken as the array-name). Unknown
 * sections or keys, bad values and duplicate NAMEs are errors. Returns 0, or -errno with
 * "PATH:LINE: message" in err (rk_conf_free is still needed).
 */
int rk_conf_load(const char *path, struct rk_conf *c, char *err, size_t errlen);
void rk_conf_free(struct rk_conf *c);

/* The array called name, or NULL. */
const struct rk_conf_array *rk_conf_find(const struct rk_conf *c, const char *name);

#endif
