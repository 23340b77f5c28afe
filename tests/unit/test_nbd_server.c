/* Unit tests of the NBD server API: create errors, stop before and during run (with an idle
 * client and with requests in flight), and a raw in-process client doing GO, WRITE and READ. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/util.h"
#include "nbd/proto.h"
#include "raidkit/device.h"
#include "raidkit/nbd.h"

struct tn_env {
    char dir[64];
    char path[96];
    char listen[104];
    struct rk_dev *dev;
};

static int tn_setup(void **state)
{
    struct tn_env *e = calloc(1, sizeof(*e));
    snprintf(e->dir, sizeof(e->dir), "/tmp/rk-nbdunit.XXXXXX");
    if (!mkdtemp(e->dir))
        return -1;
    snprintf(e->path, sizeof(e->path), "%s/sock", e->dir);
    snprintf(e->listen, sizeof(e->listen), "unix:%s", e->path);
    if (rk_mem_open(16 << 20, 512, &e->dev))
        return -1;
    *state = e;
    return 0;
}

static int tn_teardown(void **state)
{
    struct tn_env *e = *state;
    rk_dev_close(e->dev);
    unlink(e->path);
    rmdir(e->dir);
    free(e);
    return 0;
}

static void *tn_run(void *arg)
{
    return (void *)(intptr_t)rk_nbd_server_run(arg);
}

static void tn_recv(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len) {
        ssize_t n = recv(fd, p, len, 0);
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

static void tn_send(int fd, const void *buf, size_t len)
{
    assert_int_equal(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

/* Connect, do the fixed newstyle handshake with OPT_GO on the default export. */
static int tn_connect_go(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    uint8_t g[18];
    tn_recv(fd, g, sizeof(g));
    assert_true(rk_get_be64(g) == NBD_MAGIC && rk_get_be64(g + 8) == NBD_IHAVEOPT);
    assert_int_equal(rk_get_be16(g + 16), NBD_FLAG_FIXED_NEWSTYLE | NBD_FLAG_NO_ZEROES);
    uint8_t o[16 + 6];
    uint8_t cf[4];
    rk_put_be32(cf, NBD_FLAG_C_FIXED_NEWSTYLE | NBD_FLAG_C_NO_ZEROES);
    tn_send(fd, cf, 4);
    rk_put_be64(o, NBD_IHAVEOPT);
    rk_put_be32(o + 8, NBD_OPT_GO);
    rk_put_be32(o + 12, 6);
    rk_put_be32(o + 16, 0); /* empty name */
    rk_put_be16(o + 20, 0); /* no info requests */
    tn_send(fd, o, sizeof(o));
    for (;;) {
        uint8_t rh[20];
        tn_recv(fd, rh, sizeof(rh));
        assert_true(rk_get_be64(rh) == NBD_REP_MAGIC);
        uint32_t type = rk_get_be32(rh + 12), len = rk_get_be32(rh + 16);
        uint8_t data[64];
        assert_true(len <= sizeof(data));
        tn_recv(fd, data, len);
        if (type == NBD_REP_ACK)
            break;
        assert_int_equal(type, NBD_REP_INFO);
        if (rk_get_be16(data) == NBD_INFO_EXPORT)
            assert_true(rk_get_be64(data + 2) == 16 << 20);
        if (rk_get_be16(data) == NBD_INFO_BLOCK_SIZE) {
            assert_int_equal(rk_get_be32(data + 2), 512);
            assert_int_equal(rk_get_be32(data + 6), 4096);
            assert_int_equal(rk_get_be32(data + 10), 1 << 20);
        }
    }
    return fd;
}

static void tn_request(int fd, uint16_t type, uint64_t handle, uint64_t off, uint32_t len)
{
    uint8_t h[28];
    rk_put_be32(h, NBD_REQUEST_MAGIC);
    rk_put_be16(h + 4, 0);
    rk_put_be16(h + 6, type);
    rk_put_be64(h + 8, handle);
    rk_put_be64(h + 16, off);
    rk_put_be32(h + 24, len);
    tn_send(fd, h, sizeof(h));
}

static uint32_t tn_simple_reply(int fd, uint64_t *handle)
{
    uint8_t r[16];
    tn_recv(fd, r, sizeof(r));
    assert_int_equal(rk_get_be32(r), NBD_SIMPLE_MAGIC);
    *handle = rk_get_be64(r + 8);
    return rk_get_be32(r + 4);
}

static void test_create_errors(void **state)
{
    struct tn_env *e = *state;
    struct rk_nbd_server *srv = NULL;
    char err[256] = "";
    struct rk_nbd_opts o = {.listen = e->listen};

    FILE *f = fopen(e->path, "w"); /* a regular file where the socket should go */
    assert_non_null(f);
    fclose(f);
    assert_int_equal(rk_nbd_server_create(e->dev, &o, &srv, err, sizeof(err)), -EEXIST);
    assert_true(strlen(err) > 0);
    unlink(e->path);

    o.listen = "tcp:127.0.0.1:notaport";
    assert_int_equal(rk_nbd_server_create(e->dev, &o, &srv, err, sizeof(err)), -EINVAL);
    o.listen = "tcp:70000";
    assert_int_equal(rk_nbd_server_create(e->dev, &o, &srv, err, sizeof(err)), -EINVAL);
    o.listen = e->listen;
    o.max_request = 256; /* below the 512-byte block size */
    assert_int_equal(rk_nbd_server_create(e->dev, &o, &srv, err, sizeof(err)), -EINVAL);
    assert_int_equal(rk_nbd_server_create(e->dev, NULL, &srv, err, sizeof(err)), -EINVAL);
    rk_nbd_server_destroy(NULL);
}

static void test_stop_before_run(void **state)
{
    struct tn_env *e = *state;
    struct rk_nbd_server *srv = NULL;
    char err[256];
    struct rk_nbd_opts o = {.listen = e->listen, .threads = 2};
    assert_int_equal(rk_nbd_server_create(e->dev, &o, &srv, err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(stat(e->path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    rk_nbd_server_stop(srv);
    assert_int_equal(rk_nbd_server_run(srv), 0);
    rk_nbd_server_destroy(srv);
    assert_int_equal(stat(e->path, &st), -1); /* socket file removed */
}

static void test_io_and_stop_with_clients(void **state)
{
    struct tn_env *e = *state;
    struct rk_nbd_server *srv = NULL;
    char err[256];
    struct rk_nbd_opts o = {.listen = e->path, .threads = 4, .max_request = 1 << 20};
    assert_int_equal(rk_nbd_server_create(e->dev, &o, &srv, err, sizeof(err)), 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, tn_run, srv), 0);

    int fd = tn_connect_go(e->path);
    static uint8_t buf[65536], back[65536];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 31 + 7);
    /* 16 pipelined writes, replies in any order. */
    for (int i = 0; i < 16; i++) {
        tn_request(fd, NBD_CMD_WRITE, 100 + i, (uint64_t)i * 65536, 65536);
        tn_send(fd, buf, sizeof(buf));
    }
    uint32_t seen = 0;
    for (int i = 0; i < 16; i++) {
        uint64_t h;
        assert_int_equal(tn_simple_reply(fd, &h), 0);
        assert_true(h >= 100 && h < 116);
        seen |= 1u << (h - 100);
    }
    assert_int_equal(seen, 0xffff);
    tn_request(fd, NBD_CMD_READ, 7, 5 * 65536, 65536);
    uint64_t h;
    assert_int_equal(tn_simple_reply(fd, &h), 0);
    assert_true(h == 7);
    tn_recv(fd, back, sizeof(back));
    assert_memory_equal(buf, back, sizeof(buf));
    assert_int_equal(rk_dev_read(e->dev, back, 65536, 15 * 65536), 0);
    assert_memory_equal(buf, back, sizeof(buf));

    /* A second client idle in the handshake, a third with requests still arriving: stop must
     * end both and return 0. */
    int idle = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e->path);
    assert_int_equal(connect(idle, (struct sockaddr *)&sa, sizeof(sa)), 0);
    for (int i = 0; i < 8; i++) {
        tn_request(fd, NBD_CMD_WRITE, 200 + i, (uint64_t)i * 65536, 65536);
        tn_send(fd, buf, sizeof(buf));
    }
    rk_nbd_server_stop(srv);
    void *ret;
    assert_int_equal(pthread_join(th, &ret), 0);
    assert_int_equal((int)(intptr_t)ret, 0);
    /* Every request the server read was answered before the close; then EOF. */
    uint8_t r[16];
    ssize_t n;
    int replies = 0;
    while ((n = recv(fd, r, sizeof(r), MSG_WAITALL)) == (ssize_t)sizeof(r)) {
        assert_int_equal(rk_get_be32(r), NBD_SIMPLE_MAGIC);
        replies++;
    }
    assert_int_equal(n, 0);
    assert_true(replies <= 8);
    close(fd);
    close(idle);
    rk_nbd_server_destroy(srv);
}

int main(void)
{
    rk_log_set_level(RK_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_errors, tn_setup, tn_teardown),
        cmocka_unit_test_setup_teardown(test_stop_before_run, tn_setup, tn_teardown),
        cmocka_unit_test_setup_teardown(test_io_and_stop_with_clients, tn_setup, tn_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
