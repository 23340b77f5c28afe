/* PostMark 1.51's summary: "N seconds of transactions (T per second)". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/fsparse.h"

int fsparse_postmark(const char *out, double *tps)
{
    const char *p = strstr(out, "seconds of transactions (");
    double v;
    if (!p || sscanf(p, "seconds of transactions (%lf per second)", &v) != 1)
        return -EINVAL;
    *tps = v;
    return 0;
}
