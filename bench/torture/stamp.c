/* Keyed block stamps (see stamp.h): BLAKE2b from blake2b.c, layout of tests/lib/torture.py. */
#include "stamp.h"

#include <stdio.h>
#include <string.h>

#include "blake2b.h"

static const char stamp_magic[8] = {'R', 'K', 'T', 'O', 'R', 'T', '0', '1'};

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8); /* little-endian host */
}

/* The 64-byte body piece of (b, g): keyed BLAKE2b of ix personalised "body". */
static void stamp_piece(const uint8_t key[STAMP_KEY], const uint8_t ix[16], uint8_t piece[64])
{
    struct blake2b s;
    blake2b_init(&s, 64, key, STAMP_KEY, "body", 4);
    blake2b_update(&s, ix, 16);
    blake2b_final(&s, piece);
}

void stamp_block(const uint8_t key[STAMP_KEY], uint64_t b, uint64_t g, uint8_t *out)
{
    uint8_t ix[16], piece[64], mac[32];
    put64(ix, b);
    put64(ix + 8, g);
    struct blake2b s;
    stamp_piece(key, ix, piece);
    uint8_t *body = out + 64;
    for (int i = 0; i < 63; i++)
        memcpy(body + 64 * i, piece, 64);
    blake2b_init(&s, 32, key, STAMP_KEY, NULL, 0);
    blake2b_update(&s, ix, 16);
    blake2b_update(&s, body, STAMP_BLOCK - 64);
    blake2b_final(&s, mac);
    memcpy(out, stamp_magic, 8);
    memcpy(out + 8, ix, 16);
    memcpy(out + 24, mac, 32);
    memset(out + 56, 0, 8);
}

int64_t stamp_parse(const uint8_t key[STAMP_KEY], uint64_t b, const uint8_t *data, uint64_t gmax,
                    uint8_t *scratch)
{
    static const uint8_t zero[STAMP_BLOCK];
    if (memcmp(data, stamp_magic, 8) != 0)
        return memcmp(data, zero, STAMP_BLOCK) == 0 ? 0 : -1;
    uint64_t xb, g;
    memcpy(&xb, data + 8, 8);
    memcpy(&g, data + 16, 8);
    if (xb != b || g == 0 || g > gmax)
        return -1;
    stamp_block(key, b, g, scratch);
    return memcmp(data, scratch, STAMP_BLOCK) == 0 ? (int64_t)g : -1;
}

uint64_t stamp_claim(uint64_t b, const uint8_t *data)
{
    uint64_t xb, g;
    memcpy(&xb, data + 8, 8);
    memcpy(&g, data + 16, 8);
    return memcmp(data, stamp_magic, 8) == 0 && xb == b ? g : 0;
}

int64_t stamp_match(const uint8_t key[STAMP_KEY], uint64_t b, uint64_t g, const uint8_t *data,
                    const uint8_t mac[32])
{
    static const uint8_t zero8[8];
    uint8_t ix[16], piece[64];
    put64(ix, b);
    put64(ix + 8, g);
    if (g == 0 || memcmp(data, stamp_magic, 8) || memcmp(data + 8, ix, 16) ||
        memcmp(data + 24, mac, 32) || memcmp(data + 56, zero8, 8))
        return -1;
    stamp_piece(key, ix, piece);
    for (int i = 0; i < 63; i++)
        if (memcmp(data + 64 + 64 * i, piece, 64))
            return -1;
    return (int64_t)g;
}

static void hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

bool stamp_self_test(void)
{
    /* python3: hashlib.blake2b(b"abc").hexdigest(); and stamp(b=5, g=7, key=bytes(range(32)))'s
     * MAC: hashlib.blake2b(ix + body, key=k, digest_size=32) as tests/lib/torture.py builds it. */
    static const char abc[] = "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
                              "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923";
    static const char mac57[] = "7e88d1ff782a9ca13b6dbc4355982b4ad0175fa032e60541cfa50d844c005d45";
    uint8_t d[64], key[STAMP_KEY], blk[STAMP_BLOCK], scratch[STAMP_BLOCK];
    char h[129];
    struct blake2b s;
    blake2b_init(&s, 64, NULL, 0, NULL, 0);
    blake2b_update(&s, "abc", 3);
    blake2b_final(&s, d);
    hex(d, 64, h);
    if (strcmp(h, abc) != 0)
        return false;
    for (unsigned i = 0; i < STAMP_KEY; i++)
        key[i] = (uint8_t)i;
    stamp_block(key, 5, 7, blk);
    hex(blk + 24, 32, h);
    if (strcmp(h, mac57) != 0)
        return false;
    if (stamp_parse(key, 5, blk, 7, scratch) != 7 || stamp_parse(key, 6, blk, 7, scratch) != -1 ||
        stamp_parse(key, 5, blk, 6, scratch) != -1)
        return false;
    if (stamp_claim(5, blk) != 7 || stamp_match(key, 5, 7, blk, blk + 24) != 7)
        return false;
    uint8_t mac[32];
    memcpy(mac, blk + 24, 32);
    blk[100] ^= 1;
    return stamp_parse(key, 5, blk, 7, scratch) == -1 && stamp_match(key, 5, 7, blk, mac) == -1;
}
