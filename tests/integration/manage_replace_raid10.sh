#!/bin/bash
# manage_replace_raid10: online replace of a raid10 member (4 members, then 3) while fio writes;
# afterwards the mirror partners are failed so the rebuilt member alone serves its chunks.
# The raid6 variant runs when this build creates raid6 arrays.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init
rk_need fio

mg_replace_case raid10 4 1 "0 2"
mg_replace_case raid10 3 1 "0"
if mg_level_works 6; then
    mg_replace_case raid6 4 1 "0 2"
else
    rk_log "note: raid6 not available in this build; raid6 replace variant skipped"
fi
echo PASS
