/* rk_dev_map / rk_dev_zero_fast (core/device_map.c) and the file member's map (SEEK_DATA /
 * SEEK_HOLE): a device without map reports data; a sparse file reports its holes, clipped to
 * the request; bad ranges are -EINVAL. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raidkit/member.h"

static void test_no_map_is_data(void **state)
{
    struct rk_dev *d;
    assert_int_equal(rk_mem_open(1 << 20, 512, &d), 0);
    uint64_t e = 0;
    bool h = true;
    assert_int_equal(rk_dev_map(d, 4096, 8192, &e, &h), 0);
    assert_int_equal(e, 8192);
    assert_false(h);
    assert_int_equal(rk_dev_map(d, 0, 0, &e, &h), -EINVAL);
    assert_int_equal(rk_dev_map(d, (1 << 20) - 512, 1024, &e, &h), -EINVAL);
    assert_int_equal(rk_dev_map(d, 1, 512, &e, &h), -EINVAL);
    assert_false(rk_dev_zero_fast(d));
    rk_dev_close(d);
}

static void test_file_holes(void **state)
{
    char path[] = "/dev/shm/rk-map-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4 << 20), 0);
    char buf[65536];
    memset(buf, 0x5a, sizeof(buf));
    assert_int_equal(pwrite(fd, buf, sizeof(buf), 1 << 20), (ssize_t)sizeof(buf));
    close(fd);
    struct rk_dev *d;
    assert_int_equal(rk_file_open(path, RK_FILE_BUFFERED | RK_FILE_NO_URING, &d), 0);
    uint64_t e;
    bool h;
    assert_int_equal(rk_dev_map(d, 0, 4 << 20, &e, &h), 0);
    assert_true(h);
    assert_int_equal(e, 1 << 20);
    assert_int_equal(rk_dev_map(d, 1 << 20, 4 << 20 >> 1, &e, &h), 0);
    assert_false(h);
    assert_int_equal(e, 65536);
    assert_int_equal(rk_dev_map(d, (1 << 20) + 4096, 4096, &e, &h), 0); /* clipped to len */
    assert_false(h);
    assert_int_equal(e, 4096);
    assert_int_equal(rk_dev_map(d, (1 << 20) + 65536, (3 << 20) - 65536, &e, &h), 0);
    assert_true(h);
    assert_int_equal(e, (3 << 20) - 65536); /* to the end of the file */
    assert_true(rk_dev_zero_fast(d));
    rk_dev_close(d);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_map_is_data),
        cmocka_unit_test(test_file_holes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
