/* raidkit's query keys of NBD URI members (src/member/nbd_uri.c): connections= and timeout-ms=
 * are parsed and removed, every other key goes to libnbd in order, bad values are refused
 * with a message naming the key. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "member/nbd_uri.h"
#include "raidkit/member_nbd.h"

static void test_plain_uri(void **state)
{
    (void)state;
    struct rk_nbd_uri_opts o;
    char l[256], err[160] = "";
    assert_int_equal(
        rk_nbd_uri_parse("nbd://127.0.0.1:10809/exp", &o, l, sizeof(l), err, sizeof(err)), 0);
    assert_string_equal(l, "nbd://127.0.0.1:10809/exp");
    assert_int_equal(o.connections, RK_NBD_DEFAULT_CONNECTIONS);
    assert_int_equal(o.timeout_ms, 0);
}

static void test_keys_removed_others_kept(void **state)
{
    (void)state;
    struct rk_nbd_uri_opts o;
    char l[256], err[160] = "";
    assert_int_equal(rk_nbd_uri_parse("nbd+unix:///e?connections=2&socket=/s&timeout-ms=1500&"
                                      "tls-verify-peer=false",
                                      &o, l, sizeof(l), err, sizeof(err)),
                     0);
    assert_string_equal(l, "nbd+unix:///e?socket=/s&tls-verify-peer=false");
    assert_int_equal(o.connections, 2);
    assert_int_equal(o.timeout_ms, 1500);
    assert_int_equal(rk_nbd_uri_parse("nbd://h/?timeout-ms=7", &o, l, sizeof(l), err, sizeof(err)),
                     0);
    assert_string_equal(l, "nbd://h/");
    assert_int_equal(o.timeout_ms, 7);
}

static void test_bad_values(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "nbd://h/?connections=0", "nbd://h/?connections=17",
        "nbd://h/?connections=",  "nbd://h/?timeout-ms=abc",
        "nbd://h/?timeout-ms=-1", "nbd://h/?connections",
        "nbd://h/?timeout-ms=1x", "nbd://h/?connections=1&connections=2",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct rk_nbd_uri_opts o;
        char l[256], err[160] = "";
        assert_int_equal(rk_nbd_uri_parse(bad[i], &o, l, sizeof(l), err, sizeof(err)), -EINVAL);
        assert_true(strstr(err, "connections") || strstr(err, "timeout-ms"));
    }
}

static void test_too_long(void **state)
{
    (void)state;
    struct rk_nbd_uri_opts o;
    char l[8], err[160] = "";
    assert_int_equal(rk_nbd_uri_parse("nbd://example.com/x", &o, l, sizeof(l), err, sizeof(err)),
                     -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_uri),
        cmocka_unit_test(test_keys_removed_others_kept),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
