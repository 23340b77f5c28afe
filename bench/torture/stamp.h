/* Keyed block stamps of the power-cut torture (docs/TORTURE.md "The client and its checks"): the
 * same 4 KiB layout tests/lib/torture.py writes, so both clients agree on what a valid block is. */
#ifndef RK_TORTURE_STAMP_H
#define RK_TORTURE_STAMP_H

#include <stdbool.h>
#include <stdint.h>

#define STAMP_BLOCK 4096u
#define STAMP_KEY   32u

/* Write the stamp of block index b, generation g (g >= 1) into out (STAMP_BLOCK bytes): a 64-byte
 * header (magic "RKTORT01", b and g little-endian, a 32-byte BLAKE2b MAC keyed with key over
 * (b, g, body), 8 zero bytes), then a 4032-byte body: 63 copies of the 64-byte keyed BLAKE2b of
 * (b, g) personalised "body". Generation 0 is the all-zero block (not written by this call). */
void stamp_block(const uint8_t key[STAMP_KEY], uint64_t b, uint64_t g, uint8_t *out);

/* The generation data (STAMP_BLOCK bytes read at block index b) holds: 0 for the all-zero block,
 * g when data is exactly stamp_block(key, b, g) for some 1 <= g <= gmax, else -1 (garbage: torn,
 * misplaced, reconstructed from stale parity, or never written by this run). scratch is a
 * STAMP_BLOCK-byte buffer. */
int64_t stamp_parse(const uint8_t key[STAMP_KEY], uint64_t b, const uint8_t *data, uint64_t gmax,
                    uint8_t *scratch);

/* The generation header of data claims for block b: g >= 1 when the magic and the index match
 * (nothing else checked), else 0. */
uint64_t stamp_claim(uint64_t b, const uint8_t *data);

/* As stamp_parse for a block whose header claims generation g (stamp_claim), with mac the
 * 32-byte MAC stamp_block wrote for (b, g) (kept by the writer): the body is regenerated (one
 * small BLAKE2b) and the whole block compared with the stamp, MAC included, without hashing the
 * 4 KiB again. Returns g when data is exactly stamp_block(key, b, g), else -1. */
int64_t stamp_match(const uint8_t key[STAMP_KEY], uint64_t b, uint64_t g, const uint8_t *data,
                    const uint8_t mac[32]);

/* Check the BLAKE2b code and the stamp layout against vectors computed with Python's hashlib
 * (RFC 7693 "abc", and one stamp): true when they match. */
bool stamp_self_test(void);

#endif
