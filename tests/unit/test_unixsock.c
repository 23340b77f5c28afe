/* Unit tests of rk_unix_listen (core/unixsock.h): the socket appears with its final mode under
 * umask 000 and no private directory is left; a live socket is refused with "in use", a stale one
 * replaced, a regular file refused; too long a path is refused; the long-path fallback (umask)
 * still gives the mode; the mode/user/group parsers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/unixsock.h"

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/rk-unixsock-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int only_entry_is(const char *name)
{
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "test \"$(ls -A %s)\" = %s", dir, name);
    return system(cmd) == 0;
}

static void test_mode_and_takeover(void **state)
{
    char path[128], err[256];
    snprintf(path, sizeof(path), "%s/s", dir);
    mode_t old = umask(0);
    struct rk_unix_perm p = {.mode = 0640, .uid = (uid_t)-1, .gid = (gid_t)-1};
    int fd = -1, fd2 = -1;
    assert_int_equal(rk_unix_listen(path, &p, 4, "test socket", &fd, err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0640);
    assert_true(only_entry_is("s"));
    /* Live: refused, the socket stays. */
    assert_int_equal(rk_unix_listen(path, NULL, 4, "test socket", &fd2, err, sizeof(err)),
                     -EADDRINUSE);
    assert_non_null(strstr(err, "is in use by a running server"));
    assert_int_equal(lstat(path, &st), 0);
    /* Stale (nobody accepts any more): replaced, with the default 0600. */
    close(fd);
    assert_int_equal(rk_unix_listen(path, NULL, 4, "test socket", &fd2, err, sizeof(err)), 0);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    close(fd2);
    unlink(path);
    /* A regular file is never replaced. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(rk_unix_listen(path, NULL, 4, "test socket", &fd2, err, sizeof(err)), -EEXIST);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    unlink(path);
    umask(old);
}

static void test_long_paths(void **state)
{
    char path[256], err[256];
    int fd = -1;
    /* A directory so long that its private bind directory's name does not fit sun_path while
     * DIR/s does: the umask fallback. */
    char sub[128];
    int n = snprintf(sub, sizeof(sub), "%s/", dir);
    memset(sub + n, 'd', 94 - n);
    sub[94] = '\0';
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(path, sizeof(path), "%s/s", sub);
    mode_t old = umask(0);
    struct rk_unix_perm p = {.mode = 0600, .uid = (uid_t)-1, .gid = (gid_t)-1};
    assert_int_equal(rk_unix_listen(path, &p, 4, "test socket", &fd, err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    close(fd);
    unlink(path);
    p.gid = getgid();
    assert_int_equal(rk_unix_listen(path, &p, 4, "test socket", &fd, err, sizeof(err)),
                     -ENAMETOOLONG);
    memset(path, 'y', 150);
    path[150] = '\0';
    assert_int_equal(rk_unix_listen(path, NULL, 4, "test socket", &fd, err, sizeof(err)), -EINVAL);
    umask(old);
}

static void test_parsers(void **state)
{
    mode_t m;
    uid_t u;
    gid_t g;
    assert_int_equal(rk_unix_parse_mode("660", &m), 0);
    assert_int_equal(m, 0660);
    assert_int_equal(rk_unix_parse_mode("0600", &m), 0);
    assert_int_equal(m, 0600);
    assert_int_equal(rk_unix_parse_mode("0999", &m), -EINVAL);
    assert_int_equal(rk_unix_parse_mode("1777", &m), -EINVAL);
    assert_int_equal(rk_unix_parse_mode("", &m), -EINVAL);
    assert_int_equal(rk_unix_parse_user("root", &u), 0);
    assert_int_equal(u, 0);
    assert_int_equal(rk_unix_parse_user("1234", &u), 0);
    assert_int_equal(u, 1234);
    assert_int_equal(rk_unix_parse_user("no-such-user-rk", &u), -EINVAL);
    assert_int_equal(rk_unix_parse_group("0", &g), 0);
    assert_int_equal(rk_unix_parse_group("no-such-group-rk", &g), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_mode_and_takeover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_paths, setup, teardown),
        cmocka_unit_test(test_parsers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
