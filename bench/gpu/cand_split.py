#!/usr/bin/env python3
"""bench/gpu/cand_split.py REPORT.json [NAME] — a problem sweep's slot time per
candidate-configuration (issue 45): each row's validate and profile tasks'
runner phases (v.NAME, p.NAME), the mean over rows, largest first, and the
costliest rows; the next lever to pull is the top line."""
import json
import signal
import statistics
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly

d = json.load(open(sys.argv[1]))
name = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
rows, tot, by_node = [], {}, {}
for r in d["rows"]:
    split, el = {}, 0.0
    for key, t in (("v", r.get("validation")), ("p", r.get("profile"))):
        if not t or t.get("elapsed_s") is None:
            continue
        el += t["elapsed_s"]
        ph = t.get("phases_s") or {}
        for k, v in ph.items():
            split[f"{key}.{k}"] = split.get(f"{key}.{k}", 0) + v
        split[f"{key}.other"] = max(0.0, t["elapsed_s"] - sum(ph.values()))
    if not split:
        continue
    rows.append((el, r.get("kernel"), r.get("params"), split))
    node = r.get("node") or "-"
    by_node.setdefault(node, []).append(split)
    for k, v in split.items():
        tot[k] = tot.get(k, 0) + v
if not rows:
    sys.exit(f"{name}: no row with a task's phases")
n = len(rows)
els = [x[0] for x in rows]
print(f"{name}: {n} candidate-configurations, runner time a row: mean {sum(els) / n:.2f} s, "
      f"median {statistics.median(els):.2f} s")
print(f"{name}: mean a row: " + ", ".join(f"{k} {v / n:.3f}" for k, v in sorted(tot.items(), key=lambda kv: -kv[1]) if v / n >= 0.0005))
for el, k, p, s in sorted(rows, key=lambda x: -x[0])[:5]:
    top = sorted(s.items(), key=lambda kv: -kv[1])[:6]
    print(f"{name}: costly {k} {json.dumps(p)} {el:.2f} s: " + ", ".join(f"{a} {b:.2f}" for a, b in top))
# Several nodes (one agent a GPU): the same split a node, its largest
# phases, so a phase that grows with the fleet shows against one GPU's.
if len(by_node) > 1:
    for node, splits in sorted(by_node.items()):
        keys = {}
        for s in splits:
            for k, v in s.items():
                keys[k] = keys.get(k, 0) + v
        m = len(splits)
        print(f"{name}: node {node}: {m} rows, runner time a row {sum(keys.values()) / m:.3f} s: " +
              ", ".join(f"{k} {v / m:.3f}" for k, v in sorted(keys.items(), key=lambda kv: -kv[1])[:10]))
