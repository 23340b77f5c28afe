#!/usr/bin/python3
"""Print the fio tables of a raidkit bench report (report.json) as seed | predicted | measured.

Usage: scripts/demo-compare.py REPORT.json

One table per raw fio job with seed figures: each measured row with the seed's figure of the same
row, the device model's prediction, the measured mean and the two ratios to the seed; the row's
headline (the prediction when host-bound) is marked with '>'. Then a short "how to read this"
paragraph and the reasons a row differs from the study. Exit 1 when the file is not a report.
"""
import json
import sys


def fmt(v, suffix=""):
    return "-" if v is None else "%.2f%s" % (v, suffix)


def ratio(a, b):
    return a / b if a is not None and b else None


def job_table(job, labels):
    bs = job["bs"]
    bss = "%dMB" % (bs >> 20) if bs >= 1 << 20 else "%dKB" % (bs >> 10)
    head = "%s (%s, %s, iodepth %d), %s" % (job["title"], job["rw"], bss, job["iodepth"],
                                            job.get("unit", "MB/s"))
    out = [head]
    w = max([len("Configuration")] + [len(labels[x["config"]]) for x in job["results"]])
    out.append("%-*s %9s %10s %9s %10s %10s  %s" % (w, "Configuration", "seed", "predicted",
                                                    "measured", "pred/seed", "meas/seed", "notes"))
    for x in job["results"]:
        seed, model, meas = x.get("seed_mbs"), x.get("model_mbs"), x["mean"]
        notes = []
        head_model = x.get("headline") == "model"
        if x.get("host_bound"):
            notes.append("host-bound: read the prediction")
        if x.get("noisy"):
            notes.append("noisy (RSD %.1f%%)" % x["rsd_pct"])
        if x.get("mapping", "").startswith("differs"):
            notes.append("differs from the study")
        if x.get("model_seed_reason"):
            notes.append("pred/seed: " + x["model_seed_reason"])
        out.append("%-*s %9s %10s %9s %10s %10s  %s" % (
            w, labels[x["config"]], fmt(seed), (">" if head_model else "") + fmt(model),
            ("" if head_model else ">") + fmt(meas), fmt(ratio(model, seed), "x"),
            fmt(ratio(meas, seed), "x"), "; ".join(notes)))
    return out


HOWTO = """How to read this: 'seed' is the study's own figure for the same row (seed 000: btrfs over
four Intel 530 SATA SSDs), 'predicted' what raidkit's device model of those disks allows for the
member I/O the row caused, 'measured' what this machine reached through raidkit. The figure marked
'>' is the row's headline: a host-bound row (this 2-core machine, not the RAID layout, set the
measured figure) is read by its prediction. The ratios say how far a row is from the study; a row
that differs from the study (below) is not expected to match it. 'noisy' rows kept an RSD above
3.5% after the most trials: their mean is uncertain."""


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: demo-compare.py REPORT.json\n")
        return 2
    try:
        r = json.load(open(sys.argv[1]))
        jobs, configs = r["jobs"], r["configs"]
    except (OSError, ValueError, KeyError) as e:
        sys.stderr.write("demo-compare: %s: not a raidkit bench report (%s)\n" % (sys.argv[1], e))
        return 1
    labels = {c["name"]: c["label"] for c in configs}
    shown = 0
    for job in jobs:
        if job.get("kind") == "fs" or not job["results"]:
            continue
        if shown:
            print()
        print("\n".join(job_table(job, labels)))
        shown += 1
    print()
    print(HOWTO)
    reasons = {}
    for job in jobs:
        for x in job["results"]:
            if x.get("mapping", "").startswith("differs"):
                reasons[x["config"]] = x.get("mapping_reason") or x["mapping"]
    for why in reasons.values():
        print("  " + why)
    codes = {}
    for job in jobs:
        for x in job["results"]:
            if x.get("model_seed_reason"):
                codes[x["model_seed_reason"]] = x.get("model_seed_why", "")
    if codes:
        print("Why pred/seed is that far (docs/BENCHMARKS.md \"Model against the seed\"):")
        for c in "MPNSB":
            if c in codes:
                print("  %s %s" % (c, codes[c]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
