/* dbench 4's result: "Throughput X MB/sec  N clients  N procs  max_latency=X ms" (the last such
 * line; progress lines do not have it). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/fsparse.h"

int fsparse_dbench(const char *out, double *mbs)
{
    const char *last = NULL;
    for (const char *p = strstr(out, "Throughput "); p; p = strstr(p + 1, "Throughput "))
        if (p == out || p[-1] == '\n')
            last = p;
    double v;
    if (!last || sscanf(last, "Throughput %lf MB/sec", &v) != 1)
        return -EINVAL;
    *mbs = v;
    return 0;
}
