#!/usr/bin/env python3
"""bench/gpu/ctx_ahead.py [N] — issue 45: what a runner whose CUDA context is
made before its task arrives would save, and what making a context costs a
profile timing on the same GPU meanwhile.

Part 1. A parent imports torch (the warm runner); N children are forked one
after another, alternating two kinds: "now" (the child makes its context
when its task comes: cuInit, the primary context current, CUPTI enabled,
torch's first tensor, a launch and sync) and "ahead" (the child makes the
context and enables CUPTI as soon as it is forked, says so, and waits; the
task comes 0.3 s later, and only torch's first tensor, the launch and sync
are left). Prints the median from the task's arrival to its first sync.

Part 2. One process times a ~20 us kernel with CUDA events (a sync after
each sample, as a profile's samples are), 4 rounds of 3 s each: quiet, and
with another process making a context, holding it 0.2 s and exiting, over
and over (what a spare runner made during a profile would do, and a retired
runner's exit). Prints each round's median, p90 and p99 in us and the share
of samples over 1.2 x the quiet median."""
import ctypes
import os
import statistics
import subprocess
import sys
import time

# The CUPTI activity callbacks and loader of ctx_preload.py (beside this file).
from ctx_preload import _done, _req, load_cupti


def context():
    cu = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOW)
    assert cu.cuInit(0) == 0
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    cu.cuDeviceGet(ctypes.byref(dev), 0)
    assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    cu.cuCtxSetCurrent(ctx)
    cp = load_cupti()
    if cp:
        cp.cuptiActivityRegisterCallbacks(_req, _done)
        cp.cuptiActivityEnable(10)  # CONCURRENT_KERNEL


def task():
    import torch
    x = torch.ones(1 << 20, device="cuda")
    y = x * 2
    torch.cuda.synchronize()
    return float(y[0])


def part1(n):
    import torch  # noqa: F401  the warm runner's import
    res = {"now": [], "ahead": []}
    for i in range(n):
        kind = "now" if i % 2 == 0 else "ahead"
        r, w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(go_w)
            if kind == "ahead":
                context()
                os.write(w, b"r")
            os.read(go_r, 8)
            t0 = time.perf_counter()
            if kind == "now":
                context()
            task()
            os.write(w, ("%.3f\n" % ((time.perf_counter() - t0) * 1e3)).encode())
            os._exit(0)
        os.close(w)
        os.close(go_r)
        if kind == "ahead":
            assert os.read(r, 1) == b"r"
        time.sleep(0.3)
        os.write(go_w, b"g")
        res[kind].append(float(os.read(r, 64).decode().split()[0]))
        os.close(r)
        os.close(go_w)
        os.waitpid(pid, 0)
    for k, v in res.items():
        print("part1 %-5s task's arrival to its first sync: median %.1f ms (min %.1f, max %.1f, n %d)"
              % (k, statistics.median(v), min(v), max(v), len(v)))


CHURN = r"""
import ctypes, os, sys, time
while True:
    pid = os.fork()
    if pid == 0:
        cu = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOW)
        cu.cuInit(0)
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        cu.cuDeviceGet(ctypes.byref(dev), 0)
        cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
        time.sleep(0.2)
        os._exit(0)
    os.waitpid(pid, 0)
"""


def part2():
    import torch
    x = torch.ones(1 << 22, device="cuda")
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(200):
        x.mul_(1.0000001)
    torch.cuda.synchronize()
    quiet = None
    for rnd, churn in enumerate([False, True, False, True]):
        p = subprocess.Popen([sys.executable, "-c", CHURN]) if churn else None
        if p:
            time.sleep(0.3)
        v = []
        end = time.perf_counter() + 3.0
        while time.perf_counter() < end:
            s.record()
            x.mul_(1.0000001)
            e.record()
            e.synchronize()
            v.append(s.elapsed_time(e) * 1e3)
        if p:
            p.kill()
            p.wait()
            time.sleep(0.5)
        v.sort()
        med = statistics.median(v)
        quiet = quiet or med
        over = sum(1 for t in v if t > 1.2 * quiet) / len(v) * 100
        print("part2 round %d %-14s samples %6d median %.2f us p90 %.2f p99 %.2f max %.1f; over 1.2x quiet %.2f %%"
              % (rnd, "contexts made" if churn else "quiet", len(v), med, v[int(len(v) * .9)],
                 v[int(len(v) * .99)], v[-1], over))


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    if len(sys.argv) > 2 and sys.argv[2] == "part2":
        part2()
    else:
        p = subprocess.run([sys.executable, __file__, str(n), "part2"])
        part1(n)
