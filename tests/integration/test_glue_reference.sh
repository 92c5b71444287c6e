#!/usr/bin/env bash
# The glue's reference() (agent/runner/pyglue.py), run as the runner runs it
# (pyglue.py with pyformats.py in one namespace) in the node's Python: a
# problem's reference written into the harness's buffer in f64 (width 8) and
# in f32 (width 4, for a reference its file keeps in f32), for a numpy
# problem and for a torch (CPU) KernelBench problem, whose reference is
# copied in pieces (the piece made small here so that several are copied,
# the last one short). Each width's values are the problem's own (f32: the
# doubles narrowed), every element written; a wrong element count or shape
# is refused before anything is written.
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
"$KF_PYTHON" - "$KF_SRC" "$T/kb_relu.py" <<'PY' || fail "the glue's reference() is wrong"
import ctypes, sys
import numpy as np
src, kb = sys.argv[1], sys.argv[2]
ns = {"__name__": "kfleet_glue"}
code = open(src + "/agent/runner/pyglue.py").read() + open(src + "/agent/runner/pyformats.py").read()
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
PY
echo "ok - test_glue_reference"
