#!/usr/bin/env python3
"""Tables for bench/k6.sh: python3 k6_table.py OUTDIR (medians over reps, per scenario)."""
import json
import os
import statistics
import sys


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def load(run):
    r = {}
    try:
        wall, user, sys_, rss = open(os.path.join(run, "time.txt")).read().split()[:4]
        r["cpu"] = float(user) + float(sys_)
        r["rss_mb"] = int(rss) / 1024
    except (OSError, ValueError):
        return None
    try:
        r["vus"] = int(open(os.path.join(run, "vus")).read())
    except (OSError, ValueError):
        r["vus"] = 0
    try:
        tg, other = open(os.path.join(run, "cpu.txt")).read().split()
        # Other processes' CPU during the run (clamped: tick accounting can dip below 0).
        r["target_cpu"], r["other_cpu"] = float(tg), max(0.0, float(other))
    except (OSError, ValueError):
        pass
    try:
        m = json.load(open(os.path.join(run, "summary.json")))["metrics"]
    except (OSError, ValueError, KeyError):
        return None
    r["reqs"] = num(m.get("http_reqs", {}).get("count")) or 0
    d = m.get("http_req_duration", {})
    r["p50"], r["p95"], r["p99"] = num(d.get("med")), num(d.get("p(95)")), num(d.get("p(99)"))
    failed = m.get("http_req_failed", {})
    # k6's legacy export: for a Rate, "passes" counts the true samples (failed requests).
    r["errors"] = num(failed.get("passes")) or 0
    r["dropped"] = num(m.get("dropped_iterations", {}).get("count")) or 0
    samples = []
    try:
        for line in open(os.path.join(run, "rss.txt")):
            t, kb = line.split()
            samples.append((float(t), int(kb) / 1024))
    except (OSError, ValueError):
        pass
    r["rss_samples"] = samples
    r["dir"] = run
    return r


def urls_extra(run):
    """The urls scenario: volley's result file size and the timed `volley summary` of it."""
    try:
        size = int(open(os.path.join(run, "result_bytes")).read())
        secs, kb = open(os.path.join(run, "summary_time.txt")).read().split()[:2]
    except (OSError, ValueError):
        return ""
    return (f"result file {size / 1e6:.2f} MB; `volley summary` of it: {float(secs):.2f} s, "
            f"peak RSS {int(kb) / 1024:.0f} MB")


def med(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(v) if v else None


def fmt(v, spec="{:.0f}"):
    return "–" if v is None else spec.format(v)


def main(out):
    scen = []
    for line in open(os.path.join(out, "scenarios.txt")):
        name, script, vus, dur = line.split()
        if name not in [s[0] for s in scen]:
            scen.append((name, script, int(vus), float(dur)))
    runs_dir = os.path.join(out, "runs")
    header = os.path.join(out, "header.md")
    if os.path.exists(header):
        print(open(header).read().rstrip())
        print()
    for name, script, vus, dur in scen:
        by_tool = {}
        for d in sorted(os.listdir(runs_dir)):
            sc, tool, rep = d.rsplit(".", 2)
            if sc != name:
                continue
            r = load(os.path.join(runs_dir, d))
            if r is not None:
                # A run may have had its own duration (urls: URLS_K6_DUR).
                try:
                    dur_run = float(open(os.path.join(runs_dir, d, "dur")).read())
                except (OSError, ValueError):
                    dur_run = dur
                r["rps"] = r["reqs"] / dur_run
                r["rpc"] = r["reqs"] / r["cpu"] if r["cpu"] else None
                r["kib_vu"] = r["rss_mb"] * 1024 / vus if vus else None
                by_tool.setdefault(tool, []).append(r)
        if not by_tool:
            continue
        print(f"### {name}: {script}, {vus} VUs, {dur:g} s")
        print()
        print("| tool | runs | requests | req/s | CPU-s | req/CPU-s | p50 ms | p95 ms | p99 ms "
              "| peak RSS MB | RSS/VU KiB | errors | target CPU-s | other CPU-s (max) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        summary = {}
        for tool in ("k6", "volley"):
            rows = by_tool.get(tool)
            if not rows:
                continue
            s = {k: med(rows, k) for k in ("reqs", "rps", "cpu", "rpc", "p50", "p95", "p99",
                                           "rss_mb", "kib_vu", "errors", "target_cpu")}
            others = [r["other_cpu"] for r in rows if r.get("other_cpu") is not None]
            s["other_max"] = max(others) if others else None
            summary[tool] = s
            print(f"| {tool} | {len(rows)} | {fmt(s['reqs'])} | {fmt(s['rps'])} | {fmt(s['cpu'], '{:.2f}')} "
                  f"| {fmt(s['rpc'])} | {fmt(s['p50'], '{:.2f}')} | {fmt(s['p95'], '{:.2f}')} "
                  f"| {fmt(s['p99'], '{:.2f}')} | {fmt(s['rss_mb'])} | {fmt(s['kib_vu'])} "
                  f"| {fmt(s['errors'])} | {fmt(s['target_cpu'], '{:.2f}')} | {fmt(s['other_max'], '{:.2f}')} |")
        if "k6" in summary and "volley" in summary:
            k, v = summary["k6"], summary["volley"]
            ratio = lambda a, b: "–" if not a or not b else f"{a / b:.2f}×"
            print()
            print(f"volley ÷ k6: req/CPU-s {ratio(v['rpc'], k['rpc'])}, req/s {ratio(v['rps'], k['rps'])}, "
                  f"peak RSS {ratio(v['rss_mb'], k['rss_mb'])}")
            # Per-run ratios within a rep (tools interleaved): the spread shows the noise.
            reps = []
            for rv, rk in zip(by_tool["volley"], by_tool["k6"]):
                if rv.get("rpc") and rk.get("rpc"):
                    reps.append(rv["rpc"] / rk["rpc"])
            if reps:
                print(f"(req/CPU-s ratio per rep: {', '.join(f'{x:.2f}' for x in reps)})")
        if name == "rate":
            # The achieved arrival rate against the asked one (the script's RATE).
            print()
            for tool, rows in by_tool.items():
                for r in rows:
                    print(f"- {tool}: {r['rps']:.0f} iterations/s achieved, {r['dropped']:.0f} dropped, "
                          f"{r['cpu']:.2f} CPU-s over {dur:g} s ({r['cpu'] / dur * 100:.0f} % of one core)")
        if name in ("flat", "urls"):
            print()
            for tool, rows in by_tool.items():
                for r in rows:
                    smp = r["rss_samples"]
                    if not smp:
                        continue
                    at30 = min(smp, key=lambda x: abs(x[0] - 30))
                    # The last samples are the tool shutting down (VUs freed): skip 3 s.
                    end = smp[-4] if len(smp) > 4 else smp[-1]
                    print(f"- {tool}: RSS {at30[1]:.0f} MB at {at30[0]:.0f} s, {end[1]:.0f} MB at "
                          f"{end[0]:.0f} s (end ÷ 30 s = {end[1] / at30[1]:.3f}), peak {r['rss_mb']:.0f} MB")
                    extra = urls_extra(r["dir"]) if name == "urls" else ""
                    if extra:
                        print(f"  {extra}")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
