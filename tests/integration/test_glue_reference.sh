#!/usr/bin/env bash
# The glue's reference() (agent/runner/pyglue.py), run as the runner runs it
# (pyglue.py with pyformats.py, pylayout.py and pywarm.py in one namespace) in the node's Python: a
# problem's reference written into the harness's buffer in f64 (width 8) and
# in f32 (width 4, for a reference its file keeps in f32), for a numpy
# problem and for a torch (CPU) KernelBench problem, whose reference is
# copied in pieces (the piece made small here so that several are copied,
# the last one short). Each width's values are the problem's own (f32: the
# doubles narrowed), every element written; a wrong element count or shape
# is refused before anything is written. And where a host state's arrays
# are placed (pylayout.py, issue 43 item 5): those setup() made that the
# state alone holds each at its own offset within a 4 KiB page, the same in
# every set, their values kept; a view and an array the problem still holds
# left where they are.
source "$(dirname "$0")/lib.sh"

export KF_PYTHON=/usr/bin/python3
"$KF_PYTHON" -c 'import numpy, torch' 2>"$T/imp.err" ||
  fail "$KF_PYTHON has no numpy or torch (make test-build installs both): $(tail -1 "$T/imp.err")"
cat >"$T/kb_relu.py" <<'PY'
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 3.0 + 0.25

batch_size = 7
dim = 13

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
PY
"$KF_PYTHON" - "$KF_SRC" "$T/kb_relu.py" "$T/placed.py" <<'PY' || fail "the glue's reference() is wrong"
import ctypes, sys
import numpy as np
src, kb = sys.argv[1], sys.argv[2]
ns = {"__name__": "kfleet_glue"}
code = "".join(open(src + "/agent/runner/" + f).read()
               for f in ("pyglue.py", "pyformats.py", "pylayout.py", "pywarm.py"))
exec(compile(code, "pyglue.py", "exec"), ns)
ns["_REF_PIECE"] = 10  # 91 elements: ten pieces, the last of one element

def check(path, name, params, expect_n):
    r = ns["load"](path, name + ".py", name, 0, problem=1)
    assert not r.startswith("E"), r
    h = int(ns["setup"](params, 12345))
    out = ns["output"](h)
    assert not out.startswith("E"), out
    n = int(out.split()[1])
    assert n == expect_n, (n, expect_n)
    # 8 guard elements past each buffer: nothing is written beyond n.
    f64 = (ctypes.c_double * (n + 8))()
    f32 = (ctypes.c_float * (n + 8))()
    ctypes.memset(f64, 0xFF, (n + 8) * 8)
    ctypes.memset(f32, 0xFF, (n + 8) * 4)
    assert ns["reference"](h, ctypes.addressof(f64), n) == ""
    assert ns["reference"](h, ctypes.addressof(f32), n, 4) == ""
    assert bytes(f64)[n * 8:] == b"\xff" * 64 and bytes(f32)[n * 4:] == b"\xff" * 32, \
        "reference() wrote past the buffer"
    a64, a32 = np.frombuffer(f64, np.float64)[:n], np.frombuffer(f32, np.float32)[:n]
    assert np.isfinite(a64).all() and np.isfinite(a32).all(), "an element left unwritten"
    assert (a32 == a64.astype(np.float32)).all(), "f32 is not the doubles narrowed"
    assert np.abs(a64).sum() > 0
    # A buffer of another size is refused and left as it was.
    small = (ctypes.c_float * (n - 1))()
    ctypes.memset(small, 0x7F, (n - 1) * 4)
    e = ns["reference"](h, ctypes.addressof(small), n - 1, 4)
    assert e.startswith("E") and "elements" in e, e
    assert bytes(small) == b"\x7f" * ((n - 1) * 4), "a refused reference wrote into the buffer"
    return a64

a = check(src + "/examples/problems/rmsnorm-cpu/problem.py", "problem", "rows=4,cols=8", 32)
b = check(kb, "kb_relu", "", 91)
assert (b >= 0.25).all(), "the torch reference is not the problem's"
print("ok - numpy and torch references in f64 and f32, %d and %d elements" % (a.size, b.size))

# Placement: page-multiple arrays made one after another, as setup()s do.
with open(sys.argv[3], "w") as f:
    f.write("""import numpy as np
device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
KEEP = []
def setup(params, seed):
    rng = np.random.default_rng(seed)
    n = params["n"]
    x = rng.standard_normal((n, 1024), dtype=np.float32)
    kept = np.zeros(2048, dtype=np.float32)
    KEEP.append(kept)
    out = np.empty_like(x)
    return {"x": x, "w": np.ones(1024, np.float32), "out": out, "head": out[:2],
            "kept": kept, "scale": 2.0}
def output(s):
    return s["out"]
def reference(s):
    return s["x"].astype(np.float64) * s["w"]
""")
def apart(a, b):  # within 256 bytes of each other modulo a page: 4K aliasing
    d = (a.ctypes.data - b.ctypes.data) % 4096
    return min(d, 4096 - d) >= 256

r = ns["load"](sys.argv[3], "placed.py", "placed", 0, problem=1)
assert not r.startswith("E"), r
offs = []
for seed in (1, 2):
    h = int(ns["setup"]("n=64", seed))
    s = ns["_states"][h]
    x = np.random.default_rng(seed).standard_normal((64, 1024), dtype=np.float32)
    assert (s["x"] == x).all() and (s["w"] == 1).all(), "a placed array lost its values"
    assert s["head"].base is s["out"] or s["head"].base is s["out"].base, "out moved from its view"
    assert s["kept"] is ns["_mod"].KEEP[-1], "an array the problem holds was moved"
    o = {k: s[k].ctypes.data % 4096 for k in ("x", "w")}
    assert apart(s["x"], s["w"]), "x and w within a page offset of each other: %s" % o
    offs.append(o)
assert offs[0] == offs[1], "the placement differs between sets: %s" % offs
# Alone in its state, out is placed apart from x too.
ns["_layout_host"](s2 := {"x": np.zeros((64, 1024), np.float32), "out": np.zeros((64, 1024), np.float32)})
assert apart(s2["x"], s2["out"]), "x and out alias"
print("ok - a host state's arrays placed apart within the page: %s" % offs[0])
PY
echo "ok - test_glue_reference"
