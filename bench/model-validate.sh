#!/usr/bin/env bash
# Validate the device model's prediction against the served emulation (docs/BENCHMARKS.md
# "Validation against the emulation"): run the `validate` suite (16K random read / write,
# iodepth 32) over bench/profiles/throttled-ssd.ini, whose rate gates bind far below this host's
# fio + NBD path, and check every row: |measured / model - 1| <= 10%.
#   bench/model-validate.sh RAIDKIT [CONFIGS] [OUTDIR]      (CONFIGS default single,raid0,...,raid6)
# Environment: SUITE (default bench/suites/validate.ini; bench/suites/validate-mixed.ini holds the
# sequential and mixed read/write jobs), PROFILE (default bench/profiles/throttled-ssd.ini;
# bench/profiles/hdd-7200.ini validates the HDD simulation), BOUND (percent, default 10: the
# bound of |measured / model - 1|; docs/BENCHMARKS.md says which rows use a wider one and why).
# A row above the bound fails at once (the host can only slow the emulation down, never speed it
# up); a row below it is measured once more (a starved host wakes the emulation's callers late)
# and fails if it is still below. A row whose noop ceiling is under 2x its model figure is not
# validated (the host, not the emulation, is near the limit there) and is printed as such; every
# job needs at least one validated row. Exit 0 ok, 1 a row out of bounds, 2 usage.
set -u
export BOUND=${BOUND:-10}
case $BOUND in "" | *[!0-9.]* | *.*.*) echo "model-validate: BOUND must be a percentage, not \"$BOUND\"" >&2; exit 2 ;; esac
RAIDKIT=${1:?usage: bench/model-validate.sh RAIDKIT [CONFIGS] [OUTDIR]}
CONFIGS=${2:-single,raid0,raid1,raid10,raid5,raid6}
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${3:-$(mktemp -d /tmp/rk-model-validate.XXXXXX)}
mkdir -p "$OUT" || exit 2
PY=/usr/bin/python3
export RAIDKIT_SOURCE_DIR=$SRC
bench() { # bench CONFIGS DIR
    "$RAIDKIT" bench --suite "${SUITE:-$SRC/bench/suites/validate.ini}" --model "${PROFILE:-$SRC/bench/profiles/throttled-ssd.ini}" \
        --configs "$1" --trials 1 --format json,text --out "$2" >"$2.stdout" 2>"$2.stderr" || {
        echo "model-validate: raidkit bench exited $? ($2.stderr):" >&2
        tail -5 "$2.stderr" >&2
        exit 1
    }
}
check() { # check REPORT [PREVIOUS]: prints the rows, the configs to measure again on stdout's last line
    "$PY" - "$@" <<'PY'
import json, os, sys
bound = float(os.environ.get("BOUND") or 10) / 100
rep = json.load(open(sys.argv[1]))
prev = {}
if len(sys.argv) > 2:
    for row in json.load(open(sys.argv[2])):
        prev[(row["job"], row["config"])] = row
rows, again, bad = [], set(), []
for j in rep["jobs"]:
    res = {x["config"]: x for x in j["results"]}
    noop = res.get("noop", {}).get("mean", 0)
    validated = 0
    for c, x in res.items():
        if c == "noop" or not x["trials"]:
            continue
        m, v = x["model_mbs"], x["mean"]
        old = prev.get((j["name"], c))
        if old and old["ratio"] and m and abs(old["ratio"] - 1) < abs(v / m - 1):
            v, m = old["measured"], old["model"]  # the better of the two runs (each its own pair)
        row = {"job": j["name"], "config": c, "measured": v, "model": m, "noop": noop,
               "ratio": v / m if m else None}
        if not m:
            row["verdict"] = "no model figure"
            bad.append(row)
        elif noop < 2 * m:
            row["verdict"] = "not validated: noop ceiling %.1f < 2 x model" % noop
        else:
            validated += 1
            r = v / m
            if r > 1 + bound:
                row["verdict"] = "FAIL: above the model by %+.1f%%" % ((r - 1) * 100)
                bad.append(row)
            elif r < 1 - bound:
                row["verdict"] = "FAIL: below the model by %+.1f%%" % ((r - 1) * 100)
                if old is None:
                    again.add(c)
                    row["verdict"] = "below by %+.1f%%: measured again" % ((r - 1) * 100)
                else:
                    bad.append(row)
            else:
                row["verdict"] = "ok (%+.1f%%)" % ((r - 1) * 100)
        rows.append(row)
    if validated == 0:
        bad.append({"job": j["name"], "config": "-", "verdict": "no validated row"})
for r in rows:
    print("%-10s %-8s measured %7.2f  model %7.2f  noop %7.2f  %s" % (
        r["job"], r["config"], r["measured"], r["model"] or 0, r["noop"], r["verdict"]))
json.dump(rows, open(sys.argv[1] + ".rows", "w"))
for b in bad:
    if b not in rows:
        print("%-10s %-8s %s" % (b["job"], b["config"], b["verdict"]))
print("AGAIN " + ",".join(sorted(again)) if again else ("BAD" if bad else "OK"))
PY
}
bench "$CONFIGS" "$OUT/a"
res=$(check "$OUT/a/report.json") || exit 1
echo "$res" | sed '$d'
last=$(echo "$res" | tail -1)
if [ "${last%% *}" = AGAIN ]; then
    again=${last#AGAIN }
    echo "model-validate: measuring $again again"
    bench "$again" "$OUT/b"
    res=$(check "$OUT/b/report.json" "$OUT/a/report.json.rows") || exit 1
    echo "$res" | sed '$d'
    last=$(echo "$res" | tail -1)
fi
[ "$last" = OK ] || { echo "model-validate: FAILED (reports in $OUT)"; exit 1; }
echo "model-validate: every validated row within ${BOUND:-10}% of the model (reports in $OUT)"
