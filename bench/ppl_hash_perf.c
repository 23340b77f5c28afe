/*
 * CPU cost of the partial parity log digests (bench/RESULTS.md "PPL digests"): ns per 4 KiB
 * cell of rk_ppl_hash (SipHash-2-4, libsodium crypto_shorthash), beside keyed BLAKE2b-128
 * (crypto_generichash, the alternative), crc32c of the same cell and the XOR of one 4 KiB block
 * into another (the partial parity's own per-block work), single thread.
 * Usage: ppl_hash_perf [SECONDS per measurement, default 1]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "core/util.h"
#include "raid/parity.h"
#include "raid/raid5_ppl.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 1.0;
    if (sodium_init() < 0) /* picks the SIMD BLAKE2b, as r5_ppl_open does */
        return 1;
    static uint8_t cell[RK_PPL_CELL] __attribute__((aligned(64)));
    static uint8_t dst[RK_PPL_CELL] __attribute__((aligned(64)));
    uint8_t key[RK_PPL_KEY_BYTES], dig[RK_PPL_DIG_BYTES];
    for (size_t i = 0; i < sizeof(cell); i++)
        cell[i] = (uint8_t)(i * 31 + 7);
    memset(key, 5, sizeof(key));
    const char *names[4] = {"siphash-2-4 (rk_ppl_hash)", "crc32c", "xor 4K into 4K",
                            "blake2b-128 keyed (generichash)"};
    uint8_t bkey[32] = {3}, bd[16];
    volatile uint32_t sink = 0;
    for (int m = 0; m < 4; m++) {
        uint64_t n = 0;
        double t0 = now_s(), t1;
        do {
            for (int i = 0; i < 256; i++) {
                if (m == 0) {
                    rk_ppl_hash(key, cell, dig);
                    sink += dig[0];
                } else if (m == 1) {
                    sink += rk_crc32c(cell, sizeof(cell));
                } else if (m == 3) {
                    crypto_generichash(bd, sizeof(bd), cell, sizeof(cell), bkey, sizeof(bkey));
                    sink += bd[0];
                } else {
                    rk_parity_xor_into(sizeof(cell), dst, cell);
                    sink += dst[1];
                }
            }
            n += 256;
            t1 = now_s();
        } while (t1 - t0 < secs);
        printf("%-34s %8.0f ns per 4 KiB  %6.2f GB/s\n", names[m], (t1 - t0) * 1e9 / (double)n,
               (double)n * RK_PPL_CELL / (t1 - t0) / 1e9);
    }
    return sink == 0xffffffffu; /* keeps the loops */
}
