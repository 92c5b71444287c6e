#!/usr/bin/env python3
"""Each row of bench/gpu/cheats.yaml against its honest twin, as a Markdown
table (bench/gpu/run.sh cheats). Reads only the sweep's report JSON.

A cheat passes the issue-29 bar when it failed (validation or profile), or is
flagged (outside-stream, impossible), or is no faster than its twin beyond
the two medians' noise; "CHEAT LOOKS FASTER" marks one that is not. The twin
of a Triton mode is tr_softmax_cheats mode 0 of the same rows and cols; of a
CUDA side = 1 row, its side = 0 row.

usage: cheats_summary.py REPORT.json
"""
import json
import sys


def med(r):
    p = r.get("profile") or {}
    return p.get("median_s") if p.get("state") == "succeeded" else None


def twin_key(r):
    p = dict(r["params"])
    if "mode" in p:
        p = {"rows": p["rows"], "cols": p["cols"], "mode": 0}
        return ("tr_softmax_cheats", tuple(sorted(p.items())))
    if "side" in p:
        p["side"] = 0
    return (r["kernel"], tuple(sorted(p.items())))


def main():
    rows = json.load(open(sys.argv[1]))["rows"]
    by = {(r["kernel"], tuple(sorted(r["params"].items()))): r for r in rows}
    print("| kernel | params | validation | profile | median | twin median | twin / this | "
          "noise % | flags | verdict |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
    bad = 0
    for r in rows:
        twin = by.get(twin_key(r))
        v, p = r.get("validation") or {}, r.get("profile") or {}
        m, tm = med(r), med(twin) if twin else None
        flags = [f for f in r.get("flags") or [] if f != "noisy"]
        noise = (p.get("noise_pct") or 0) + ((twin or {}).get("profile") or {}).get("noise_pct", 0)
        ratio = tm / m if m and tm else None
        if twin is r:
            verdict = "honest twin"
        elif "failed" in flags:
            err = (p.get("error") or v.get("error") or "").split("\n")[0]
            verdict = "caught: " + err[:90]
        elif "outside-stream" in flags or "impossible" in flags:
            verdict = "flagged " + ",".join(flags)
        elif ratio is None:
            verdict = "no twin to compare"
        elif ratio <= 1 + 3 * noise / 100:
            verdict = "timed doing the work"
        else:
            verdict = "CHEAT LOOKS FASTER"
            bad += 1
        params = " ".join(f"{k}={x}" for k, x in r["params"].items())
        print(f"| {r['kernel']} | {params} | {v.get('state')} | {p.get('state')} | "
              f"{m * 1e6:.1f} us | " if m else f"| {r['kernel']} | {params} | {v.get('state')} | "
              f"{p.get('state')} | - | ", end="")
        print(f"{tm * 1e6:.1f} us | " if tm else "- | ", end="")
        print(f"{ratio:.3f} | " if ratio else "- | ", end="")
        print(f"{noise:.1f} | {','.join(flags) or '-'} | {verdict} |")
    print(f"\n{bad} cheat(s) looking faster than their honest twin")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
