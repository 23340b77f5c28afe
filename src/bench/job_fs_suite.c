/* The suite keys of filesystem jobs (docs/BENCHMARKS.md "Filesystem jobs") and their checks. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/job_fs.h"
#include "core/util.h"

/* Each tool: its result unit, whether lower is better, and the default args (tiny scale). */
static const struct {
    const char *tool, *unit;
    bool lower_better;
} fsjob_tools[] = {
    {"fsmark", "Files/s", false}, {"bonnie", "K/s", false},    {"postmark", "TPS", false},
    {"dbench", "MB/s", false},    {"sqlite", "Seconds", true}, {"pgbench", "TPS", false},
    {"compile", "Seconds", true}, {"fio", "MB/s", false},
};

static const char *const fsjob_fses[] = {"ext4", "xfs", "btrfs", NULL};
static const char *const fsjob_metrics[] = {"block_output", "rewrite", "block_input", "seeks",
                                            NULL};

static int fsjob_copy(char *dst, size_t len, const char *v)
{
    if (strlen(v) >= len)
        return -EINVAL;
    snprintf(dst, len, "%s", v);
    return 0;
}

static bool fsjob_in(const char *const *list, const char *v)
{
    for (int i = 0; list[i]; i++)
        if (!strcmp(list[i], v))
            return true;
    return false;
}

int fsjob_suite_key(struct bench_job *j, const char *k, const char *v)
{
    if (!strcmp(k, "tool")) {
        for (size_t i = 0; i < sizeof(fsjob_tools) / sizeof(fsjob_tools[0]); i++)
            if (!strcmp(v, fsjob_tools[i].tool))
                return fsjob_copy(j->tool, sizeof(j->tool), v);
        return -EINVAL;
    }
    if (!strcmp(k, "fs"))
        return fsjob_in(fsjob_fses, v) ? fsjob_copy(j->fs, sizeof(j->fs), v) : -EINVAL;
    if (!strcmp(k, "metric"))
        return fsjob_in(fsjob_metrics, v) ? fsjob_copy(j->metric, sizeof(j->metric), v) : -EINVAL;
    if (!strcmp(k, "fs_size")) {
        uint64_t x;
        if (rk_parse_size(v, &x) < 0 || x < (32ull << 20) || x > (1ull << 40))
            return -EINVAL;
        j->fs_size = x;
        return 0;
    }
    if (!strcmp(k, "args"))
        return fsjob_copy(j->args, sizeof(j->args), v);
    if (!strcmp(k, "init_args"))
        return fsjob_copy(j->init_args, sizeof(j->init_args), v);
    if (!strcmp(k, "fio_extra"))
        return fsjob_copy(j->fio_extra, sizeof(j->fio_extra), v);
    return -ENOENT;
}

int fsjob_suite_check(const char *path, struct bench_job *j, char *err, size_t errlen)
{
    if (!j->tool[0]) {
        if (j->fs[0] || j->fs_size || j->args[0] || j->init_args[0] || j->metric[0]) {
            rk_set_err(err, errlen,
                       "%s: job '%s': fs, fs_size, args, init_args and metric need "
                       "a 'tool'",
                       path, j->name);
            return -EINVAL;
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof(fsjob_tools) / sizeof(fsjob_tools[0]); i++) {
        if (strcmp(j->tool, fsjob_tools[i].tool))
            continue;
        snprintf(j->unit, sizeof(j->unit), "%s", fsjob_tools[i].unit);
        j->lower_better = fsjob_tools[i].lower_better;
    }
    if (!j->fs[0])
        snprintf(j->fs, sizeof(j->fs), "ext4");
    if (!j->fs_size)
        j->fs_size = 512ull << 20;
    if (!strcmp(j->tool, "bonnie")) {
        if (!j->metric[0]) {
            rk_set_err(err, errlen,
                       "%s: job '%s': tool bonnie needs a 'metric' (block_output, "
                       "rewrite, block_input, seeks)",
                       path, j->name);
            return -EINVAL;
        }
        if (!strcmp(j->metric, "seeks"))
            snprintf(j->unit, sizeof(j->unit), "Seeks/s");
    } else if (j->metric[0]) {
        rk_set_err(err, errlen, "%s: job '%s': 'metric' is for tool bonnie", path, j->name);
        return -EINVAL;
    }
    if (!strcmp(j->tool, "fio") && j->size + (32ull << 20) > j->fs_size) {
        rk_set_err(err, errlen, "%s: job '%s': size must leave 32 MiB of fs_size free", path,
                   j->name);
        return -EINVAL;
    }
    if (!strcmp(j->fs, "xfs") && j->fs_size < (300ull << 20)) {
        rk_set_err(err, errlen, "%s: job '%s': mkfs.xfs needs fs_size of at least 300M", path,
                   j->name);
        return -EINVAL;
    }
    return 0;
}

bool fsjob_suite_has_fs(const struct bench_suite *s)
{
    for (int i = 0; i < s->njobs; i++)
        if (s->jobs[i].tool[0])
            return true;
    return false;
}

bool fsjob_suite_has_raw(const struct bench_suite *s)
{
    for (int i = 0; i < s->njobs; i++)
        if (!s->jobs[i].tool[0])
            return true;
    return false;
}
