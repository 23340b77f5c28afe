#!/usr/bin/env bash
# Power-cut torture of raid5/raid6 stripe gathering (docs/TORTURE.md, docs/ARCHITECTURE.md
# "Stripe gathering"): the cycles of torture_raid5/torture_raid6 (random power cut of every
# member, SIGKILL, restart, verify, scrub at 0 mismatches, a member failed, verify again), with
# a client whose writes form one sequential stream of 4-16 KiB writes (tests/integration/
# torture_stream.py), so partial-stripe writes are held in memory, written out as whole
# stripes, by FLUSH, before FUA writes and at the end of their hold. TORTURE_CUTS cycles per
# level (default 3), cut after 1..TORTURE_CUTMAX (default 4000) member writes.
. "$RAIDKIT_SOURCE_DIR/tests/lib/common.sh"
. "$RAIDKIT_SOURCE_DIR/tests/lib/torture_lib.sh"
rk_init
# More member writes before the cut than torture_raid5/6 (1500): the stream writes whole
# stripes, so the cut should land after several write-outs.
TORTURE_CUTMAX=${TORTURE_CUTMAX:-4000}
# shellcheck disable=SC2034 # read by torture_cycle
TORTURE_PY="$RAIDKIT_SOURCE_DIR/tests/integration/torture_stream.py"
for level in raid5 raid6; do
    TORTURE_QUIET=${TORTURE_QUIET:-1} torture_level "$level" "${TORTURE_CUTS:-3}" || rk_fail "$TORTURE_SUMMARY"
    echo "$TORTURE_SUMMARY" | grep -Eq " cuts=[1-9]" || rk_fail "no cycle cut the power: $TORTURE_SUMMARY"
done
echo "PASS: torture of stripe gathering with a sequential stream"
