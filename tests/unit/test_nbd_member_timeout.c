/* The nbd member's request timeout (src/member/nbd.c) against a raidkit NBD server in a child
 * process: requests the server answers at once never time out, even when a completion thread
 * reads the clock and only looks at its in-flight list later (preempted in between), so that a
 * request queued meanwhile started after that reading. Such a request is younger than the
 * reading, not 2^64 ns old. The test makes that gap certain: clock_gettime is replaced in this
 * program, and a CLOCK_MONOTONIC reading in any thread but the test's own returns the time and
 * then sleeps LAG_MS, as a preempted thread would. And a request the stopped server never
 * answers still times out. Skipped (77) when raidkit has no libnbd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "raidkit/device.h"
#include "raidkit/member_nbd.h"
#include "raidkit/nbd.h"

#define LAG_MS    20 /* how long a lagged thread's clock reading goes stale */
#define SUBMIT_MS 5  /* the test thread waits this long between requests (inside the gap) */
#define ROUNDS    12 /* write + read pairs per connection count */

static atomic_bool lag_on;
static pthread_t lag_exempt; /* the test's own thread: its readings are never lagged */

/* Every clock_gettime of this program (raidkit's static library included) comes here. */
int clock_gettime(clockid_t clk, struct timespec *ts)
{
    int r = (int)syscall(SYS_clock_gettime, clk, ts);
    if (r == 0 && clk == CLOCK_MONOTONIC && atomic_load(&lag_on) &&
        !pthread_equal(pthread_self(), lag_exempt)) {
        struct timespec d = {.tv_nsec = LAG_MS * 1000000L};
        while (nanosleep(&d, &d) && errno == EINTR) {
        }
    }
    return r;
}

struct tm_env {
    char dir[64];
    char sock[96];
    pid_t server;
};

/* Child: serve a 16 MiB memory device on unix:sock until killed; ready is written once the
 * socket listens. Never returns. */
static void tm_serve(const char *sock, int ready)
{
    struct rk_dev *dev = NULL;
    struct rk_nbd_server *srv = NULL;
    char listen[128], err[256];
    snprintf(listen, sizeof(listen), "unix:%s", sock);
    struct rk_nbd_opts o = {.listen = listen, .threads = 4};
    if (rk_mem_open(16 << 20, 512, &dev) || rk_nbd_server_create(dev, &o, &srv, err, sizeof(err)))
        _exit(1);
    char c = 1;
    if (write(ready, &c, 1) != 1)
        _exit(1);
    rk_nbd_server_run(srv);
    _exit(0);
}

static int tm_setup(void **state)
{
    struct tm_env *e = calloc(1, sizeof(*e));
    int pp[2];
    snprintf(e->dir, sizeof(e->dir), "/tmp/rk-nbdto.XXXXXX");
    if (!mkdtemp(e->dir) || pipe(pp))
        return -1;
    snprintf(e->sock, sizeof(e->sock), "%s/sock", e->dir);
    e->server = fork();
    if (e->server == 0) {
        close(pp[0]);
        tm_serve(e->sock, pp[1]);
    }
    close(pp[1]);
    char c;
    bool up = e->server > 0 && read(pp[0], &c, 1) == 1;
    close(pp[0]);
    *state = e;
    return up ? 0 : -1;
}

static int tm_teardown(void **state)
{
    struct tm_env *e = *state;
    atomic_store(&lag_on, false);
    if (e->server > 0) {
        kill(e->server, SIGKILL);
        waitpid(e->server, NULL, 0);
    }
    unlink(e->sock);
    rmdir(e->dir);
    free(e);
    return 0;
}

/* ROUNDS write + read pairs on a member of `connections` connections, every completion
 * thread's clock lagged: all succeed and the member stays connected. */
static void tm_run(struct tm_env *e, unsigned connections)
{
    char uri[256];
    snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s&connections=%u&timeout-ms=30000", e->sock,
             connections);
    struct rk_dev *dev = NULL;
    assert_int_equal(rk_nbd_open(uri, 0, &dev), 0);
    static uint8_t buf[4096], back[4096];
    lag_exempt = pthread_self();
    atomic_store(&lag_on, true);
    int bad = 0;
    for (int i = 0; i < ROUNDS && !bad; i++) {
        memset(buf, 'a' + i, sizeof(buf));
        struct timespec d = {.tv_nsec = SUBMIT_MS * 1000000L};
        nanosleep(&d, NULL);
        bad = rk_dev_write(dev, buf, sizeof(buf), (uint64_t)i * sizeof(buf), 0);
        nanosleep(&d, NULL);
        if (!bad)
            bad = rk_dev_read(dev, back, sizeof(back), (uint64_t)i * sizeof(back));
        if (!bad && memcmp(buf, back, sizeof(buf)))
            bad = -EILSEQ;
        if (bad)
            print_error("round %d (%u connections): %s, member %s\n", i, connections,
                        strerror(-bad), rk_nbd_state(dev));
    }
    atomic_store(&lag_on, false);
    assert_int_equal(bad, 0);
    assert_string_equal(rk_nbd_state(dev), "connected");
    rk_dev_close(dev);
}

static void test_stale_reading_one_connection(void **state)
{
    tm_run(*state, 1);
}

static void test_stale_reading_two_connections(void **state)
{
    tm_run(*state, 2);
}

/* The other side: a request the server never answers (stopped) fails with -ETIMEDOUT after the
 * timeout, not before, and the member is then timed out. */
static void test_unanswered_times_out(void **state)
{
    struct tm_env *e = *state;
    char uri[256];
    snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s&connections=2&timeout-ms=300", e->sock);
    struct rk_dev *dev = NULL;
    assert_int_equal(rk_nbd_open(uri, 0, &dev), 0);
    static uint8_t buf[4096];
    assert_int_equal(rk_dev_read(dev, buf, sizeof(buf), 0), 0);
    assert_int_equal(kill(e->server, SIGSTOP), 0);
    int st = 0; /* stopped for certain: kill only queues the signal */
    assert_int_equal(waitpid(e->server, &st, WUNTRACED), e->server);
    assert_true(WIFSTOPPED(st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(rk_dev_read(dev, buf, sizeof(buf), 0), -ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_true(ms >= 300 && ms < 5000);
    assert_string_equal(rk_nbd_state(dev), "timed-out");
    rk_dev_close(dev);
}

int main(void)
{
    struct rk_dev *dev = NULL;
    if (rk_nbd_open("nbd+unix:///?socket=/nonexistent", 0, &dev) == -EPROTONOSUPPORT) {
        printf("skip: %s\n", rk_nbd_last_error());
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stale_reading_one_connection, tm_setup, tm_teardown),
        cmocka_unit_test_setup_teardown(test_stale_reading_two_connections, tm_setup, tm_teardown),
        cmocka_unit_test_setup_teardown(test_unanswered_times_out, tm_setup, tm_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
