/* Control protocol and volume-level replace: bad requests, out-of-range slots, refusals (active
 * slot, too small, a second replace), then a replace that completes and persists. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/raid.h"
#include "raidkit/volume.h"

#define MiB (1024ull * 1024ull)

static char dir[64];
static char p0[128], p1[128], p2[128], small[128];

static void mkfile(const char *p, uint64_t size)
{
    int fd = open(p, O_CREAT | O_TRUNC | O_RDWR, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    close(fd);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/rk-ctl.XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(p0, sizeof(p0), "%s/m0", dir);
    snprintf(p1, sizeof(p1), "%s/m1", dir);
    snprintf(p2, sizeof(p2), "%s/m2", dir);
    snprintf(small, sizeof(small), "%s/small", dir);
    mkfile(p0, 9 * MiB);
    mkfile(p1, 9 * MiB);
    mkfile(p2, 9 * MiB);
    mkfile(small, 4 * MiB);
    const char *m[] = {p0, p1};
    struct rk_create_opts o = {.level = RK_LEVEL_RAID1};
    char err[256];
    return rk_volume_create(m, 2, &o, err, sizeof(err));
}

static int teardown(void **state)
{
    (void)state;
    unlink(p0);
    unlink(p1);
    unlink(p2);
    unlink(small);
    rmdir(dir);
    return 0;
}

/* Run one request; the reply must have ok == want_ok and (if given) contain needle. */
static void req(struct rk_volume *v, const char *line, bool want_ok, const char *needle)
{
    char *r = rk_control_handle(v, line);
    assert_non_null(r);
    bool ok = strstr(r, "\"ok\":true") != NULL;
    if (ok != want_ok || (needle && !strstr(r, needle)))
        fail_msg("request %s: reply %s (want ok=%d, '%s')", line, r, want_ok, needle ? needle : "");
    free(r);
}

static void test_control_requests(void **state)
{
    (void)state;
    const char *m[] = {p1, p0};
    struct rk_volume *v;
    char err[256], line[512];
    assert_int_equal(rk_volume_open(m, 2, NULL, &v, err, sizeof(err)), 0);
    req(v, "not json", false, "not a JSON object");
    req(v, "[1,2]", false, "not a JSON object");
    req(v, "{}", false, "no \\\"cmd\\\"");
    req(v, "{\"cmd\":\"frobnicate\"}", false, "unknown command");
    req(v, "{\"cmd\":\"fail\"}", false, "needs");
    req(v, "{\"cmd\":\"fail\",\"slot\":-1}", false, "needs");
    req(v, "{\"cmd\":\"fail\",\"slot\":2}", false, "out of range");
    req(v, "{\"cmd\":\"fail\",\"slot\":1.5}", false, "needs");
    req(v, "{\"cmd\":\"scrub\",\"repair\":\"yes\"}", false, "repair");
    req(v, "{\"cmd\":\"status\"}", true, "\"job\":{\"kind\":\"none\"");
    snprintf(line, sizeof(line), "{\"cmd\":\"replace\",\"slot\":1,\"with\":\"%s\"}", p2);
    req(v, line, false, "is active");
    req(v, "{\"cmd\":\"replace\",\"slot\":1,\"with\":\"m2\"}", false, "absolute");
    req(v, "{\"cmd\":\"fail\",\"slot\":1}", true, NULL);
    req(v, "{\"cmd\":\"fail\",\"slot\":1}", false, "already failed");
    req(v, "{\"cmd\":\"fail\",\"slot\":0}", false, "would lose data");
    snprintf(line, sizeof(line), "{\"cmd\":\"replace\",\"slot\":1,\"with\":\"%s\"}", small);
    req(v, line, false, "too small");
    snprintf(line, sizeof(line), "{\"cmd\":\"replace\",\"slot\":1,\"with\":\"%s\"}", p0);
    req(v, line, false, "already");
    snprintf(line, sizeof(line), "{\"cmd\":\"replace\",\"slot\":1,\"with\":\"%s/nope\"}", dir);
    req(v, line, false, "cannot open");
    /* A slow replace, and a second one while it runs. */
    snprintf(line, sizeof(line),
             "{\"cmd\":\"replace\",\"slot\":1,\"with\":\"%s\",\"rate\":4194304}", p2);
    req(v, line, true, NULL);
    req(v, line, false, "is running");
    req(v, "{\"cmd\":\"scrub\"}", false, "rebuild is running");
    req(v, "{\"cmd\":\"status\"}", true, "\"kind\":\"rebuild\"");
    assert_int_equal(rk_raid_job_wait(rk_volume_raid(v)), 0);
    req(v, "{\"cmd\":\"status\"}", true, "\"degraded\":false");
    req(v, "{\"cmd\":\"scrub\"}", true, NULL);
    assert_int_equal(rk_raid_job_wait(rk_volume_raid(v)), 0);
    req(v, "{\"cmd\":\"status\"}", true, "\"last_scrub\":{\"mismatches\":0");
    assert_int_equal(rk_volume_close(v), 0);
    /* Persisted: the new member is active; the old one is not part of the array any more. */
    const char *m2[] = {p0, p2, p1};
    assert_int_equal(rk_volume_open(m2, 3, NULL, &v, err, sizeof(err)), 0);
    assert_int_equal(rk_raid_slot_state(rk_volume_raid(v), 1), RK_SLOT_ACTIVE);
    assert_string_equal(rk_volume_member_path(v, 1), p2);
    assert_int_equal(rk_volume_close(v), 0);
}

static void test_control_socket(void **state)
{
    (void)state;
    const char *m[] = {p0, p2};
    struct rk_volume *v;
    struct rk_control *c;
    char err[256], sock[128];
    snprintf(sock, sizeof(sock), "%s/ctl", dir);
    assert_int_equal(rk_volume_open(m, 2, NULL, &v, err, sizeof(err)), 0);
    assert_int_equal(rk_control_start(sock, v, &c, err, sizeof(err)), 0);
    /* A file that is not a socket is refused. */
    struct rk_control *c2;
    assert_int_equal(rk_control_start(p1, v, &c2, err, sizeof(err)), -EEXIST);
    rk_control_stop(c);
    assert_int_equal(access(sock, F_OK), -1);
    assert_int_equal(rk_volume_close(v), 0);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_control_requests),
        cmocka_unit_test(test_control_socket),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
