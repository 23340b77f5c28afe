/* pgbench's summary: "tps = X (without initial connection time)" (PostgreSQL 14+), or before
 * that "tps = X (excluding connections establishing)". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/fsparse.h"

int fsparse_pgbench(const char *out, double *tps)
{
    static const char *const tails[] = {"(without initial connection time)",
                                        "(excluding connections establishing)"};
    for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
        for (const char *p = strstr(out, "tps = "); p; p = strstr(p + 1, "tps = ")) {
            double v;
            int n = 0;
            if (sscanf(p, "tps = %lf %n", &v, &n) == 1 &&
                !strncmp(p + n, tails[i], strlen(tails[i]))) {
                *tps = v;
                return 0;
            }
        }
    }
    return -EINVAL;
}
