/* Shared helpers: logging, size parsing, crc32c. See util.h for the contracts. */
#include "core/util.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

#include <isa-l/crc.h>

static enum rk_log_level log_max = RK_LOG_INFO;
static bool log_journal, log_no_time;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* JOURNAL_STREAM is "DEV:INODE" of the journal stream systemd connected stdout/stderr to. */
static bool log_stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st))
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static void log_init(void)
{
    const char *d = getenv("RAIDKIT_DEBUG");
    if (d && *d && *d != '0')
        log_max = RK_LOG_DEBUG;
    const char *t = getenv("RAIDKIT_LOG_TIME");
    log_no_time = t && !strcmp(t, "0");
    log_journal = log_stderr_is_journal();
}

void rk_log_set_level(enum rk_log_level max)
{
    pthread_once(&log_once, log_init);
    log_max = max;
}

enum rk_log_level rk_log_get_level(void)
{
    pthread_once(&log_once, log_init);
    return log_max;
}

/* "2026-12-01T16:09:32.123+0000 " into buf (local time). */
static void log_stamp(char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    char a[32], z[8];
    strftime(a, sizeof(a), "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(z, sizeof(z), "%z", &tm);
    snprintf(buf, len, "%s.%03ld%s ", a, ts.tv_nsec / 1000000, z);
}

static void (*log_before)(void);

void rk_log_set_before(void (*fn)(void))
{
    pthread_mutex_lock(&log_lock);
    log_before = fn;
    pthread_mutex_unlock(&log_lock);
}

void rk_log_raw(const char *text, bool *printed)
{
    pthread_mutex_lock(&log_lock);
    fputs(text, stderr);
    if (printed)
        *printed = true;
    pthread_mutex_unlock(&log_lock);
}

void rk_log(enum rk_log_level lvl, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    static const int prio[] = {3, 4, 6, 7};
    pthread_once(&log_once, log_init);
    if (lvl > log_max)
        return;
    char msg[1024], stamp[64] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);
    if (log_before)
        log_before();
    if (log_journal) {
        fprintf(stderr, "<%d>raidkit: %s\n", prio[lvl], msg);
    } else {
        if (!log_no_time)
            log_stamp(stamp, sizeof(stamp));
        fprintf(stderr, "%s%s raidkit: %s\n", stamp, names[lvl], msg);
    }
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
