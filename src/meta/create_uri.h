/* `create` for members given as NBD URIs (docs/CLI.md "Member URIs"): the device-level
 * counterparts of create.c's file-descriptor steps. Each call opens the URI with rk_nbd_open,
 * does its I/O, flushes and closes. */
#ifndef RAIDKIT_META_CREATE_URI_H
#define RAIDKIT_META_CREATE_URI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Check a URI member for create: reachable and writable, *size = its size in bytes; the first
 * probe_len bytes are read and passed to sig (returns the name of a foreign signature or NULL),
 * which refuses the member with -EEXIST unless force. Writes nothing. 0 or -errno with a
 * one-line message naming the URI in err. */
int create_uri_check(const char *uri, bool force, size_t probe_len,
                     const char *(*sig)(const uint8_t *buf, size_t len), uint64_t *size, char *err,
                     size_t errlen);

/* Write len bytes of buf at byte offset off of the URI member, then flush. 0 or -errno with a
 * message (what names the data: "the superblock") in err. */
int create_uri_write(const char *uri, const void *buf, uint64_t len, uint64_t off, const char *what,
                     char *err, size_t errlen);

/* Make [off, off+len) of the URI member read back zeroes (NBD write-zeroes when the server has
 * it, else written zeros), in pieces of at most 32 MiB, then flush. 0 or -errno. */
int create_uri_zero(const char *uri, uint64_t len, uint64_t off);

#endif
