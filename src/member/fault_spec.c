/* The fault member's textual spec (the CLI's --debug-fault SLOT:SPEC): parsed as a whole, then
 * applied through the public rk_fault_* calls only when every item is valid. */
#include "raidkit/member.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* Items one spec may hold (ranges are further limited to 16 by the fault member). */
#define FAULT_MAX_ITEMS 32

/* One parsed spec item. */
struct fault_item {
    enum {
        FAULT_ITEM_FAIL_ALL,
        FAULT_ITEM_RANGE,
        FAULT_ITEM_AFTER,
        FAULT_ITEM_CUT_AFTER,
        FAULT_ITEM_KEEP,
        FAULT_ITEM_SEED,
        FAULT_ITEM_LATENCY,
        FAULT_ITEM_SHARED,
        FAULT_ITEM_HANG,
    } kind;
    uint32_t which;
    uint64_t a, b;
};

/* Items NAME=N with a plain decimal count. */
static const struct {
    const char *prefix;
    int kind;
} fault_count_items[] = {
    {"fail-after-writes=", FAULT_ITEM_AFTER},
    {"cut-after=", FAULT_ITEM_CUT_AFTER},
    {"seed=", FAULT_ITEM_SEED},
    {"latency=", FAULT_ITEM_LATENCY},
};

/* OFF+LEN of a range item (after its prefix). */
static int fault_parse_range(const char *item, const char *v, struct fault_item *it, char *err,
                             size_t errlen)
{
    char val[64];
    const char *plus = strchr(v, '+');
    size_t offlen = plus ? (size_t)(plus - v) : 0;
    if (!plus || offlen >= sizeof(val)) {
        rk_set_err(err, errlen, "fault spec: '%s': expected OFF+LEN (e.g. 1M+4K)", item);
        return -EINVAL;
    }
    memcpy(val, v, offlen);
    val[offlen] = '\0';
    if (rk_parse_size(val, &it->a) || rk_parse_size(plus + 1, &it->b)) {
        rk_set_err(err, errlen, "fault spec: '%s': bad size in OFF+LEN (e.g. 1M+4K)", item);
        return -EINVAL;
    }
    if (it->b == 0 || it->a + it->b < it->a) {
        rk_set_err(err, errlen, "fault spec: '%s': LEN must be > 0 and OFF+LEN must fit", item);
        return -EINVAL;
    }
    return 0;
}

static int fault_parse_item(const char *item, struct fault_item *it, char *err, size_t errlen)
{
    static const struct {
        const char *prefix;
        uint32_t which;
    } range_items[] = {
        {"read-eio=", RK_FAULT_READ},
        {"write-eio=", RK_FAULT_WRITE},
        {"eio=", RK_FAULT_READ | RK_FAULT_WRITE},
    };
    static const char *const keeps[] = {"none", "all", "random"};
    if (!strcmp(item, "fail-all") || !strcmp(item, "power=shared")) {
        it->kind = item[0] == 'f' ? FAULT_ITEM_FAIL_ALL : FAULT_ITEM_SHARED;
        return 0;
    }
    if (!strcmp(item, "on-cut=fail") || !strcmp(item, "on-cut=hang")) {
        it->kind = FAULT_ITEM_HANG;
        it->a = item[7] == 'h';
        return 0;
    }
    if (!strncmp(item, "keep=", 5)) {
        it->kind = FAULT_ITEM_KEEP;
        for (uint64_t k = 0; k < 3; k++) {
            if (!strcmp(item + 5, keeps[k])) {
                it->a = k; /* enum rk_fault_keep order */
                return 0;
            }
        }
        rk_set_err(err, errlen, "fault spec: '%s': keep must be none, all or random", item);
        return -EINVAL;
    }
    for (size_t i = 0; i < sizeof(fault_count_items) / sizeof(fault_count_items[0]); i++) {
        size_t n = strlen(fault_count_items[i].prefix);
        if (strncmp(item, fault_count_items[i].prefix, n))
            continue;
        it->kind = fault_count_items[i].kind;
        if (rk_parse_u64(item + n, &it->a) ||
            (it->kind == FAULT_ITEM_LATENCY && it->a > 10 * 1000 * 1000)) {
            rk_set_err(err, errlen, "fault spec: '%s': %s", item,
                       it->kind == FAULT_ITEM_LATENCY ? "USEC must be a decimal 0..10000000"
                                                      : "N must be a decimal count");
            return -EINVAL;
        }
        return 0;
    }
    for (size_t i = 0; i < sizeof(range_items) / sizeof(range_items[0]); i++) {
        size_t n = strlen(range_items[i].prefix);
        if (strncmp(item, range_items[i].prefix, n))
            continue;
        it->kind = FAULT_ITEM_RANGE;
        it->which = range_items[i].which;
        return fault_parse_range(item, item + n, it, err, errlen);
    }
    rk_set_err(err, errlen,
               "fault spec: unknown item '%s' (expected fail-all, read-eio=OFF+LEN, "
               "write-eio=OFF+LEN, eio=OFF+LEN, fail-after-writes=N, cut-after=N, "
               "keep=none|all|random, seed=S, latency=USEC, power=shared or on-cut=fail|hang)",
               item);
    return -EINVAL;
}

/* Split spec at commas into items[] (at most FAULT_MAX_ITEMS); *nranges counts EIO ranges. */
static int fault_parse_spec(const char *spec, struct fault_item *items, unsigned *nitems,
                            unsigned *nranges, char *err, size_t errlen)
{
    char *copy = strdup(spec);
    int r = -EINVAL;
    if (!copy) {
        rk_set_err(err, errlen, "out of memory");
        return -ENOMEM;
    }
    *nitems = *nranges = 0;
    for (char *item = copy; item;) {
        char *comma = strchr(item, ',');
        if (comma)
            *comma = '\0';
        if (!*item) {
            rk_set_err(err, errlen, "fault spec: empty item in '%s'", spec);
            goto out;
        }
        if (*nitems == FAULT_MAX_ITEMS) {
            rk_set_err(err, errlen, "fault spec: more than %d items", FAULT_MAX_ITEMS);
            goto out;
        }
        if (fault_parse_item(item, &items[*nitems], err, errlen))
            goto out;
        if (items[(*nitems)++].kind == FAULT_ITEM_RANGE)
            (*nranges)++;
        item = comma ? comma + 1 : NULL;
    }
    r = 0;
out:
    free(copy);
    return r;
}

/* Apply parsed items in two passes: the power domain first, then everything else. */
static int fault_apply_items(struct rk_dev *dev, const struct fault_item *items, unsigned n,
                             char *err, size_t errlen)
{
    bool keep_given = false;
    uint64_t keep = RK_FAULT_KEEP_NONE, seed = 1;
    struct rk_fault_cut_stats probe;
    if (rk_fault_last_cut(dev, &probe)) {
        rk_set_err(err, errlen, "fault spec: not a fault device");
        return -EINVAL;
    }
    for (unsigned i = 0; i < n; i++) {
        if (items[i].kind == FAULT_ITEM_SHARED && rk_fault_join_shared(dev)) {
            rk_set_err(err, errlen, "fault spec: power=shared: more than 64 members");
            return -EINVAL;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        const struct fault_item *it = &items[i];
        switch (it->kind) {
        case FAULT_ITEM_FAIL_ALL:
            rk_fault_fail_all(dev, true);
            break;
        case FAULT_ITEM_AFTER:
            rk_fault_fail_after_writes(dev, it->a);
            break;
        case FAULT_ITEM_RANGE:
            if (rk_fault_add_range(dev, it->which, it->a, it->b)) {
                rk_set_err(err, errlen, "fault spec: more than 16 EIO ranges");
                return -EINVAL;
            }
            break;
        case FAULT_ITEM_CUT_AFTER:
            rk_fault_cut_after(dev, it->a);
            break;
        case FAULT_ITEM_KEEP:
            keep = it->a;
            keep_given = true;
            break;
        case FAULT_ITEM_SEED:
            seed = it->a;
            keep_given = true;
            break;
        case FAULT_ITEM_LATENCY:
            rk_fault_set_latency(dev, it->a);
            break;
        case FAULT_ITEM_HANG:
            rk_fault_set_hang(dev, it->a != 0);
            break;
        case FAULT_ITEM_SHARED:
            break;
        }
    }
    if (keep_given)
        rk_fault_set_keep(dev, (enum rk_fault_keep)keep, seed);
    return 0;
}

int rk_fault_apply_spec(struct rk_dev *dev, const char *spec, char *err, size_t errlen)
{
    struct fault_item items[FAULT_MAX_ITEMS];
    unsigned nitems, nranges;
    struct rk_fault_cut_stats probe;

    if (rk_fault_last_cut(dev, &probe)) {
        rk_set_err(err, errlen, "fault spec: not a fault device");
        return -EINVAL;
    }
    if (!spec || !*spec)
        return 0; /* nothing to inject: the device just passes through (power cut still works) */
    int r = fault_parse_spec(spec, items, &nitems, &nranges, err, errlen);
    if (r)
        return r;
    if (nranges > rk_fault_ranges_free(dev)) {
        rk_set_err(err, errlen, "fault spec: more than %d EIO ranges", 16);
        return -EINVAL;
    }
    return fault_apply_items(dev, items, nitems, err, errlen);
}

int rk_fault_check_spec(const char *spec, char *err, size_t errlen)
{
    struct fault_item items[FAULT_MAX_ITEMS];
    unsigned nitems, nranges;
    if (!spec || !*spec)
        return 0;
    int r = fault_parse_spec(spec, items, &nitems, &nranges, err, errlen);
    if (!r && nranges > 16) {
        rk_set_err(err, errlen, "fault spec: more than %d EIO ranges", 16);
        r = -EINVAL;
    }
    return r;
}
