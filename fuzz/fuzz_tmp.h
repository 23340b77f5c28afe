/* The harnesses' private temp directory: a new mkdtemp directory named NAME-XXXXXX under TMPDIR
 * (fuzz/run.sh points TMPDIR into its own work directory, removed when the run ends), or under
 * /tmp when TMPDIR is unset or too long for the paths built in it (a unix socket path holds 108
 * bytes). Aborts when the directory cannot be made. */
#ifndef RK_FUZZ_TMP_H
#define RK_FUZZ_TMP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dir (n bytes, at least 104) receives the new directory's path. */
static inline void fz_tempdir(char *dir, size_t n, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp || strlen(tmp) >= 80)
        tmp = "/tmp";
    snprintf(dir, n, "%s/%s-XXXXXX", tmp, name);
    if (!mkdtemp(dir))
        abort();
}

#endif
