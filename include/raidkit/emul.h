/* raidkit device models: the `emul` member wraps a device (normally a file) and makes each request
 * take the time a modelled SSD or HDD would take (DESIGN §6, docs/BENCHMARKS.md). */
#ifndef RAIDKIT_EMUL_H
#define RAIDKIT_EMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raidkit/device.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rk_emul_kind {
    RK_EMUL_SSD = 1,
    RK_EMUL_HDD = 2,
};

/*
 * Model parameters. Units are in the field names. Profiles fill them (built-in ones by name,
 * user ones from a small INI file); docs/BENCHMARKS.md documents each field and the calibration.
 */
struct rk_emul_params {
    char name[64];          /* profile name, e.g. "sata-ssd-2014" */
    enum rk_emul_kind kind; /* SSD or HDD model */
    uint64_t capacity;      /* modelled capacity in bytes (HDD zones span it); 0 = child size */
    /* SSD model */
    uint32_t read_latency_us, write_latency_us; /* per-request base service time */
    uint32_t read_iops, write_iops;             /* caps, requests per second */
    uint64_t read_bw, write_bw;                 /* caps, bytes per second */
    uint32_t parallelism;                       /* internal channels serving at once */
    /* HDD model */
    uint32_t rpm;                                      /* spindle speed */
    uint32_t seek_track_us, seek_avg_us, seek_full_us; /* track-to-track, average, full stroke */
    uint64_t outer_bw, inner_bw;                       /* zoned media rate, bytes per second */
    uint32_t zones;                                    /* number of zones between outer and inner */
    bool reorder;                                      /* NCQ: shortest positioning time first */
    uint32_t queue_depth;               /* commands the drive accepts for reordering */
    uint32_t write_cache;               /* 1: writes acknowledged from a drive cache */
    uint32_t cache_cmds;                /* writes the drive cache holds before acks wait (0 = 32) */
    uint32_t cmd_read_us, cmd_write_us; /* per-command overhead while the head is busy */
    uint64_t seed;                      /* for any randomness (e.g. rotational phase) */
};

/*
 * Load a profile: a built-in name ("sata-ssd-2014", "hdd-7200") or a path to an INI file
 * (`key = value` lines with the field names above, `kind = ssd|hdd`, `#` comments; unknown keys
 * and bad values are errors naming the line). Returns 0, -ENOENT (no such profile) or -EINVAL,
 * with a message in err.
 */
int rk_emul_profile_load(const char *name_or_path, struct rk_emul_params *out, char *err,
                         size_t errlen);

/* Names of the built-in profiles, NULL-terminated. */
const char *const *rk_emul_profile_names(void);

/*
 * Wrap child in a device model. The emul device has child's size (or less) and block size; data
 * goes to child unchanged; each request completes no earlier than the model says, timed from a
 * monotonic clock. With own_child, closing the emul device closes child. Returns 0 / -EINVAL /
 * -ENOMEM.
 */
int rk_emul_open(struct rk_dev *child, bool own_child, const struct rk_emul_params *p,
                 struct rk_dev **out);

#ifdef __cplusplus
}
#endif
#endif
