/* The fixed write-intent bitmap area behind tests/golden/bitmap_v1.bin: shared by the generator
 * (mkgolden.c --bitmap) and the test that decodes the committed image (test_bitmap.c). Never
 * change it: add a new one. */
#ifndef RK_TESTS_BM_GOLDEN_H
#define RK_TESTS_BM_GOLDEN_H

#include <string.h>

#include "raid/bitmap_disk.h"

#define GOLDEN_BM_SIZE 4096u

/* 1000 regions of 128 KiB (members of 125 MiB data), event 7, regions 0, 9, 500 and 999 set. */
static inline void golden_bm_v1(struct rk_bm_hdr *h, uint8_t *area)
{
    memset(h, 0, sizeof(*h));
    h->region = 128 * 1024;
    h->nregions = 1000;
    h->events = 7;
    for (unsigned i = 0; i < 16; i++)
        h->uuid[i] = (uint8_t)(0x10 + i);
    memset(area, 0, GOLDEN_BM_SIZE);
    static const unsigned set[] = {0, 9, 500, 999};
    for (unsigned k = 0; k < 4; k++)
        area[RK_BM_HDR_SIZE + set[k] / 8] |= (uint8_t)(1u << (set[k] % 8));
    rk_bm_encode(h, area, GOLDEN_BM_SIZE);
}

#endif
