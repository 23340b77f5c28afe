/* The precheck of the offline manage commands (rk_volume_precheck): every refusal of replace
 * and re-add found over a read-only assembly, before the writable open raises the event
 * counter and marks the superblocks dirty, so a refused command changes no member. */
#include "meta/volume_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "raidkit/member.h"
#include "raidkit/member_nbd.h"

/* The member at path for slot: open (read-write for a new member: it will be written; read
 * only for a returning one, as its superblock is all that is read here), then the checks of
 * rk_volume_replace / rk_volume_readd. 0 or -errno with err. */
static int precheck_member(struct rk_volume *v, const struct rk_precheck *pc, char *err,
                           size_t errlen)
{
    struct rk_dev *dev = NULL;
    uint32_t flags = v->file_flags & ~RK_FILE_READ_ONLY;
    int r = rk_member_open(pc->member, flags, &dev);
    if (r < 0) {
        rk_set_err(err, errlen, "cannot open %s: %s", pc->member, strerror(-r));
        return r;
    }
    struct rk_sb msb;
    char serr[200] = "";
    bool has_sb = meta_read_sb(dev, &msb, serr, sizeof(serr)) == 0;
    bool old = has_sb && !memcmp(msb.array_uuid, v->sb.array_uuid, RK_UUID_LEN) &&
               !memcmp(msb.member_uuid, v->sb.slots[pc->slot].uuid, RK_UUID_LEN);
    if (pc->op == RK_PRECHECK_READD && !has_sb) {
        rk_set_err(err, errlen,
                   "%s holds no usable raidkit superblock (%s): not a member that left; use "
                   "replace --with to rebuild onto it",
                   pc->member, serr);
        r = -ENODATA;
    } else if (pc->op == RK_PRECHECK_READD || old) {
        r = vol_readd_identify(v, pc->slot, pc->member, &msb, v->sb.events + 1, err, errlen);
    }
    if (!r)
        r = vol_check_new_member(v, pc->slot, pc->member, dev, pc->force, err, errlen);
    if (!r && pc->op == RK_PRECHECK_REPLACE && !old)
        r = vol_check_signature(v, pc->member, dev, pc->force, err, errlen);
    rk_dev_close(dev);
    return r;
}

int rk_volume_precheck(const char *const *paths, int n, const struct rk_precheck *pc, char *err,
                       size_t errlen)
{
    if (!pc || !pc->member) {
        rk_set_err(err, errlen, "no member to check");
        return -EINVAL;
    }
    struct rk_open_opts oo = {.degraded = true, .read_only = true, .precheck = true};
    struct rk_volume *v = NULL;
    int r = rk_volume_open(paths, n, &oo, &v, err, errlen);
    if (r)
        return r;
    if (pc->op == RK_PRECHECK_READD && pc->slot < v->sb.members &&
        rk_raid_slot_state(v->raid, pc->slot) == RK_SLOT_ACTIVE) {
        rk_set_err(err, errlen,
                   "slot %" PRIu32 " is active: nothing to re-add (only a failed or missing slot "
                   "takes its old member back)",
                   pc->slot);
        r = -EBUSY;
    }
    if (!r)
        r = vol_slot_refused(v, pc->slot, pc->member, err, errlen);
    if (!r)
        r = precheck_member(v, pc, err, errlen);
    rk_volume_close(v); /* read-only: writes nothing */
    return r;
}
