/* TLS for the NBD server with GnuTLS (tls.h): credentials, the per-connection upgrade, the
 * option checks of `serve --tls*`, and the warning for exposed plaintext TCP. */
#include "nbd/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "nbd/wire.h"

#ifdef RAIDKIT_HAVE_GNUTLS
#include <gnutls/gnutls.h>
#endif

#define TLS_PSK_MAX    256 /* identities in a PSK file */
#define TLS_PSK_ID_MAX 256 /* bytes of one identity */
#define TLS_PSK_KEYMAX 64  /* bytes of one key (psktool's default is 32) */
#define TLS_PRIO                                                                                   \
    "NORMAL:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM:+AES-256-CCM"

struct tls_psk {
    char id[TLS_PSK_ID_MAX + 1];
    uint8_t key[TLS_PSK_KEYMAX];
    size_t keylen;
};

struct nbd_tls {
#ifdef RAIDKIT_HAVE_GNUTLS
    gnutls_certificate_credentials_t x509;
    gnutls_psk_server_credentials_t psk;
    gnutls_priority_t prio;
#endif
    struct tls_psk *keys;
    int nkeys;
};

static int tls_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Parse one "identity:hexkey" line into k. 0, or -EINVAL with the reason in why. */
static int tls_psk_line(char *line, struct tls_psk *k, const char **why)
{
    char *colon = strchr(line, ':');
    if (!colon || colon == line) {
        *why = "not identity:hexkey";
        return -EINVAL;
    }
    size_t il = (size_t)(colon - line), hl = strlen(colon + 1);
    if (il > TLS_PSK_ID_MAX || hl == 0 || hl % 2 || hl / 2 > TLS_PSK_KEYMAX) {
        *why = "identity longer than 256 bytes, or key not 1..64 bytes of hex";
        return -EINVAL;
    }
    memcpy(k->id, line, il);
    k->id[il] = '\0';
    for (size_t i = 0; i < hl / 2; i++) {
        int a = tls_hex(colon[1 + 2 * i]), b = tls_hex(colon[2 + 2 * i]);
        if (a < 0 || b < 0) {
            *why = "key is not hexadecimal";
            return -EINVAL;
        }
        k->key[i] = (uint8_t)(a << 4 | b);
    }
    k->keylen = hl / 2;
    return 0;
}

/* Load a psktool file (identity:hexkey lines, at least one) into t. 0 or -errno with err. */
static int tls_psk_load(struct nbd_tls *t, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        int e = errno;
        rk_set_err(err, errlen, "--tls-psk %s: %s", path, strerror(e));
        return -e;
    }
    t->keys = calloc(TLS_PSK_MAX, sizeof(*t->keys));
    char line[1024];
    int r = t->keys ? 0 : -ENOMEM, lineno = 0;
    while (!r && fgets(line, sizeof(line), f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        const char *why = "";
        if (t->nkeys >= TLS_PSK_MAX) {
            why = "more than 256 identities";
            r = -EINVAL;
        } else {
            r = tls_psk_line(line, &t->keys[t->nkeys], &why);
        }
        if (r)
            rk_set_err(err, errlen, "--tls-psk %s line %d: %s", path, lineno, why);
        else
            t->nkeys++;
    }
    fclose(f);
    if (!r && t->nkeys == 0) {
        rk_set_err(err, errlen, "--tls-psk %s: no identity:hexkey line", path);
        r = -EINVAL;
    }
    return r;
}

#ifdef RAIDKIT_HAVE_GNUTLS
/* GnuTLS asks for the key of username; the table hangs off the session pointer. */
static int tls_psk_lookup(gnutls_session_t s, const char *username, gnutls_datum_t *key)
{
    const struct nbd_tls *t = gnutls_session_get_ptr(s);
    for (int i = 0; t && i < t->nkeys; i++) {
        if (strcmp(t->keys[i].id, username))
            continue;
        key->data = gnutls_malloc(t->keys[i].keylen);
        if (!key->data)
            return -1;
        memcpy(key->data, t->keys[i].key, t->keys[i].keylen);
        key->size = (unsigned)t->keys[i].keylen;
        return 0;
    }
    rk_warn("nbd: TLS PSK identity '%.64s' unknown", username);
    return -1;
}

/* X.509 in nbdkit's layout: DIR/server-cert.pem + DIR/server-key.pem, DIR/ca-cert.pem when
 * present (trust for clients that present certificates). */
static int tls_x509_load(struct nbd_tls *t, const char *dir, char *err, size_t errlen)
{
    char cert[4096], key[4096], ca[4096];
    snprintf(cert, sizeof(cert), "%s/server-cert.pem", dir);
    snprintf(key, sizeof(key), "%s/server-key.pem", dir);
    snprintf(ca, sizeof(ca), "%s/ca-cert.pem", dir);
    const char *need[2] = {cert, key};
    for (int i = 0; i < 2; i++)
        if (access(need[i], R_OK)) {
            int e = errno;
            rk_set_err(err, errlen, "--tls-certificates %s: %s: %s", dir, need[i], strerror(e));
            return -e;
        }
    if (gnutls_certificate_allocate_credentials(&t->x509))
        return -ENOMEM;
    if (access(ca, R_OK) == 0 &&
        gnutls_certificate_set_x509_trust_file(t->x509, ca, GNUTLS_X509_FMT_PEM) < 0) {
        rk_set_err(err, errlen, "--tls-certificates %s: %s is not a PEM certificate", dir, ca);
        return -EINVAL;
    }
    int g = gnutls_certificate_set_x509_key_file(t->x509, cert, key, GNUTLS_X509_FMT_PEM);
    if (g < 0) {
        rk_set_err(err, errlen, "--tls-certificates %s: server-cert.pem/server-key.pem: %s", dir,
                   gnutls_strerror(g));
        return -EINVAL;
    }
    return 0;
}
#endif

/* The option combinations: 0 or -EINVAL with err. */
static int tls_check_opts(const struct rk_nbd_opts *o, char *err, size_t errlen)
{
    bool any = o->tls_certificates || o->tls_psk;
    if (o->tls == RK_NBD_TLS_OFF && any) {
        rk_set_err(err, errlen,
                   "--tls-certificates/--tls-psk given but --tls is off (use --tls "
                   "on or --tls require)");
        return -EINVAL;
    }
    if (o->tls != RK_NBD_TLS_OFF && !any) {
        rk_set_err(err, errlen, "--tls on/require needs --tls-certificates DIR or --tls-psk FILE");
        return -EINVAL;
    }
    if (o->tls_certificates && o->tls_psk) {
        rk_set_err(err, errlen, "--tls-certificates and --tls-psk exclude each other");
        return -EINVAL;
    }
    return 0;
}

int nbd_tls_create(const struct rk_nbd_opts *o, struct nbd_tls **out, char *err, size_t errlen)
{
    *out = NULL;
    int r = tls_check_opts(o, err, errlen);
    if (r || o->tls == RK_NBD_TLS_OFF)
        return r;
#ifndef RAIDKIT_HAVE_GNUTLS
    rk_set_err(err, errlen, "--tls: this raidkit was built without GnuTLS (libgnutls28-dev)");
    return -ENOTSUP;
#else
    struct nbd_tls *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    /* GnuTLS's NORMAL set, with AES-128-GCM first: the cheapest AEAD with AES-NI; NBD moves
     * bulk data and the cipher is most of TLS's CPU per byte (bench/RESULTS.md "TLS"). */
    const char *prio = TLS_PRIO;
    if (o->tls_psk) {
        prio = TLS_PRIO ":+ECDHE-PSK:+DHE-PSK:+PSK";
        r = tls_psk_load(t, o->tls_psk, err, errlen);
        if (!r && gnutls_psk_allocate_server_credentials(&t->psk))
            r = -ENOMEM;
        if (!r)
            gnutls_psk_set_server_credentials_function(t->psk, tls_psk_lookup);
    } else {
        r = tls_x509_load(t, o->tls_certificates, err, errlen);
    }
    if (!r && gnutls_priority_init(&t->prio, prio, NULL) < 0) {
        rk_set_err(err, errlen, "--tls: GnuTLS priority '%s' refused", prio);
        r = -EINVAL;
    }
    if (r) {
        nbd_tls_free(t);
        return r;
    }
    *out = t;
    return 0;
#endif
}

void nbd_tls_free(struct nbd_tls *t)
{
    if (!t)
        return;
#ifdef RAIDKIT_HAVE_GNUTLS
    if (t->x509)
        gnutls_certificate_free_credentials(t->x509);
    if (t->psk)
        gnutls_psk_free_server_credentials(t->psk);
    if (t->prio)
        gnutls_priority_deinit(t->prio);
#endif
    if (t->keys)
        explicit_bzero(t->keys, TLS_PSK_MAX * sizeof(*t->keys));
    free(t->keys);
    free(t);
}

int nbd_tls_start(struct nbd_tls *t, int fd, unsigned timeout_ms)
{
#ifndef RAIDKIT_HAVE_GNUTLS
    (void)t, (void)fd, (void)timeout_ms;
    return -ENOTSUP;
#else
    gnutls_session_t s;
    if (gnutls_init(&s, GNUTLS_SERVER))
        return -ENOMEM;
    gnutls_session_set_ptr(s, t);
    int g = gnutls_priority_set(s, t->prio);
    if (!g)
        g = t->psk ? gnutls_credentials_set(s, GNUTLS_CRD_PSK, t->psk)
                   : gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, t->x509);
    if (g) {
        gnutls_deinit(s);
        return -ENOMEM;
    }
    if (t->x509)
        gnutls_certificate_server_set_request(s, GNUTLS_CERT_IGNORE);
    gnutls_transport_set_int(s, fd);
    gnutls_handshake_set_timeout(s, timeout_ms);
    do
        g = gnutls_handshake(s);
    while (g < 0 && !gnutls_error_is_fatal(g));
    if (g < 0) {
        rk_debug("nbd: TLS handshake failed: %s", gnutls_strerror(g));
        gnutls_deinit(s);
        return g == GNUTLS_E_TIMEDOUT ? -ETIMEDOUT : -EPROTO;
    }
    int r = nbd_wire_set_tls(fd, s);
    if (r)
        gnutls_deinit(s);
    return r;
#endif
}

int rk_nbd_tls_check(const struct rk_nbd_opts *opts, char *err, size_t errlen)
{
    struct nbd_tls *t = NULL;
    int r = nbd_tls_create(opts, &t, err, errlen);
    nbd_tls_free(t);
    return r;
}

/* True when the socket address is a loopback one (127/8, ::1, ::ffff:127/104). */
static bool tls_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family != AF_INET6)
        return false;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

void rk_nbd_warn_exposed(const struct rk_nbd_opts *opts)
{
    const char *l = opts->listen;
    if (!l || strncmp(l, "tcp:", 4) || opts->tls == RK_NBD_TLS_REQUIRE)
        return;
    char host[256] = "127.0.0.1";
    const char *colon = strrchr(l + 4, ':');
    if (colon) {
        const char *h = l + 4;
        size_t hl = (size_t)(colon - h);
        if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') {
            h++;
            hl -= 2;
        }
        if (hl == 0 || hl >= sizeof(host))
            return; /* the server refuses it with its own message */
        memcpy(host, h, hl);
        host[hl] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res))
        return;
    bool exposed = false;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        exposed |= !tls_loopback(ai->ai_addr);
    freeaddrinfo(res);
    if (exposed)
        rk_warn("listening on %s without TLS%s: anyone who can reach it can read and write the "
                "export (use --tls require, or a loopback address; docs/SECURITY.md)",
                l + 4, opts->tls == RK_NBD_TLS_ON ? " required (--tls on lets plaintext in)" : "");
}
