#!/usr/bin/env python3
"""bench/gpu/jit_cost.py — what a new runner's CUDA start costs, step by
step, on this GPU: cuInit, the primary context, the L2-flush buffer (2 x L2,
allocated and set), and loading the runner's own PTX modules, read from
their C sources (agent/runner/cudrv_ptx.c: the blocking kernel, flush and
stamp, each entry renamed with a random suffix per runner as
kf_cudrv_ptx_named does; agent/runner/devcmp.c: the output compare) — with
the driver's JIT cache cold (a fresh CUDA_CACHE_PATH) and warm (the same
path again, the next runner). Each case in a fresh process, three times;
medians in ms. Needs only libcuda."""
import ctypes
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import ctypes, json, os, sys, time
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise SystemExit("%s: CUresult %d" % (what, r))
out = {}
t = time.perf_counter(); ck(cu.cuInit(0), "cuInit"); out["init"] = time.perf_counter() - t
dev = ctypes.c_int(); ck(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
t = time.perf_counter()
ck(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "retain")
ck(cu.cuCtxSetCurrent(ctx), "current")
out["context"] = time.perf_counter() - t
l2 = ctypes.c_int(); cu.cuDeviceGetAttribute(ctypes.byref(l2), 38, dev)  # L2_CACHE_SIZE
n = 2 * l2.value
p = ctypes.c_uint64()
t = time.perf_counter()
ck(cu.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)), "alloc")
ck(cu.cuMemsetD8_v2(p, 0x5A, ctypes.c_size_t(n)), "memset")
ck(cu.cuCtxSynchronize(), "sync")
out["flush_buffer"] = time.perf_counter() - t
for name in sys.argv[1:]:
    text = open(name, "rb").read() + b"\0"
    mod = ctypes.c_void_p()
    t = time.perf_counter()
    ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(text)), "load " + name)
    out["load " + os.path.basename(name)] = time.perf_counter() - t
print(json.dumps(out))
'''


def child(env, files):
    r = subprocess.run([sys.executable, "-c", CHILD] + files, env=env, capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout)


LIT = r'"((?:[^"\\]|\\.)*)"'


def c_string(path, name, header):
    """The C string literal `name[] = "..." MACRO "...";` of a source file,
    its macros' literals (#define in header) spliced in."""
    macros = {}
    for m in re.finditer(r"#define (KF_PTX_\w+)((?:.*\\\n)*.*)", open(header).read()):
        macros[m.group(1)] = "".join(re.findall(LIT, m.group(2)))
    src = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    i = src.index(name + "[] =")
    body = src[i + len(name) + 4:src.index(";\n", i)]
    parts = re.findall(LIT + r"|(KF_PTX_\w+)", body)
    text = "".join(lit if lit or not mac else macros[mac] for lit, mac in parts)
    return text.encode().decode("unicode_escape")


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    header = os.path.join(root, "agent/runner/cudrv_ptx.h")
    block = c_string(os.path.join(root, "agent/runner/cudrv_ptx.c"), "block_ptx", header)
    d = tempfile.mkdtemp(prefix="kf-ptx-")
    blocks = []
    for i in range(6):
        suffix = "_kf" + secrets.token_hex(8)
        blocks.append(os.path.join(d, "block%d.ptx" % i))
        with open(blocks[-1], "w") as f:
            f.write(re.sub(r"(\.entry kf_\w+)\(", lambda m: m.group(1) + suffix + "(", block))
    devcmp = os.path.join(d, "devcmp.ptx")
    with open(devcmp, "w") as f:
        f.write(c_string(os.path.join(root, "agent/runner/devcmp.c"), "kf_devcmp_ptx", header))
    rows = {}
    for rep in range(3):
        cache = tempfile.mkdtemp(prefix="kf-jit-")
        env = dict(os.environ, CUDA_CACHE_PATH=cache)
        # A runner: its blocking module under a name of its own, and the
        # compare module; then the next runner with the same cache.
        for case, files in (("cold", [blocks[2 * rep], devcmp]),
                            ("warm cache", [blocks[2 * rep + 1], devcmp])):
            for k, v in child(env, files).items():
                k = k.replace(os.path.basename(blocks[2 * rep]), "block (a runner's name)")
                k = k.replace(os.path.basename(blocks[2 * rep + 1]), "block (a runner's name)")
                rows.setdefault((case, k), []).append(v * 1e3)
    print("| case | step | ms (median of 3) | all |")
    print("| --- | --- | --- | --- |")
    for (case, k), v in rows.items():
        print("| %s | %s | %.1f | %s |" % (case, k, statistics.median(v),
                                         ", ".join("%.1f" % x for x in v)))


if __name__ == "__main__":
    main()
