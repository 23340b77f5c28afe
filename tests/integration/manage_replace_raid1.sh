#!/bin/bash
# manage_replace_raid1: online replace of a raid1 member through the control socket while fio
# writes with verification; afterwards only the rebuilt member serves and all data is intact.
# The raid5 variant runs when this build creates raid5 arrays.
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/lib/common.sh"
. "${RAIDKIT_SOURCE_DIR:-$(dirname "$0")/../..}/tests/integration/manage_lib.bash"
rk_init
rk_need fio

mg_replace_case raid1 2 1 "0"
if mg_level_works 5; then
    mg_replace_case raid5 3 1 "0"
else
    rk_log "note: raid5 not available in this build; raid5 replace variant skipped"
fi
echo PASS
