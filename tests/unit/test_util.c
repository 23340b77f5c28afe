/* Unit tests of the shared helpers: the K/M/G/T size parser, the checked integer parser, crc32c
 * (ISA-L) against the standard check value, and the byte-order helpers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/util.h"

static void test_parse_size(void **state)
{
    static const struct {
        const char *s;
        uint64_t v;
    } good[] = {
        {"0", 0},
        {"512", 512},
        {"4K", 4096},
        {"4k", 4096},
        {"64KiB", 65536},
        {"1M", 1048576},
        {"2G", 2ull << 30},
        {"3T", 3ull << 40},
        {"100B", 100},
        {"8MB", 8u << 20},
        {"16777215T", 16777215ull << 40},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        uint64_t v = 1;
        assert_int_equal(rk_parse_size(good[i].s, &v), 0);
        assert_true(v == good[i].v);
    }
    static const char *const bad[] = {
        "",          "K",   "12Q", "-1", "1.5G", " 1", "1 ", "4KX", "18446744073709551616",
        "16777216T", "1iB", NULL};
    for (int i = 0; bad[i]; i++) {
        uint64_t v = 7;
        assert_int_equal(rk_parse_size(bad[i], &v), -EINVAL);
        assert_true(v == 7); /* untouched on error */
    }
    assert_int_equal(rk_parse_size(NULL, &(uint64_t){0}), -EINVAL);
}

static void test_parse_u64(void **state)
{
    uint64_t v = 0;
    assert_int_equal(rk_parse_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(rk_parse_u64("18446744073709551616", &v), -EINVAL);
    assert_int_equal(rk_parse_u64("12K", &v), -EINVAL);
    assert_int_equal(rk_parse_u64("", &v), -EINVAL);
    assert_int_equal(rk_parse_u64("42", &v), 0);
    assert_true(v == 42);
}

static void test_crc32c(void **state)
{
    /* The standard crc32c check value (RFC 3720 / iSCSI). */
    assert_true(rk_crc32c("123456789", 9) == 0xE3069283u);
    assert_true(rk_crc32c("", 0) == 0);
}

static void test_byte_order(void **state)
{
    uint8_t b[8];
    rk_put_le64(b, 0x0102030405060708ull);
    assert_int_equal(b[0], 0x08);
    assert_true(rk_get_le64(b) == 0x0102030405060708ull);
    rk_put_be64(b, 0x0102030405060708ull);
    assert_int_equal(b[0], 0x01);
    assert_true(rk_get_be64(b) == 0x0102030405060708ull);
    rk_put_le32(b, 0xdeadbeef);
    assert_true(rk_get_le32(b) == 0xdeadbeef);
    rk_put_be32(b, 0xdeadbeef);
    assert_true(rk_get_be32(b) == 0xdeadbeef);
    rk_put_be16(b, 0x1234);
    assert_int_equal(rk_get_be16(b), 0x1234);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_u64),
        cmocka_unit_test(test_crc32c),
        cmocka_unit_test(test_byte_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
