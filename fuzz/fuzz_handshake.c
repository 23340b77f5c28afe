/* libFuzzer harness: the NBD handshake (src/nbd/handshake.c, via the real server in-process):
 * the input is everything a client sends after the server's greeting (client flags, options). */
#include "fuzz_nbd_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_server_start();
    fz_exchange(NULL, 0, data, size);
    return 0;
}
