#!/usr/bin/env python3
"""Merge benchmark (issue #19): N one-hour result files, generated from a short real one.

  bench/merge_hour.py SEED.json OUTDIR [N]      # writes OUTDIR/hour-1.json .. hour-N.json

Each file is SEED with its per-second points repeated to fill 3600 seconds (the same metrics
and tag sets every second, as a steady hour-long run has), its own execution segment, and
its start a few hundred milliseconds after the previous one's (instances never start at
once). `volley merge` and the coordinator then read files of the size an hour makes.
The files have the seed's result-file version: a version 2 seed (series table) gives version 2
files, a version 1 seed (point lists) version 1 files.
"""
import copy
import json
import sys

seed_path, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 8
seed = json.load(open(seed_path))


def hour_v1(series):
    points = [p for p in series["points"] if p.get("values")]
    hour = []
    for t in range(3600):
        p = copy.deepcopy(points[t % len(points)])
        p["t"], p["w"] = t, 1
        hour.append(p)
    return {"points": hour}


def hour_v2(series):
    # The seed's buckets that hold values, repeated; each series' columns follow them.
    used = sorted({t for e in series["table"] for t in e["t"]})
    table = []
    for e in series["table"]:
        at = {t: j for j, t in enumerate(e["t"])}
        cols = [k for k in e if k not in ("name", "tags", "kind", "t")]
        out = {k: e[k] for k in ("name", "tags", "kind") if k in e}
        out["t"] = []
        for c in cols:
            out[c] = []
        for t in range(3600):
            j = at.get(used[t % len(used)])
            if j is None:
                continue
            out["t"].append(t)
            for c in cols:
                out[c].append(e[c][j])
        table.append(out)
    return {"t": list(range(3600)), "w": [1] * 3600, "table": table}


hour = hour_v2(seed["series"]) if "table" in seed["series"] else hour_v1(seed["series"])
for i in range(n):
    r = copy.deepcopy(seed)
    for k in ("points", "t", "w", "table"):
        r["series"].pop(k, None)
    r["series"].update(hour)
    r["series"]["bucket_s"] = 1
    r["series"]["max_points"] = 3600
    start = r["meta"]["started_unix_ms"] + 300 * i
    r["meta"]["started_unix_ms"] = start
    r["meta"]["ended_unix_ms"] = start + 3600 * 1000
    r["meta"]["duration_s"] = 3600.0
    seq = ",".join(["0"] + [f"{k}/{n}" for k in range(1, n)] + ["1"])
    lo = "0" if i == 0 else f"{i}/{n}"
    hi = "1" if i == n - 1 else f"{i + 1}/{n}"
    script = r["options"].setdefault("script", {})
    script["executionSegment"] = f"{lo}:{hi}"
    script["executionSegmentSequence"] = seq
    with open(f"{out}/hour-{i + 1}.json", "w") as f:
        json.dump(r, f)
print(f"wrote {n} files of 3600 seconds to {out}")
