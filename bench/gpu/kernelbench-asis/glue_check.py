"""The runner's adapters (agent/runner/pyglue.py + pyformats.py + pylayout.py) on this
GPU, without kfleet around them: KernelBench's 19_ReLU at its own size
(4096 x 393216) as a problem, its Model, a load_inline ModelNew, a Triton
ModelNew and zeros as candidates, each judged here with the problem's
tolerances (atol + rtol |ref| and the relative-L2 0.5 kfleet keeps); and
23_Softmax at 16 x 16384, where zeros are within KernelBench's atol.
Run from the repository root: python3 bench/gpu/kernelbench-asis/glue_check.py
[KB_LEVEL1_DIR] (default: tests/data/problems/kernelbench). Without a GPU it
runs ReLU small on the CPU, with Model and zeros only."""
import os
import sys
import time

import torch

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
here = os.path.dirname(os.path.abspath(__file__))
kb = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests/data/problems/kernelbench")
glue = {"__name__": "kfleet_glue"}
src = "".join(open(os.path.join(root, "agent/runner", f)).read() for f in ("pyglue.py", "pyformats.py", "pylayout.py"))
exec(compile(src, "<string>", "exec"), glue)


def judge(out, ref, atol, rtol):
    out, ref = out.double(), ref.double()
    close = bool(((out - ref).abs() <= atol + rtol * ref.abs()).all())
    rel = float((out - ref).norm() / ref.norm())
    return close, rel


def check(problem, params, cands, seed=0x5EED):
    glue["_cand"] = None
    r = glue["load"](os.path.join(kb, problem), problem, problem[:-3], CUDA, "", "", "", 1)
    assert not r.startswith("E"), r
    t = glue["tolerances"]("float32 " + params).split()
    atol, rtol = float(t[3]), float(t[4])
    h = int(glue["setup"](params, seed))
    ref = glue["_states"][h]["ref"].clone()
    glue["teardown"](h)
    for c in cands:
        path = c if os.path.isabs(c) else os.path.join(kb, c)
        t0 = time.time()
        e = glue["load_candidate"](path, os.path.basename(path), os.path.basename(path)[:-3])
        assert e == "", e
        h = int(glue["setup"](params, seed))
        st = glue["_states"][h]
        st["out"].fill_(float("nan"))
        e = glue["run"](h)
        assert e == "", e
        if CUDA:
            torch.cuda.synchronize()
        close, rel = judge(st["out"], ref, atol, rtol)
        print("%-14s %-26s allclose(atol=%g, rtol=%g) %-5s rel-L2 %.3g -> %s  (%.1f s)"
              % (problem[:-3], os.path.basename(path), atol, rtol, close, rel,
                 "PASS" if close and rel <= 0.5 else "FAIL", time.time() - t0))
        glue["teardown"](h)


os.environ.setdefault("TORCH_EXTENSIONS_DIR", "/tmp/kf-glue-ext")
CUDA = int(torch.cuda.is_available())
print(torch.__version__, torch.cuda.get_device_name() if CUDA else "no GPU: small sizes, no CUDA candidates")
relu = ("relu_inline.py", "relu_triton.py", "relu_zeros.py") if CUDA else ("relu_zeros.py",)
check("19_ReLU.py", "" if CUDA else "batch_size=16,dim=1024",
      ["19_ReLU.py"] + [os.path.join(here, f) for f in relu])
check("23_Softmax.py", "batch_size=16,dim=16384", ["23_Softmax.py", "softmax_zeros.py"])
