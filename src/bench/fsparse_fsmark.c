/* fs_mark's result table: after a "FSUse%  Count  Size  Files/sec  App Overhead" header, one
 * line of five numbers per loop; the figure is the Files/sec column (the mean over loops). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bench/fsparse.h"

int fsparse_fsmark(const char *out, double *files_per_s)
{
    double sum = 0;
    int n = 0;
    bool table = false;
    for (const char *line = out; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        double use, count, size, fps, ovh;
        if (!strncmp(line, "FSUse%", 6))
            table = true;
        else if (table && sscanf(line, "%lf %lf %lf %lf %lf", &use, &count, &size, &fps, &ovh) == 5)
            sum += fps, n++;
    }
    if (n == 0)
        return -EINVAL;
    *files_per_s = sum / n;
    return 0;
}
