/* Unit tests of the rbd member's front door (src/member/rbd.c), without a Ceph cluster: what is
 * an RBD member path, malformed specs refused with -EINVAL and a one-line reason naming the
 * spec, the dispatch through rk_member_open (its reason also in rk_nbd_last_error), and a
 * missing conf file refused before any connection (or "built without librbd"). The I/O paths
 * run against a real one-node cluster in tests/integration/rbd_*.sh. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raidkit/member_nbd.h"
#include "raidkit/member_rbd.h"

static void test_is_rbd(void **state)
{
    assert_true(rk_member_is_rbd("rbd:rk/img"));
    assert_true(rk_member_is_rbd("rbd:rk/img@/etc/ceph/ceph.conf"));
    assert_false(rk_member_is_rbd("/dev/rbd0"));
    assert_false(rk_member_is_rbd("nbd://host/x"));
    assert_false(rk_member_is_rbd("rbd"));
    assert_false(rk_member_is_rbd(NULL));
    /* Not a local path: create, replace and re-add use the name as given. */
    assert_true(rk_member_is_uri("rbd:rk/img"));
}

static void test_malformed(void **state)
{
    static const char *const bad[] = {"rbd:",         "rbd:rk",      "rbd:/img",     "rbd:rk/",
                                      "rbd:rk/@conf", "rbd:rk/img@", "rbd:rk@x/img", "nbd:rk/img"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct rk_dev *dev = NULL;
        assert_int_equal(rk_rbd_open(bad[i], 0, &dev), -EINVAL);
        assert_null(dev);
        assert_non_null(strstr(rk_rbd_last_error(), bad[i]));
        assert_non_null(strstr(rk_rbd_last_error(), "expected rbd:POOL/IMAGE"));
        assert_null(strchr(rk_rbd_last_error(), '\n'));
    }
}

static void test_dispatch_and_conf(void **state)
{
    struct rk_dev *dev = NULL;
    assert_int_equal(rk_member_open("rbd:rk", 0, &dev), -EINVAL);
    assert_non_null(strstr(rk_nbd_last_error(), "not an RBD member"));
    int r = rk_member_open("rbd:rk/img@/nonexistent/ceph.conf", 0, &dev);
    assert_null(dev);
    if (r == -EPROTONOSUPPORT) {
        assert_non_null(strstr(rk_nbd_last_error(), "built without librbd"));
    } else {
        assert_true(r < 0);
        assert_non_null(strstr(rk_nbd_last_error(), "cannot read the Ceph configuration"));
        assert_non_null(strstr(rk_nbd_last_error(), "/nonexistent/ceph.conf"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_is_rbd),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_dispatch_and_conf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
