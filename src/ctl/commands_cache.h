/* The control socket's cache request (commands_cache.c). */
#ifndef RK_CTL_COMMANDS_CACHE_H
#define RK_CTL_COMMANDS_CACHE_H

#include <cjson/cJSON.h>

#include "raidkit/volume.h"

/*
 * {"cmd":"cache","op":"mode","mode":"writethrough|writeback|writearound|none"}
 * {"cmd":"cache","op":"detach"}
 * {"cmd":"cache","op":"attach","device":"/abs/path"}
 * {"cmd":"cache","op":"fault","spec":"SPEC|clear"}   (testing: serve --debug-fault cache:...)
 * Blocks until done (a mode switch out of writeback and a detach drain the dirty blocks
 * first). Reply {"ok":true,"message":...} or an error reply; JSON text (malloc'ed), NULL on
 * ENOMEM.
 */
char *rk_control_cache(struct rk_volume *v, const cJSON *req);

#endif
