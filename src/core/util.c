/* Shared helpers: logging, size parsing, crc32c. See util.h for the contracts. */
#include "core/util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <isa-l/crc.h>

static enum rk_log_level log_max = RK_LOG_INFO;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_init(void)
{
    const char *d = getenv("RAIDKIT_DEBUG");
    if (d && *d && *d != '0')
        log_max = RK_LOG_DEBUG;
}

void rk_log_set_level(enum rk_log_level max)
{
    pthread_once(&log_once, log_init);
    log_max = max;
}

void rk_log(enum rk_log_level lvl, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    pthread_once(&log_once, log_init);
    if (lvl > log_max)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (lvl == RK_LOG_INFO)
        fprintf(stderr, "raidkit: %s\n", msg);
    else
        fprintf(stderr, "raidkit: %s: %s\n", names[lvl], msg);
    pthread_mutex_unlock(&log_lock);
}

void rk_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Parse the leading decimal digits of *s into *v, advancing *s; -EINVAL when there are none or
 * the value overflows 64 bits. */
static int parse_digits(const char **s, uint64_t *v)
{
    const char *p = *s;
    if (!p || *p < '0' || *p > '9')
        return -EINVAL;
    *v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (*v > (UINT64_MAX - d) / 10)
            return -EINVAL;
        *v = *v * 10 + d;
    }
    *s = p;
    return 0;
}

int rk_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v;
    if (parse_digits(&s, &v) || *s)
        return -EINVAL;
    *out = v;
    return 0;
}

int rk_parse_size(const char *s, uint64_t *out)
{
    uint64_t v;
    if (parse_digits(&s, &v))
        return -EINVAL;
    unsigned shift = 0;
    switch (*s) {
    case 'k':
    case 'K':
        shift = 10;
        s++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        s++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        s++;
        break;
    case 't':
    case 'T':
        shift = 40;
        s++;
        break;
    case 'b':
    case 'B':
    case '\0':
        break;
    default:
        return -EINVAL;
    }
    if (shift && (s[0] == 'i' || s[0] == 'I') && (s[1] == 'B' || s[1] == 'b'))
        s += 2;
    else if (*s == 'b' || *s == 'B')
        s++;
    if (*s)
        return -EINVAL;
    if (shift && v > (UINT64_MAX >> shift))
        return -EINVAL;
    *out = v << shift;
    return 0;
}

char *rk_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", bytes);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

uint32_t rk_crc32c(const void *buf, size_t len)
{
    return ~crc32_iscsi((unsigned char *)buf, (int)len, 0xffffffffu);
}
