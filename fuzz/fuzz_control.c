/* libFuzzer harness: the control request parser (rk_control_handle, src/ctl/commands.c) against
 * a real raid1 volume of two 8 MiB member files in a private temp directory. The input is one
 * request line. A "replace" request's "with" path is pinned to a file inside that directory
 * (the harness must never write a superblock elsewhere); everything else reaches the parser and
 * the command as sent. Failed members are brought back by reopening the volume every 256 runs. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "ctl/control.h"
#include "raidkit/volume.h"

#include "fuzz_tmp.h"

static char fz_dir[128], fz_m[2][160], fz_new[160];
static struct rk_volume *fz_vol;
static unsigned fz_runs;

static void fz_volume(void)
{
    const char *paths[2] = {fz_m[0], fz_m[1]};
    char err[512];
    if (fz_vol)
        rk_volume_close(fz_vol);
    fz_vol = NULL;
    for (int i = 0; i < 2; i++)
        unlink(fz_m[i]);
    struct rk_create_opts co = {.level = RK_LEVEL_RAID1, .size = 8u << 20, .force = true};
    if (rk_volume_create(paths, 2, &co, err, sizeof(err)))
        abort();
    struct rk_open_opts oo = {.degraded = true};
    if (rk_volume_open(paths, 2, &oo, &fz_vol, err, sizeof(err))) {
        fprintf(stderr, "fuzz: open: %s\n", err);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fz_dir[0]) {
        rk_log_set_level(RK_LOG_ERROR);
        fz_tempdir(fz_dir, sizeof(fz_dir), "rk-fuzzctl");
        for (int i = 0; i < 2; i++)
            snprintf(fz_m[i], sizeof(fz_m[i]), "%s/m%d", fz_dir, i);
        snprintf(fz_new, sizeof(fz_new), "%s/new", fz_dir);
    }
    if (!fz_vol || ++fz_runs % 256 == 0)
        fz_volume();
    if (size > RK_CONTROL_LINE_MAX)
        return 0;
    char *line = malloc(size + 1);
    memcpy(line, data, size);
    line[size] = '\0';
    cJSON *req = cJSON_Parse(line);
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(req, "cmd");
    if (cJSON_IsString(cmd) && cmd->valuestring && !strcmp(cmd->valuestring, "replace")) {
        /* Pin every "with" (the parser takes the first of duplicate keys, so does this). */
        while (cJSON_GetObjectItemCaseSensitive(req, "with"))
            cJSON_DeleteItemFromObjectCaseSensitive(req, "with");
        cJSON_AddStringToObject(req, "with", fz_new);
        free(line);
        line = cJSON_PrintUnformatted(req);
    }
    cJSON_Delete(req);
    if (line) {
        free(rk_control_handle(fz_vol, line));
        free(line);
    }
    return 0;
}
