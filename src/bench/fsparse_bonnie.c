/* bonnie++'s CSV line (-q prints it on stdout; format 1.97/1.98 of bonnie++ 1.97..2.00):
 * format_version, bonnie_version, name, concurrency, seed, file_size, io_chunk_size, seeks,
 * seek_proc_count, putc, putc_cpu, put_block, put_block_cpu, rewrite, rewrite_cpu, getc,
 * getc_cpu, get_block, get_block_cpu, seeks, seeks_cpu, ... (fields counted from 1). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench/fsparse.h"

/* The 1-based CSV field of each metric. */
static const struct {
    const char *metric;
    int field;
} bonnie_fields[] = {{"block_output", 12}, {"rewrite", 14}, {"block_input", 18}, {"seeks", 20}};

/* Copy field k (1-based) of the CSV line at line into buf; 0 or -EINVAL. */
static int bonnie_field(const char *line, int k, char *buf, size_t len)
{
    const char *p = line;
    for (int i = 1; i < k; i++) {
        p = strpbrk(p, ",\n");
        if (!p || *p != ',')
            return -EINVAL;
        p++;
    }
    size_t n = strcspn(p, ",\n");
    if (n >= len)
        return -EINVAL;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return 0;
}

int fsparse_bonnie(const char *out, const char *metric, double *value)
{
    int field = 0;
    for (size_t i = 0; i < sizeof(bonnie_fields) / sizeof(bonnie_fields[0]); i++)
        if (!strcmp(metric, bonnie_fields[i].metric))
            field = bonnie_fields[i].field;
    if (!field)
        return -EINVAL;
    /* The CSV line: starts with the format version "1.9" and has the fields. */
    for (const char *line = out; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        char buf[32];
        if (strncmp(line, "1.9", 3) || bonnie_field(line, field, buf, sizeof(buf)) < 0)
            continue;
        if (buf[0] == '+')
            return -ERANGE;
        char *end;
        double v = strtod(buf, &end);
        if (end == buf || *end)
            return -EINVAL;
        *value = v;
        return 0;
    }
    return -EINVAL;
}
