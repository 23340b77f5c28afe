/* Internals shared by the volume code (create, assembly, replace, info): reading and writing one
 * member's superblock, and sorting a set of members into usable / stale / foreign / broken. */
#ifndef RK_META_INT_H
#define RK_META_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "meta/superblock.h"
#include "raidkit/device.h"

/* What assembly makes of one member given on the command line. */
enum meta_class {
    META_OK = 0,     /* valid, newest event counter, placed in its slot */
    META_UNREADABLE, /* open or read failed */
    META_NOTOURS,    /* no superblock magic (or too small for one): not a raidkit member */
    META_CORRUPT,    /* magic present, but bad version, header size, crc or a field out of
                        bounds: a damaged member (reason "corrupt superblock: CHECK") */
    META_FOREIGN,    /* valid superblock of another array */
    META_STALE,      /* lower event counter than the newest member */
    META_REPLACED,   /* newest event, but its UUID is not the one recorded for its slot */
    META_DUPLICATE,  /* claims a slot another member already holds */
    META_CONFLICT,   /* same array and event as the newest, but a different geometry */
    META_TRUNCATED,  /* valid superblock, but the file or device is shorter than its data area
                        (meta_scan_check_sizes: info and assembly set it aside, slot missing) */
};

/* One member of a scan. reason holds the message for every class but META_OK, worded to follow
 * "member PATH " ("is stale (...)", "claims slot 2, ...", "cannot open: ..."); after "PATH: "
 * it is shown without a leading "is " (meta_reason_show). */
struct meta_member {
    const char *path;
    struct rk_dev *dev; /* open file (kept only when meta_scan was asked to) */
    int rc;             /* 0, or the -errno of the failure */
    enum meta_class cls;
    struct rk_sb sb; /* valid unless UNREADABLE/CORRUPT */
    char reason[320];
};

/* Result of classifying a scan. */
struct meta_scan {
    int n;
    struct meta_member m[RK_MAX_MEMBERS];
    int master;                      /* index of the newest valid member, -1 when none */
    int slot_member[RK_MAX_MEMBERS]; /* index of the member placed in each slot, -1 */
};

/* Read and decode the superblock of dev. 0 or the decode/read -errno with err. */
int meta_read_sb(struct rk_dev *dev, struct rk_sb *sb, char *err, size_t errlen);
/* Encode sb, write it at offset 0 of dev and flush. 0 or -errno. */
int meta_write_sb(struct rk_dev *dev, const struct rk_sb *sb);

/* Open (rk_file_open with flags) and read every path, then classify. keep_open leaves the devices
 * of readable members open in m[i].dev (close with meta_scan_close). n <= RK_MAX_MEMBERS. */
void meta_scan(struct meta_scan *s, const char *const *paths, int n, uint32_t flags,
               bool keep_open);
void meta_scan_close(struct meta_scan *s);
/* After meta_scan with keep_open: a member shorter than its superblock's data area (a truncated
 * file, a shrunk device: data offset + data size) holds only part of its slot. It is classed
 * META_TRUNCATED (rc -ENOSPC, reason with the sizes), its device stays open (the caller closes
 * it with the others) and its slot is left without a member, so assembly counts the slot
 * missing (--degraded as usual) instead of reading past its end later. */
void meta_scan_check_sizes(struct meta_scan *s);

/* Short names of the classes: "ok", "unreadable", "not-raidkit", "corrupt", "foreign", ... */
const char *meta_class_name(enum meta_class c);

/* A member's class (meta_class_name) and reason as shown after "PATH: ": "duplicate: claims slot
 * 1, ...", but never doubled: without the reason's leading "is ", and without the class when the
 * reason names it already ("stale (slot 2, ...)", not "stale: is stale (...)"; "not a raidkit
 * member (...)", "set aside: corrupt superblock: ..."). Into buf (len bytes); returns buf. */
static inline const char *meta_reason_show(char *buf, size_t len, const char *cls,
                                           const char *reason)
{
    const char *t = strncmp(reason, "is ", 3) ? reason : reason + 3;
    if (!t[0] || !cls[0] || strstr(t, cls) || !strcmp(cls, "not-raidkit"))
        snprintf(buf, len, "%s", t[0] ? t : cls);
    else
        snprintf(buf, len, "%s: %s", cls, t);
    return buf;
}

/* Fill the RK_UUID_LEN bytes at u with a random RFC 4122 version 4 UUID (getrandom, retried on
 * EINTR). 0 or -errno. */
int meta_random_uuid(uint8_t *u);

/* Fill sb's per-member fields (slot, member UUID, data size) for slot. */
void meta_sb_for_slot(struct rk_sb *sb, uint32_t slot);

#endif
