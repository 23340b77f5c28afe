/* BLAKE2b (RFC 7693), keyed and personalised, for the power-cut torture's block stamps
 * (docs/TORTURE.md "The fast driver"). Small and dependency-free; not constant-time-hardened
 * and not meant for anything but test stamps. */
#ifndef RK_TORTURE_BLAKE2B_H
#define RK_TORTURE_BLAKE2B_H

#include <stddef.h>
#include <stdint.h>

/* Hashing state: chaining value, counter, one buffered 128-byte block. */
struct blake2b {
    uint64_t h[8];
    uint64_t t[2];
    uint8_t buf[128];
    size_t buflen;
    size_t outlen;
};

/* Start a hash of outlen bytes (1..64) with key (keylen 0..64 bytes, NULL when 0) and
 * personalisation person (up to 16 bytes, zero-padded as Python's hashlib does; NULL = none).
 * Returns 0, or -1 on a bad length. */
int blake2b_init(struct blake2b *s, size_t outlen, const void *key, size_t keylen,
                 const void *person, size_t personlen);

/* Add len bytes of data. */
void blake2b_update(struct blake2b *s, const void *data, size_t len);

/* Finish: write the outlen-byte digest to out. The state is spent afterwards. */
void blake2b_final(struct blake2b *s, uint8_t *out);

#endif
