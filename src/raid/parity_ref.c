/* Plain-C reference of RAID5/RAID6 parity and recovery, byte at a time and without ISA-L, so the
 * tests and the perf program can check rk_parity_* against an independent derivation.
 *
 * Recovery solves md's raid6 equations directly (drivers/md raid6 recov): with Pxy / Qxy the P / Q
 * of the surviving data only, two lost data blocks x < y satisfy
 *     Dx ^ Dy = P ^ Pxy,    g^x·Dx ^ g^y·Dy = Q ^ Qxy
 * so Dx = (g^y·(P ^ Pxy) ^ (Q ^ Qxy)) / (g^x ^ g^y) and Dy = Dx ^ P ^ Pxy; a data block lost
 * with P is (Q ^ Qx) / g^x; a data block lost with Q (or alone) is the XOR of the rest.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "raid/parity.h"

uint8_t rk_parity_ref_gf_mul(uint8_t a, uint8_t b)
{
    uint8_t r = 0;

    while (b) {
        if (b & 1)
            r ^= a;
        a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1d : 0));
        b >>= 1;
    }
    return r;
}

static uint8_t ref_pow(uint8_t a, int e)
{
    uint8_t r = 1;
    for (int i = 0; i < e; i++)
        r = rk_parity_ref_gf_mul(r, a);
    return r;
}

/* Multiplicative inverse: a^254 (a != 0; the group has order 255). */
static uint8_t ref_inv(uint8_t a)
{
    return ref_pow(a, 254);
}

/* Full 256x256 product table: per-byte products must be cheap for 64 KiB test blocks. */
struct ref_tab {
    uint8_t mul[256][256];
};

static void ref_tab_init(struct ref_tab *t)
{
    for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++)
            t->mul[a][b] = rk_parity_ref_gf_mul((uint8_t)a, (uint8_t)b);
}

static const struct ref_tab *ref_tab_get(void)
{
    static struct ref_tab tab;
    static int ready;

    /* Tests and bench only, single-threaded callers: a plain flag is enough. */
    if (!ready) {
        ref_tab_init(&tab);
        ready = 1;
    }
    return &tab;
}

void rk_parity_ref_pq(int ndata, size_t len, void *const *data, void *p, void *q)
{
    const struct ref_tab *t = ref_tab_get();
    uint8_t gi[RK_PARITY_MAX_DATA];

    for (int i = 0; i < ndata; i++)
        gi[i] = ref_pow(2, i);
    for (size_t b = 0; b < len; b++) {
        uint8_t pb = 0, qb = 0;
        for (int i = 0; i < ndata; i++) {
            uint8_t d = ((const uint8_t *)data[i])[b];
            pb ^= d;
            qb ^= t->mul[gi[i]][d];
        }
        if (p)
            ((uint8_t *)p)[b] = pb;
        if (q)
            ((uint8_t *)q)[b] = qb;
    }
}

/* P and Q over the data blocks other than x and y (-1 = none). */
static void ref_partial(int ndata, size_t b, void **blocks, int x, int y, const uint8_t *gi,
                        uint8_t *pp, uint8_t *qq)
{
    const struct ref_tab *t = ref_tab_get();
    uint8_t pb = 0, qb = 0;

    for (int i = 0; i < ndata; i++) {
        if (i == x || i == y)
            continue;
        uint8_t d = ((const uint8_t *)blocks[i])[b];
        pb ^= d;
        qb ^= t->mul[gi[i]][d];
    }
    *pp = pb;
    *qq = qb;
}

int rk_parity_ref_recover(int ndata, int nparity, size_t len, void **blocks, const int *missing,
                          int nmissing)
{
    const struct ref_tab *t = ref_tab_get();
    uint8_t gi[RK_PARITY_MAX_DATA];
    int x = -1, y = -1, nb = ndata + nparity;
    uint8_t *P, *Q;

    if (ndata < 1 || ndata > RK_PARITY_MAX_DATA || (nparity != 1 && nparity != 2) || nmissing < 0 ||
        nmissing > nparity)
        return -EINVAL;
    if (nmissing >= 1)
        x = missing[0];
    if (nmissing == 2) {
        y = missing[1];
        if (x > y) {
            int tmp = x;
            x = y;
            y = tmp;
        }
        if (x == y)
            return -EINVAL;
    }
    if ((x >= nb) || (y >= nb) || (nmissing >= 1 && x < 0))
        return -EINVAL;
    for (int i = 0; i < ndata; i++)
        gi[i] = ref_pow(2, i);
    /* Divisors of the two-unknown cases, hoisted out of the byte loop. */
    uint8_t inv_gx = x >= 0 && x < ndata ? ref_inv(gi[x]) : 0;
    uint8_t inv_gxy = y >= 0 && y < ndata ? ref_inv(gi[x] ^ gi[y]) : 0;
    P = blocks[ndata];
    Q = nparity == 2 ? blocks[ndata + 1] : NULL;

    for (size_t b = 0; b < len; b++) {
        uint8_t pxy, qxy;
        if (nmissing == 0)
            break;
        if (y < 0 || y == ndata + 1) {
            /* x alone, or x with Q: x is data or P; P-equation first, then Q if lost. */
            if (x < ndata) {
                ref_partial(ndata, b, blocks, x, -1, gi, &pxy, &qxy);
                ((uint8_t *)blocks[x])[b] = P[b] ^ pxy;
            } else if (x == ndata) {
                ref_partial(ndata, b, blocks, -1, -1, gi, &pxy, &qxy);
                P[b] = pxy;
            }
            if (x == ndata + 1 || y == ndata + 1) {
                ref_partial(ndata, b, blocks, -1, -1, gi, &pxy, &qxy);
                Q[b] = qxy;
            }
        } else if (y == ndata) {
            /* data x and P: Dx = (Q ^ Qx) / g^x, then P. */
            ref_partial(ndata, b, blocks, x, -1, gi, &pxy, &qxy);
            uint8_t dx = t->mul[inv_gx][Q[b] ^ qxy];
            ((uint8_t *)blocks[x])[b] = dx;
            P[b] = pxy ^ dx;
        } else {
            /* data x < y. */
            ref_partial(ndata, b, blocks, x, y, gi, &pxy, &qxy);
            uint8_t ps = P[b] ^ pxy, qs = Q[b] ^ qxy;
            uint8_t dx = t->mul[inv_gxy][t->mul[gi[y]][ps] ^ qs];
            ((uint8_t *)blocks[x])[b] = dx;
            ((uint8_t *)blocks[y])[b] = dx ^ ps;
        }
    }
    return 0;
}
