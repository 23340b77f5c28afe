/* raidkit device models: the `emul` member wraps a device (normally a file) and makes each request
 * take the time a modelled SSD or HDD would take (docs/BENCHMARKS.md "Device models"). */
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
 * The model parameters, one row each: X(type, field, models, unit, required, meaning). type is
 * U32, U64 or BOOL; models is SSD, HDD or ANY (the models that read the field); required
 * (REQ or OPT): the field must be non-zero for those models. struct rk_emul_params, the profile
 * reader, its checks and the bench report's model JSON all follow this list, in this order;
 * docs/BENCHMARKS.md "Profiles" documents each field and the calibration.
 */
#define RK_EMUL_PARAMS(X)                                                                          \
    X(U64, capacity, ANY, "bytes", OPT, "modelled capacity (HDD zones span it); 0 = child size")   \
    X(U32, read_latency_us, SSD, "us", OPT, "base service time of a read")                         \
    X(U32, write_latency_us, SSD, "us", OPT, "base service time of a write")                       \
    X(U32, read_iops, SSD, "1/s", REQ, "cap on reads per second")                                  \
    X(U32, write_iops, SSD, "1/s", REQ, "cap on writes per second")                                \
    X(U64, read_bw, SSD, "bytes/s", REQ, "cap on read bytes per second, and transfer rate")        \
    X(U64, write_bw, SSD, "bytes/s", REQ, "cap on write bytes per second, and transfer rate")      \
    X(U32, parallelism, SSD, "channels", REQ, "requests in service at once (1..64)")               \
    X(U32, rpm, HDD, "1/min", REQ, "spindle speed")                                                \
    X(U32, seek_track_us, HDD, "us", OPT, "track-to-track seek")                                   \
    X(U32, seek_avg_us, HDD, "us", OPT, "average seek (track <= avg <= full)")                     \
    X(U32, seek_full_us, HDD, "us", OPT, "full-stroke seek")                                       \
    X(U64, outer_bw, HDD, "bytes/s", REQ, "media rate at the start (outer zone)")                  \
    X(U64, inner_bw, HDD, "bytes/s", REQ, "media rate at the end (inner zone)")                    \
    X(U32, zones, HDD, "count", REQ, "rate steps between outer and inner")                         \
    X(BOOL, reorder, HDD, "bool", OPT, "NCQ: shortest positioning time first")                     \
    X(U32, queue_depth, HDD, "commands", REQ, "commands the drive compares when reordering")       \
    X(U32, write_cache, HDD, "0/1", OPT, "1: writes acknowledged from a drive cache")              \
    X(U32, cache_cmds, HDD, "commands", OPT, "writes the cache holds before acks wait (0 = 32)")   \
    X(U32, cmd_read_us, HDD, "us", OPT, "per-read command overhead while the head is busy")        \
    X(U32, cmd_write_us, HDD, "us", OPT, "per-write command overhead while the head is busy")      \
    X(U32, afr_ppm, ANY, "ppm/year", OPT, "annual failure rate for bench risk (0 = default)")      \
    X(U32, ure_exp, ANY, "10^-N/bit", OPT,                                                         \
      "1 unrecoverable read error per 10^N bits (0 = default)")                                    \
    X(U64, seed, ANY, "integer", OPT, "for any randomness (the HDD's rotational phase)")

#define RK_EMUL_CTYPE_U32                                             uint32_t
#define RK_EMUL_CTYPE_U64                                             uint64_t
#define RK_EMUL_CTYPE_BOOL                                            bool
#define RK_EMUL_DECLARE(type, field, models, unit, required, meaning) RK_EMUL_CTYPE_##type field;

/* Model parameters: a profile's name and kind, then the RK_EMUL_PARAMS fields. */
struct rk_emul_params {
    char name[64];          /* profile name, e.g. "sata-ssd-2014" */
    enum rk_emul_kind kind; /* SSD or HDD model */
    RK_EMUL_PARAMS(RK_EMUL_DECLARE)
};

/* Type of a parameter (the type column of RK_EMUL_PARAMS). */
enum rk_emul_type { RK_EMUL_U32, RK_EMUL_U64, RK_EMUL_BOOL };

/* One row of RK_EMUL_PARAMS as data. models is a mask of 1u << enum rk_emul_kind. */
struct rk_emul_field {
    const char *name;
    enum rk_emul_type type;
    unsigned models;
    bool required;
    size_t offset; /* offsetof(struct rk_emul_params, name) */
    const char *unit, *meaning;
};

/* The RK_EMUL_PARAMS rows in order, ended by an entry with name NULL. */
extern const struct rk_emul_field rk_emul_fields[];

/* Whether f is read by the model of p->kind. */
bool rk_emul_field_used(const struct rk_emul_field *f, const struct rk_emul_params *p);
/* Value of f in p (bool as 0/1). */
uint64_t rk_emul_field_get(const struct rk_emul_params *p, const struct rk_emul_field *f);

/*
 * Check that p describes a model: kind SSD or HDD, the fields required by that model non-zero,
 * parallelism <= 64, seek_track_us <= seek_avg_us <= seek_full_us. Returns 0, or -EINVAL with
 * the reason ("incomplete ssd profile: read_iops must be > 0", ...) in msg (may be NULL).
 */
int rk_emul_params_check(const struct rk_emul_params *p, char *msg, size_t msglen);

/*
 * Load a profile: a built-in name ("sata-ssd-2014", "hdd-7200") or a path to an INI file read
 * by the core INI reader (`key = value` lines with the field names above, `kind = ssd|hdd`, `#`
 * comments; unknown keys and bad values are errors as "FILE:LINE: message"); the result passes
 * rk_emul_params_check. Returns 0, -ENOENT (no such profile or file) or -EINVAL, with a message
 * in err.
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
