/* The one INI reader of raidkit's own files (bench suites, device-model profiles), on top of
 * libinih. Syntax (docs/BENCHMARKS.md): `key = value` lines, `[section]` headers, comment lines
 * starting with `#` or `;`, inline comments after a blank (`value  # note`); leading blanks are
 * ignored (no continuation lines); a line holds at most 199 characters (libinih's line buffer,
 * comments not counted). */
#ifndef RK_CORE_INI_H
#define RK_CORE_INI_H

#include <stddef.h>

/*
 * Called for every `[section]` header (key and value NULL; section is the trimmed name, maybe
 * "") and every `key = value` line (section "" before the first header; key and value trimmed).
 * Returns 0, or a negative errno with a message (no file or line prefix) in msg.
 */
typedef int rk_ini_fn(void *arg, const char *section, const char *key, const char *value, char *msg,
                      size_t msglen);

/*
 * Read the INI file at path, calling fn(arg, ...) line by line. Stops at the first error.
 * Returns 0; the negative errno of fopen with "PATH: reason" in err; or -EINVAL (or fn's error)
 * with "PATH:LINE: message" in err for a syntax error, a too long line or an error of fn.
 */
int rk_ini_parse(const char *path, rk_ini_fn *fn, void *arg, char *err, size_t errlen);

#endif
