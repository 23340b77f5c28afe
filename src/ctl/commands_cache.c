/* The control socket's cache request: online mode switch, detach, attach and the testing fault
 * hook of the cache device (docs/CLI.md "cache"). */
#include "ctl/commands_cache.h"

#include <errno.h>
#include <string.h>

#include "cache/cache.h"
#include "ctl/control.h"
#include "meta/volume_cache_layer.h"

static const char *cc_str(const cJSON *req, const char *key)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(req, key);
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

static char *cc_ok(const char *msg)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddBoolToObject(o, "ok", true);
    cJSON_AddStringToObject(o, "message", msg);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

char *rk_control_cache(struct rk_volume *v, const cJSON *req)
{
    struct rk_cache *c = rk_volume_cache(v);
    const char *op = cc_str(req, "op");
    char err[600] = "";
    int r;
    if (!op)
        return rk_control_error("cache needs \"op\": mode, detach, attach or fault");
    if (!c)
        return rk_control_error("cache %s: the volume is served without a cache layer (serve "
                                "--cache CACHEDEV)",
                                op);
    if (!strcmp(op, "mode")) {
        const char *m = cc_str(req, "mode");
        enum rk_cache_mode mode;
        if (!m || rk_cache_mode_parse(m, &mode))
            return rk_control_error("cache mode: bad \"mode\" '%s' (writethrough, writeback, "
                                    "writearound, none)",
                                    m ? m : "");
        r = rk_volume_cache_mode(v, mode, err, sizeof(err));
        return r ? rk_control_error("%s", err) : cc_ok("mode set");
    }
    if (!strcmp(op, "detach")) {
        r = rk_volume_cache_detach(v, err, sizeof(err));
        return r ? rk_control_error("%s", err) : cc_ok("cache detached");
    }
    if (!strcmp(op, "attach")) {
        const char *d = cc_str(req, "device");
        if (!d || d[0] != '/')
            return rk_control_error("cache attach needs \"device\": an absolute path");
        r = rk_volume_cache_attach(v, d, err, sizeof(err));
        return r ? rk_control_error("%s", err) : cc_ok("cache attached");
    }
    if (!strcmp(op, "fault")) {
        const char *s = cc_str(req, "spec");
        if (!s)
            return rk_control_error("cache fault needs \"spec\"");
        r = rk_cache_debug_fault(c, s, err, sizeof(err));
        return r ? rk_control_error("%s", err) : cc_ok("fault spec applied");
    }
    return rk_control_error("cache: unknown op '%.64s' (mode, detach, attach, fault)", op);
}
