#!/usr/bin/env python3
"""bench/gpu/ctx_preload.py [N [MODES]] — where a forked runner's CUDA context time
goes (issue 45), and what the warm runner could do before the fork. A parent
imports torch (as the warm runner does) and, in mode "pre", also loads
libcuda and libcupti (dlopen only: no cuInit, no thread); it forks N
children one after another, each doing what a candidate's runner does first:
dlopen libcuda, cuInit, the primary context made current, libcupti loaded
and its activity enabled, torch's first tensor on the GPU, a launch and its
sync. Prints each step's median in ms, per mode; modes alternate in two
rounds so that drift shows."""
import ctypes
import os
import statistics
import subprocess
import sys
import time

CUPTI_NAMES = ["libcupti.so.13", "libcupti.so.12", "libcupti.so"]
CUPTI_DIRS = ["/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/lib64"]


def load_cupti():
    for n in CUPTI_NAMES:
        try:
            return ctypes.CDLL(n, mode=os.RTLD_NOW)
        except OSError:
            pass
    for d in CUPTI_DIRS:
        p = os.path.join(d, "libcupti.so")
        if os.path.exists(p):
            return ctypes.CDLL(p, mode=os.RTLD_NOW)
    return None


BUF_REQ = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                           ctypes.POINTER(ctypes.c_size_t))
BUF_DONE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                            ctypes.c_size_t)
_bufs = []


@BUF_REQ
def _req(buf, size, maxrec):
    b = ctypes.create_string_buffer(1 << 20)
    _bufs.append(b)
    buf[0] = ctypes.cast(b, ctypes.c_void_p)
    size[0] = 1 << 20
    maxrec[0] = 0


@BUF_DONE
def _done(ctx, stream, buf, size, valid):
    pass


def child(w):
    import torch

    t = [time.perf_counter()]
    cu = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOW)
    t.append(time.perf_counter())
    rc_init = cu.cuInit(0)
    t.append(time.perf_counter())
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    cu.cuDeviceGet(ctypes.byref(dev), 0)
    cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    cu.cuCtxSetCurrent(ctx)
    t.append(time.perf_counter())
    cp = load_cupti()
    t.append(time.perf_counter())
    rc_cb = cp.cuptiActivityRegisterCallbacks(_req, _done) if cp else -1
    rc_en = cp.cuptiActivityEnable(10) if cp else -1  # CONCURRENT_KERNEL
    t.append(time.perf_counter())
    x = torch.ones(1024, device="cuda")
    t.append(time.perf_counter())
    y = x * 2
    torch.cuda.synchronize()
    t.append(time.perf_counter())
    steps = [(t[i + 1] - t[i]) * 1e3 for i in range(len(t) - 1)]
    os.write(w, (" ".join("%.3f" % s for s in steps) + " %d %d %d\n" % (rc_init, rc_cb, rc_en)).encode())
    os._exit(0)


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def parent(mode, n):
    import torch  # noqa: F401  the warm runner's import

    if mode == "pre":
        ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOW)
        load_cupti()
    out = []
    for _ in range(n):
        r, w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(go_w)
            if mode.startswith("ahead"):
                os.read(go_r, 1)  # forked ahead: waits for its task
            child(w)
        os.close(w)
        os.close(go_r)
        if mode.startswith("ahead"):
            time.sleep(0.3)
            os.write(go_w, b"x")
        if mode.endswith("spin"):
            spin(0.3)  # the parent busy right after the child starts (the warm's learn)
        os.close(go_w)
        line = os.read(r, 4096).decode()
        os.close(r)
        os.waitpid(pid, 0)
        out.append(line.strip())
    print("\n".join(out))


NAMES = ["dlopen libcuda", "cuInit", "primary ctx", "dlopen cupti", "cupti enable", "torch first tensor",
         "launch+sync"]

if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--parent":
        parent(sys.argv[2], int(sys.argv[3]))
        sys.exit(0)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    modes = sys.argv[2].split(",") if len(sys.argv) > 2 else ["none", "pre"]
    res = {m: [] for m in modes}
    for rnd in range(2):
        for mode in modes:
            p = subprocess.run([sys.executable, __file__, "--parent", mode, str(n)], capture_output=True,
                               text=True)
            if p.returncode:
                print(p.stderr[-2000:])
            for line in p.stdout.split("\n"):
                if line.strip():
                    res[mode].append(line.split())
    for mode, rows in res.items():
        if not rows:
            continue
        rcs = {tuple(r[len(NAMES):]) for r in rows}
        meds = [statistics.median(float(r[i]) for r in rows) for i in range(len(NAMES))]
        print("ctx_preload %-10s (%d children, rc init/cb/enable %s): " % (mode, len(rows), rcs) +
              ", ".join("%s %.1f" % (nm, m) for nm, m in zip(NAMES, meds)) + ", total %.1f ms" % sum(meds))
