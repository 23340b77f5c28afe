/* The cache part of `raidkit info` (src/meta/info.c): a cache device given among the paths is
 * described on its own (superblock and index counts, read-only), and an array's superblock
 * shows its cache binding. */
#ifndef RK_META_INFO_CACHE_H
#define RK_META_INFO_CACHE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cache/meta.h"
#include "meta/superblock.h"

/* What info reports of one cache device. rc != 0: unreadable or refused, reason says why. */
struct info_cache {
    const char *path;
    int rc;
    char reason[512];
    uint8_t uuid[16], array_uuid[16];
    uint64_t array_size, blocks, data_offset, journal_size, mapped, dirty, free;
    uint32_t block_size;
    enum rk_cache_mode mode;
};

/* True when the file at path can be read and starts with the cache superblock magic. */
bool info_cache_probe(const char *path);

/* Open path read-only (nothing is written) and fill *c. */
void info_cache_read(const char *path, struct info_cache *c);

/* Text of *c to f; array (NULL when no member was given) adds whether the array is bound to
 * this cache. */
void info_cache_text(FILE *f, const struct info_cache *c, const struct rk_sb *array);

/* JSON object of *c (the caller owns it), as info_cache_text. NULL on ENOMEM. */
cJSON *info_cache_json(const struct info_cache *c, const struct rk_sb *array);

/* One-line description of sb's cache binding ("none", "cache UUID", "cache UUID, may hold dirty
 * data") into buf; returns buf. */
char *info_cache_binding(const struct rk_sb *sb, char *buf, size_t len);

#endif
