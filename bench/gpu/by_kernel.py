#!/usr/bin/env python3
"""Where a sweep's runner time went, by kernel: the validate and profile
tasks' elapsed seconds (the runner's own clock) and the profile's timed
samples, summed per kernel, with the slowest rows; then the slot time's
phases (issue 32: which checks cost what). Usage: by_kernel.py REPORT.json"""
import json
import sys

d = json.load(open(sys.argv[1]))
per, rows = {}, []
for r in d.get("rows") or []:
    v, p = r.get("validation") or {}, r.get("profile") or {}
    ve, pe = v.get("elapsed_s") or 0, p.get("elapsed_s") or 0
    k = per.setdefault(r["kernel"], [0, 0.0, 0.0, 0.0, 0])
    k[0] += 1
    k[1] += ve
    k[2] += pe
    k[3] += p.get("measured_s") or 0
    k[4] += p.get("samples") or 0
    params = " ".join(f"{n}={x}" for n, x in sorted((r.get("params") or {}).items()))
    rows.append((ve + pe, ve, pe, r["kernel"], params))
print("kernel          rows  validate_s  profile_s  measured_s  samples")
for name, (n, ve, pe, ms, ns) in sorted(per.items(), key=lambda x: -(x[1][1] + x[1][2])):
    print(f"{name:15s} {n:4d} {ve:11.1f} {pe:10.1f} {ms:11.1f} {ns:8d}")
tv, tp = sum(x[1] for x in per.values()), sum(x[2] for x in per.values())
print(f"{'total':15s} {sum(x[0] for x in per.values()):4d} {tv:11.1f} {tp:10.1f}")
print("slowest rows (validate + profile s):")
for t, ve, pe, k, params in sorted(rows, reverse=True)[:12]:
    print(f"  {t:6.2f} = {ve:5.2f} + {pe:5.2f}  {k} {params}")
st = (d.get("schedule") or {}).get("slot_time") or {}
ph = st.get("phases_s") or {}
print("slot time phases: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(ph.items(), key=lambda x: -x[1])))
