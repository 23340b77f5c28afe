/* libFuzzer harness: the NBD transmission phase (src/nbd/transmit.c request parser, via the real
 * server in-process): a fixed valid handshake (flags, STRUCTURED_REPLY when input byte 0 is odd,
 * GO on export "fz") and then the input as requests (headers and payloads). */
#include "fuzz_nbd_common.h"

static size_t fz_opt(uint8_t *p, uint32_t opt, const uint8_t *d, uint32_t len)
{
    rk_put_be64(p, 0x49484156454F5054ull);
    rk_put_be32(p + 8, opt);
    rk_put_be32(p + 12, len);
    if (len)
        memcpy(p + 16, d, len);
    return 16 + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_server_start();
    if (size < 1)
        return 0;
    uint8_t pre[128];
    size_t n = 0;
    rk_put_be32(pre, 3); /* FIXED_NEWSTYLE | NO_ZEROES */
    n += 4;
    if (data[0] & 1)
        n += fz_opt(pre + n, 8, NULL, 0);
    static const uint8_t go[] = {0, 0, 0, 2, 'f', 'z', 0, 0};
    n += fz_opt(pre + n, 7, go, sizeof(go));
    fz_exchange(pre, n, data + 1, size - 1);
    return 0;
}
