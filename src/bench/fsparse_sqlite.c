/* The SQLite job's check: sqlite3 -batch prints "rows|N" for its final
 * "SELECT 'rows', count(*) FROM pts1" (every INSERT landed). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench/fsparse.h"

int fsparse_sqlite_rows(const char *out, long *rows)
{
    for (const char *line = out; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        long n;
        char end;
        if (sscanf(line, "rows|%ld%c", &n, &end) == 2 && end == '\n') {
            *rows = n;
            return 0;
        }
        if (sscanf(line, "rows|%ld", &n) == 1 && !strchr(line, '\n')) {
            *rows = n;
            return 0;
        }
    }
    return -EINVAL;
}
