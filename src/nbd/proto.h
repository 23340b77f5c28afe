/* NBD wire constants (NBD protocol, "Values"): magics, flags, option, reply, command
 * and error codes. Everything on the wire is big-endian. */
#ifndef RK_NBD_PROTO_H
#define RK_NBD_PROTO_H

#include <stdint.h>

/* Handshake magics. */
#define NBD_MAGIC            0x4e42444d41474943ull /* "NBDMAGIC" */
#define NBD_IHAVEOPT         0x49484156454f5054ull /* "IHAVEOPT" */
#define NBD_REP_MAGIC        0x3e889045565a9ull    /* option reply */
#define NBD_REQUEST_MAGIC    0x25609513u
#define NBD_SIMPLE_MAGIC     0x67446698u
#define NBD_STRUCTURED_MAGIC 0x668e33efu

/* Handshake flags (server) and client flags. */
#define NBD_FLAG_FIXED_NEWSTYLE   (1u << 0)
#define NBD_FLAG_NO_ZEROES        (1u << 1)
#define NBD_FLAG_C_FIXED_NEWSTYLE (1u << 0)
#define NBD_FLAG_C_NO_ZEROES      (1u << 1)

/* Transmission flags. */
#define NBD_FLAG_HAS_FLAGS         (1u << 0)
#define NBD_FLAG_READ_ONLY         (1u << 1)
#define NBD_FLAG_SEND_FLUSH        (1u << 2)
#define NBD_FLAG_SEND_FUA          (1u << 3)
#define NBD_FLAG_SEND_TRIM         (1u << 5)
#define NBD_FLAG_SEND_WRITE_ZEROES (1u << 6)
#define NBD_FLAG_CAN_MULTI_CONN    (1u << 8)
#define NBD_FLAG_SEND_CACHE        (1u << 10)
#define NBD_FLAG_SEND_FAST_ZERO    (1u << 11)

/* Options. */
#define NBD_OPT_EXPORT_NAME       1u
#define NBD_OPT_ABORT             2u
#define NBD_OPT_LIST              3u
#define NBD_OPT_STARTTLS          5u
#define NBD_OPT_INFO              6u
#define NBD_OPT_GO                7u
#define NBD_OPT_STRUCTURED_REPLY  8u
#define NBD_OPT_LIST_META_CONTEXT 9u
#define NBD_OPT_SET_META_CONTEXT  10u

/* Option replies. */
#define NBD_REP_ACK          1u
#define NBD_REP_SERVER       2u
#define NBD_REP_INFO         3u
#define NBD_REP_META_CONTEXT 4u
#define NBD_REP_ERR          (1u << 31)
#define NBD_REP_ERR_UNSUP    (NBD_REP_ERR + 1)
#define NBD_REP_ERR_POLICY   (NBD_REP_ERR + 2)
#define NBD_REP_ERR_INVALID  (NBD_REP_ERR + 3)
#define NBD_REP_ERR_TLS_REQD (NBD_REP_ERR + 5)
#define NBD_REP_ERR_UNKNOWN  (NBD_REP_ERR + 6)
#define NBD_REP_ERR_SHUTDOWN (NBD_REP_ERR + 7)
#define NBD_REP_ERR_TOO_BIG  (NBD_REP_ERR + 9)

/* NBD_REP_INFO types. */
#define NBD_INFO_EXPORT      0u
#define NBD_INFO_NAME        1u
#define NBD_INFO_DESCRIPTION 2u
#define NBD_INFO_BLOCK_SIZE  3u

/* Commands and command flags. */
#define NBD_CMD_READ           0u
#define NBD_CMD_WRITE          1u
#define NBD_CMD_DISC           2u
#define NBD_CMD_FLUSH          3u
#define NBD_CMD_TRIM           4u
#define NBD_CMD_CACHE          5u
#define NBD_CMD_WRITE_ZEROES   6u
#define NBD_CMD_BLOCK_STATUS   7u
#define NBD_CMD_FLAG_FUA       (1u << 0)
#define NBD_CMD_FLAG_NO_HOLE   (1u << 1)
#define NBD_CMD_FLAG_REQ_ONE   (1u << 3)
#define NBD_CMD_FLAG_FAST_ZERO (1u << 4)

/* base:allocation status flags ("The base: metadata namespace"). */
#define NBD_STATE_HOLE (1u << 0)
#define NBD_STATE_ZERO (1u << 1)

/* Structured replies. */
#define NBD_REPLY_FLAG_DONE         (1u << 0)
#define NBD_REPLY_TYPE_NONE         0u
#define NBD_REPLY_TYPE_OFFSET_DATA  1u
#define NBD_REPLY_TYPE_BLOCK_STATUS 5u
#define NBD_REPLY_TYPE_ERROR        ((1u << 15) + 1)

/* Error values. */
#define NBD_EPERM     1u
#define NBD_EIO       5u
#define NBD_ENOMEM    12u
#define NBD_EINVAL    22u
#define NBD_ENOSPC    28u
#define NBD_EOVERFLOW 75u
#define NBD_ENOTSUP   95u
#define NBD_ESHUTDOWN 108u

/* Sizes of fixed wire structures. */
#define NBD_REQUEST_SIZE    28u
#define NBD_SIMPLE_SIZE     16u
#define NBD_STRUCTURED_SIZE 20u

#endif
