#!/usr/bin/env python3
"""vs_base.py BASE.json NEW.json [BASE2.json NEW2.json ...] — issue 43's
"honest medians stay within 1 % of today's and within 5 % of ncu": each
row of the new reports against the same row (kernel, params) of the base
reports run in the same device session, and each new median against ncu's
gpu__time_duration for that row. Pairs of files are (base, new) runs;
a row's figures are the median over the pairs. Prints a Markdown table and
the largest differences, from the reports alone."""
import json
import statistics
import sys


def rows(path):
    out = {}
    for r in json.load(open(path))["rows"]:
        p = r.get("profile") or {}
        if p.get("median_s"):
            # ncu's time per run of the kernel, as summarize.py reads it.
            n = next((m["value"] * (1e-9 if m["unit"] in ("ns", "nsecond") else 1.0)
                      for m in p.get("ncu") or []
                      if m["name"] == "gpu__time_duration.sum" and m["kernel"] == "(per run)"), None)
            out[(r["kernel"], json.dumps(r["params"], sort_keys=True))] = (p["median_s"], n)
    return out


def main(a):
    pairs = [(rows(a[i]), rows(a[i + 1])) for i in range(0, len(a) - 1, 2)]
    keys = sorted(set.intersection(*[set(b) & set(n) for b, n in pairs]))
    print("| kernel | params | base µs | new µs | new vs base | ncu µs | new vs ncu |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    worst_b = worst_n = 0.0
    for k in keys:
        d = statistics.median([(n[k][0] / b[k][0] - 1) * 100 for b, n in pairs])
        bm = statistics.median([b[k][0] for b, _ in pairs]) * 1e6
        nm = statistics.median([n[k][0] for _, n in pairs]) * 1e6
        nc = [n[k][1] for _, n in pairs if n[k][1]]
        ncm = statistics.median(nc) * 1e6 if nc else None
        vn = (nm / ncm - 1) * 100 if ncm else None
        worst_b = max(worst_b, abs(d))
        if vn is not None:
            worst_n = max(worst_n, abs(vn))
        print("| %s | %s | %.3f | %.3f | %+.2f %% | %s | %s |" % (
            k[0], k[1], bm, nm, d, "%.3f" % ncm if ncm else "-", "%+.2f %%" % vn if vn is not None else "-"))
    print("\n%d rows: largest |new vs base| %.2f %% (target 1 %%), largest |new vs ncu| %.2f %% (target 5 %%)"
          % (len(keys), worst_b, worst_n))


if __name__ == "__main__":
    main(sys.argv[1:])
