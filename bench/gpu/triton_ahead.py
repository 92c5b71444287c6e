#!/usr/bin/env python3
"""bench/gpu/triton_ahead.py DIR [N] — can a Triton candidate's compile be done
ahead of its GPU slot, in a process that has no GPU (issue 45)? For each of
the first N candidates bench/problems_gen.py wrote into DIR (and the
tutorial's examples/problems/softmax/triton_softmax.py):

  ahead  a fresh python, CUDA_VISIBLE_DEVICES="": the problem's setup under
         torch's FakeTensorMode, the candidate's prepare(s) and run(s) with
         Triton told the target (sm_XY of this GPU) and every launch turned
         into a compile only (warmup), into cache A;
  hit    a fresh python on the GPU, TRITON_CACHE_DIR=A: the first call;
  cold   a fresh python on the GPU, an empty cache: the first call.

Prints a JSON line a step and a table; exit 0 whether or not it works (the
table says)."""
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, os, sys, time, importlib.util
t0 = time.perf_counter()
import torch, triton
t_imp = time.perf_counter() - t0
mode, prob_path, cand_path, rows, cols, cc = sys.argv[1:7]
params = {"rows": int(rows), "cols": int(cols)}

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m

out = {"mode": mode, "cand": os.path.basename(cand_path), "import_s": round(t_imp, 3)}
try:
    if mode == "ahead":
        from torch._subclasses.fake_tensor import FakeTensorMode
        from triton.backends.compiler import GPUTarget
        from triton.backends.nvidia.driver import CudaDriver
        from triton.runtime import driver as tdriver
        from triton.runtime.jit import JITFunction
        major, minor = int(cc) // 10, int(cc) % 10
        d = CudaDriver()
        d.get_current_device = lambda: 0
        d.get_device_capability = lambda *a: (major, minor)
        d.get_current_stream = lambda *a: 0
        d.set_current_device = lambda *a: None
        tdriver.set_active(d)

        class Ptr:
            def __init__(self, t):
                self.dtype = t.dtype
                self._p = (1 << 40) + t.storage_offset() * t.element_size()
            def data_ptr(self):
                return self._p

        orig = JITFunction.run
        compiled = []
        def run(self, *args, grid, warmup, **kw):
            conv = lambda a: Ptr(a) if isinstance(a, torch.Tensor) else a
            k = orig(self, *[conv(a) for a in args], grid=grid, warmup=True,
                     **{n: conv(v) for n, v in kw.items()})
            compiled.append(self.__name__)
            return k
        JITFunction.run = run
        # A problem's seeded generator on "cuda" needs the GPU: a CPU one
        # stands in (fake tensors hold no values).
        class Gen(torch.Generator):
            def __new__(cls, device=None):
                return torch._C.Generator()
        torch.Generator = Gen
        t1 = time.perf_counter()
        with FakeTensorMode(allow_non_fake_inputs=True):
            prob = load(prob_path, "prob")
            cand = load(cand_path, "cand")
            s = prob.setup(params, 12345)
            if hasattr(cand, "prepare"):
                cand.prepare(s)
            cand.run(s)
        out["compile_s"] = round(time.perf_counter() - t1, 3)
        out["compiled"] = compiled
        out["x"] = repr(s["x"])[:120]
    else:
        t1 = time.perf_counter()
        torch.cuda.init()
        prob = load(prob_path, "prob")
        cand = load(cand_path, "cand")
        s = prob.setup(params, 12345)
        if hasattr(cand, "prepare"):
            cand.prepare(s)
        torch.cuda.synchronize()
        out["setup_s"] = round(time.perf_counter() - t1, 3)
        t2 = time.perf_counter()
        cand.run(s)
        torch.cuda.synchronize()
        out["first_s"] = round(time.perf_counter() - t2, 4)
        t3 = time.perf_counter()
        cand.run(s)
        torch.cuda.synchronize()
        out["second_s"] = round(time.perf_counter() - t3, 5)
        ref = torch.softmax(s["x"].double(), -1)
        out["max_err"] = float((s["out"].double() - ref).abs().max())
except BaseException as e:  # noqa: BLE001
    import traceback
    out["error"] = "%s: %s" % (type(e).__name__, e)
    out["tb"] = traceback.format_exc()[-1500:]
print(json.dumps(out), flush=True)
'''


def child(mode, prob, cand, cache, cc, hide):
    env = dict(os.environ, TRITON_CACHE_DIR=cache)
    if hide:
        env["CUDA_VISIBLE_DEVICES"] = ""
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, mode, prob, cand, "512", "1024", str(cc)],
                       env=env, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - t0
    line = (p.stdout.strip().splitlines() or ["{}"])[-1]
    try:
        r = json.loads(line)
    except ValueError:
        r = {"error": "no JSON", "stdout": p.stdout[-800:], "stderr": p.stderr[-1500:]}
    r["wall_s"] = round(wall, 3)
    r["cache_files"] = sum(len(f) for _, _, f in os.walk(cache))
    print(json.dumps(r), flush=True)
    return r


def main():
    d = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import torch
    major, minor = torch.cuda.get_device_capability(0)
    cc = major * 10 + minor
    prob = os.path.join(d, "problem.py")
    cands = sorted(f for f in os.listdir(d) if f.startswith("tri"))[:n]
    paths = [os.path.join(d, c) for c in cands]
    paths.append(os.path.join(src, "examples/problems/softmax/triton_softmax.py"))
    rows = []
    for c in paths:
        a = tempfile.mkdtemp(prefix="ahead-")
        e = tempfile.mkdtemp(prefix="cold-")
        ra = child("ahead", prob, c, a, cc, True)
        rh = child("hit", prob, c, a, cc, False)
        rc = child("cold", prob, c, e, cc, False)
        rows.append((os.path.basename(c), ra, rh, rc))
    print("| candidate | ahead: compile s (wall) | files | hit: first call s | cold: first call s "
          "| errs hit/cold |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, ra, rh, rc in rows:
        print("| %s | %s (%s) | %s | %s | %s | %s / %s |" % (
            name, ra.get("compile_s", ra.get("error", "?")[:60]), ra.get("wall_s"),
            ra.get("cache_files"), rh.get("first_s", rh.get("error", "?")[:40]),
            rc.get("first_s", rc.get("error", "?")[:40]), rh.get("max_err"), rc.get("max_err")))


if __name__ == "__main__":
    main()
