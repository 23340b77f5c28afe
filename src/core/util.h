/* Small shared helpers: logging to stderr, the one K/M/G/T size parser, checked integer
 * parsing, crc32c (ISA-L) and little-endian encoding. */
#ifndef RK_CORE_UTIL_H
#define RK_CORE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Log levels for rk_log. RAIDKIT_DEBUG=1 in the environment enables RK_LOG_DEBUG. */
enum rk_log_level { RK_LOG_ERROR, RK_LOG_WARN, RK_LOG_INFO, RK_LOG_DEBUG };

/*
 * Print one log line to stderr (thread-safe, one write per line):
 *   "2026-12-01T16:09:32.123+0000 info raidkit: message"   (local time, milliseconds, zone)
 * The level word is error, warning, info or debug. When stderr is the systemd journal
 * (JOURNAL_STREAM names stderr's device:inode, as systemd sets it) the line is instead
 * "<P>raidkit: message" with the syslog priority P (3 err, 4 warning, 6 info, 7 debug) and no
 * timestamp, which journald stores as the entry's priority. RAIDKIT_LOG_TIME=0 drops the
 * timestamp (reproducible output). docs/CLI.md "Logging".
 */
void rk_log(enum rk_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define rk_err(...)   rk_log(RK_LOG_ERROR, __VA_ARGS__)
#define rk_warn(...)  rk_log(RK_LOG_WARN, __VA_ARGS__)
#define rk_info(...)  rk_log(RK_LOG_INFO, __VA_ARGS__)
#define rk_debug(...) rk_log(RK_LOG_DEBUG, __VA_ARGS__)
/* Print only lines of level <= max (quiet mode for tests: RK_LOG_ERROR; -q: RK_LOG_WARN;
 * -v: RK_LOG_DEBUG). Overrides RAIDKIT_DEBUG. */
void rk_log_set_level(enum rk_log_level max);
/* The current maximum level printed. */
enum rk_log_level rk_log_get_level(void);
/* fn (NULL: none) runs under the log lock before every line is printed: the CLI's progress bar
 * clears its \r line there (src/cli/report.c), so a log line never lands inside it. */
void rk_log_set_before(void (*fn)(void));
/* Print text as is on stderr under the log lock (no newline, no level), then set *printed
 * (may be NULL) still under it: the progress bar, so that no log line is printed between the
 * bar and its "drawn" mark. */
void rk_log_raw(const char *text, bool *printed);

/* snprintf into err (if non-NULL) — the one way errors travel up as text. */
void rk_set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parse a size: decimal digits with optional suffix K, M, G, T (powers of 1024, optional "iB"
 * or "B"). "0" is allowed. Returns 0 and *out, or -EINVAL (empty, junk, overflow). */
int rk_parse_size(const char *s, uint64_t *out);
/* Parse a plain decimal unsigned integer (no suffix) with overflow check; -EINVAL on error. */
int rk_parse_u64(const char *s, uint64_t *out);
/* Format bytes as "1.5 GiB" into buf. Returns buf. */
char *rk_format_size(uint64_t bytes, char *buf, size_t len);

/* crc32c (Castagnoli, iSCSI polynomial) through ISA-L crc32_iscsi; seed 0xffffffff gives the
 * standard crc32c when the result is inverted: rk_crc32c() does both. */
uint32_t rk_crc32c(const void *buf, size_t len);

/* Little-endian load/store helpers for on-disk and on-wire formats. */
static inline void rk_put_le16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void rk_put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void rk_put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rk_get_le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t rk_get_le32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static inline uint64_t rk_get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
/* Big-endian (network order, NBD) helpers. */
static inline void rk_put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}
static inline void rk_put_be32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}
static inline void rk_put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint16_t rk_get_be16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}
static inline uint32_t rk_get_be32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = (v << 8) | p[i];
    return v;
}
static inline uint64_t rk_get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

#endif
