#!/usr/bin/env python3
"""bench/gpu/fork_hooks.py — what a fork of a warm interpreter (one that
imported numpy, torch and Triton, as agent/runner/pywarm.py does) costs, and
which at-fork hook takes it: every os.register_at_fork callable the imports
register is wrapped and timed; the fork is timed from the parent's call to
the child's first statement. Prints JSON lines, medians of 7 forks."""
import json
import os
import statistics
import sys
import time

hooks = {"before": [], "after_in_parent": [], "after_in_child": []}
orig = os.register_at_fork


def timed(kind, fn):
    name = "%s.%s" % (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", repr(fn)))
    rec = {"name": name, "s": []}
    hooks[kind].append(rec)

    def w():
        t0 = time.perf_counter()
        try:
            fn()
        finally:
            rec["s"].append(time.perf_counter() - t0)
    return w


def reg(**kw):
    orig(**{k: timed(k, v) for k, v in kw.items()})


os.register_at_fork = reg
t0 = time.perf_counter()
args = sys.argv[1:] or ["numpy", "torch", "triton"]
mods = [m for m in args if not m.startswith("+")]
for m in mods:
    __import__(m)
if "+blas" in args:  # thread pools started, as a kernel's host code would
    import numpy as np
    import torch
    a = np.ones((512, 512), dtype=np.float32)
    a @ a
    torch.ones(512, 512) @ torch.ones(512, 512)
if "+triton_key" in args:
    from triton.runtime import cache as tcache
    tcache.triton_key()
print(json.dumps({"imports": mods, "import_s": round(time.perf_counter() - t0, 3),
                  "threads": len(os.listdir("/proc/self/task"))}), flush=True)
os.register_at_fork = orig

forks, kids = [], []
for i in range(7):
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        t1 = time.perf_counter()
        child = {h["name"]: h["s"][-1] for h in hooks["after_in_child"] if h["s"]}
        os.write(w, json.dumps({"to_child_s": t1 - t0, "hooks": child}).encode())
        os._exit(0)
    t_parent = time.perf_counter() - t0
    os.close(w)
    data = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        data += b
    os.close(r)
    os.waitpid(pid, 0)
    d = json.loads(data)
    forks.append((t_parent, d["to_child_s"]))
    kids.append(d["hooks"])
med = lambda xs: round(statistics.median(xs) * 1e3, 3)  # noqa: E731
print(json.dumps({"fork_return_in_parent_ms": med([f[0] for f in forks]),
                  "fork_to_child_first_line_ms": med([f[1] for f in forks])}), flush=True)
for kind in ("before", "after_in_parent"):
    for h in hooks[kind]:
        if h["s"]:
            print(json.dumps({"kind": kind, "hook": h["name"], "median_ms": med(h["s"])}), flush=True)
names = sorted({n for k in kids for n in k})
for n in names:
    print(json.dumps({"kind": "after_in_child", "hook": n,
                      "median_ms": med([k[n] for k in kids if n in k])}), flush=True)
