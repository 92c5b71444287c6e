#!/usr/bin/env python3
"""bench/gpu/ctx_preload.py [N [MODES]] — where a forked runner's CUDA context time
goes (issue 45), and what the warm runner could do before the fork. A parent
imports torch (as the warm runner does) and, in mode "pre", also loads
libcuda and libcupti (dlopen only: no cuInit, no thread); it forks N
children one after another, each doing what a candidate's runner does first:
dlopen libcuda, cuInit, the primary context made current, libcupti loaded
and its activity enabled, torch's first tensor on the GPU, a launch and its
sync. Prints each step's median in ms, per mode; modes alternate in two
rounds so that drift shows. Other modes: "ahead" (each child forked 0.3 s
before it starts), "-spin" (the parent busy 0.3 s after a child starts),
"overlap" (the next child forked as soon as the last one has reported,
while it exits), "keeper-init" and "keeper-ctx" (another process holds the
GPU meanwhile: after cuInit, or with a context too); a mode ending in
"-shm" gives each child a private /dev/shm first, "-net" a network namespace
of its own, as a kfleet runner has."""
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


def private_shm():
    """A /dev/shm of the child's own, as a kfleet runner has (contain.c)."""
    libc = ctypes.CDLL(None, use_errno=True)
    MS_REC, MS_PRIVATE = 16384, 1 << 18
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        raise OSError(ctypes.get_errno(), "unshare")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "mount private")
    if libc.mount(b"kf-shm", b"/dev/shm", b"tmpfs", 0, None) != 0:
        raise OSError(ctypes.get_errno(), "mount /dev/shm")


def child(w, mode=""):
    import torch

    if mode.endswith("shm"):
        private_shm()
    if mode.endswith("net"):  # a network namespace of its own, as a runner's sandbox makes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), "unshare net")
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


KEEPER = r"""
import ctypes, os, sys
cu = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOW)
rc = cu.cuInit(0)
if sys.argv[1] == "ctx":
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    cu.cuDeviceGet(ctypes.byref(dev), 0)
    cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
print(rc, flush=True)
sys.stdin.read()
"""


def parent(mode, n):
    import torch  # noqa: F401  the warm runner's import

    keeper = None
    if mode.startswith("keeper"):
        # Another process holding the GPU open meanwhile: cuInit alone
        # ("keeper-init") or a context too ("keeper-ctx").
        keeper = subprocess.Popen([sys.executable, "-c", KEEPER, mode.split("-")[1]],  # init, ctx
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        keeper.stdout.readline()
        time.sleep(1.0)

    if mode == "pre":
        ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOW)
        load_cupti()
    out, pending = [], []
    for _ in range(n):
        r, w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.close(go_w)
            if mode.startswith("ahead"):
                os.read(go_r, 1)  # forked ahead: waits for its task
            child(w, mode)
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
        if mode == "overlap":
            # The next child forked while this one exits (its context torn
            # down), as the agent starts a task's runner once the last
            # one's Result is in, before that runner has exited.
            pending.append(pid)
        else:
            os.waitpid(pid, 0)
        out.append(line.strip())
    for pid in pending:
        os.waitpid(pid, 0)
    if keeper:
        keeper.stdin.close()
        keeper.wait()
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
