#!/usr/bin/env python3
"""bench/problems_gen.py KIND DIR N — a problem sweep of N generated
candidates for issue 30's benchmarks (docs/benchmarks.md): what a
kernel-generation loop submits, many variants of one computation, a few of
them wrong. Writes DIR/sweep.yaml, the problem and the candidates; prints
how many candidates are meant to fail.

  numpy    a small CPU problem (y = a*x + b*tanh(x) over rows x 1024 floats,
           the rmsnorm-cpu problem's shape of contract), numpy candidates in
           8 correct formulations and 1 wrong one in every 50
  triton   examples/problems/softmax/problem.py with Triton softmax
           candidates: BLOCK (the next power of two of cols, or twice it),
           num_warps (1-16), formulation (max-subtract then exp, exp2 with
           a log2(e) scale, online two-pass), and 1 wrong one in every 20

Used by bench/problems.sh (numpy, `make bench`), bench/gpu/run.sh's part
`problems` (triton) and tests/integration/test_problems.sh (both, the
triton one only generated: the CPU test machine has no GPU)."""
import os
import shutil
import sys

NUMPY_PROBLEM = '''"""A small CPU problem for the 1,000-candidate benchmark: y = a*x + b*tanh(x)
over a rows x cols float32 matrix, a and b per column."""
import numpy as np

device = "cpu"
tol_abs = 1e-5
tol_rel = 1e-6


def setup(params, seed):
    rng = np.random.default_rng(seed)
    rows, cols = params["rows"], params["cols"]
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    a = rng.standard_normal(cols, dtype=np.float32)
    b = rng.standard_normal(cols, dtype=np.float32)
    return {"x": x, "a": a, "b": b, "out": np.empty_like(x)}


def inputs(s):
    return [s["x"], s["a"], s["b"]]


def output(s):
    return s["out"]


def reference(s):
    x = s["x"].astype(np.float64)
    return x * s["a"].astype(np.float64) + s["b"].astype(np.float64) * np.tanh(x)


def bytes(params):
    return 4.0 * (2 * params["rows"] * params["cols"] + 2 * params["cols"])


def flops(params):
    return 20.0 * params["rows"] * params["cols"]
'''

NUMPY_RIGHT = [
    's["out"][:] = s["a"] * x + s["b"] * np.tanh(x)',
    'np.multiply(x, s["a"], out=s["out"])\n    s["out"] += s["b"] * np.tanh(x)',
    't = np.tanh(x)\n    t *= s["b"]\n    np.multiply(x, s["a"], out=s["out"])\n    np.add(s["out"], t, out=s["out"])',
    's["out"][:] = np.add(x * s["a"], np.tanh(x) * s["b"])',
    'np.tanh(x, out=s["out"])\n    s["out"] *= s["b"]\n    s["out"] += x * s["a"]',
    's["out"][:] = x * s["a"] + np.tanh(x) * s["b"]',
    'for r in range(0, x.shape[0], 64):\n        xr = x[r:r + 64]\n        s["out"][r:r + 64] = xr * s["a"] + s["b"] * np.tanh(xr)',
    's["out"][:] = np.einsum("ij,j->ij", x, s["a"]) + np.einsum("ij,j->ij", np.tanh(x), s["b"])',
]
NUMPY_WRONG = [
    's["out"][:] = s["a"] * x + s["b"] * x',            # tanh forgotten
    's["out"][:] = s["a"] * x',                          # a term dropped
    's["out"][:] = 0',                                   # zeros
]


def numpy_sweep(d, n):
    with open(os.path.join(d, "problem.py"), "w") as f:
        f.write(NUMPY_PROBLEM)
    names, wrong = [], 0
    for i in range(n):
        bad = i % 50 == 49
        body = NUMPY_WRONG[(i // 50) % len(NUMPY_WRONG)] if bad else \
            NUMPY_RIGHT[i % len(NUMPY_RIGHT)]
        wrong += bad
        name = "cand%04d" % i
        with open(os.path.join(d, name + ".py"), "w") as f:
            f.write('"""Generated candidate %d (%s)."""\nimport numpy as np\n\n\n'
                    'def run(s):\n    x = s["x"]\n    %s\n' % (i, "wrong" if bad else "right", body))
        names.append(name + ".py")
    with open(os.path.join(d, "sweep.yaml"), "w") as f:
        f.write("name: problems-bench-numpy\nproblem:\n  path: problem.py\n"
                "  params: {rows: [256], cols: [1024]}\n  seeds: 2\n"
                "candidates:\n" + "".join("  - %s\n" % c for c in names) +
                "baseline: cand0000\ntasks: [build, validate, profile]\n"
                "measure: {min_samples: 5, min_time: 5ms, max_noise: 50, timeout: 250ms}\n")
    return wrong


TRITON_HEAD = '''"""Generated Triton softmax candidate %(i)d: BLOCK %(bmul)dx, num_warps %(warps)d,
%(form)s%(wrong)s."""
import torch
import triton
import triton.language as tl

device = "cuda"


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * in_stride + offs, mask=mask, other=-float("inf"))
%(body)s
    tl.store(out_ptr + row * out_stride + offs, y, mask=mask)


def prepare(s):
    s["block"] = triton.next_power_of_2(s["x"].shape[1]) * %(bmul)d


def run(s):
    x, out = s["x"], s["out"]
    softmax_kernel[(x.shape[0],)](out, x, x.stride(0), out.stride(0), x.shape[1],
                                  BLOCK=s["block"], num_warps=%(warps)d)
'''
TRITON_FORMS = {
    "max-subtract then exp": "    x = x - tl.max(x, axis=0)\n    num = tl.exp(x)\n"
                             "    y = num / tl.sum(num, axis=0)",
    "exp2 with a log2(e) scale": "    x = (x - tl.max(x, axis=0)) * 1.4426950408889634\n"
                                 "    num = tl.exp2(x)\n    y = num / tl.sum(num, axis=0)",
    "reciprocal of the sum": "    num = tl.exp(x - tl.max(x, axis=0))\n"
                             "    y = num * (1.0 / tl.sum(num, axis=0))",
}
TRITON_WRONG = {
    "no max subtracted, no normalization": "    y = tl.exp(x)",
    "normalized by the max": "    num = tl.exp(x - tl.max(x, axis=0))\n    y = num / tl.max(num, axis=0)",
}


def triton_sweep(d, n, src):
    shutil.copy(os.path.join(src, "examples/problems/softmax/problem.py"),
                os.path.join(d, "problem.py"))
    shutil.copy(os.path.join(src, "examples/problems/softmax/torch_softmax.py"),
                os.path.join(d, "torch_softmax.py"))
    forms, wrongs = sorted(TRITON_FORMS), sorted(TRITON_WRONG)
    names, wrong = ["torch_softmax.py"], 0
    for i in range(n):
        bad = i % 20 == 19
        form = wrongs[(i // 20) % len(wrongs)] if bad else forms[i % len(forms)]
        body = TRITON_WRONG[form] if bad else TRITON_FORMS[form]
        warps = (1, 2, 4, 8, 16)[(i // 3) % 5]
        bmul = 2 if (i // 15) % 2 else 1
        wrong += bad
        name = "tri%03d" % i
        with open(os.path.join(d, name + ".py"), "w") as f:
            f.write(TRITON_HEAD % {"i": i, "bmul": bmul, "warps": warps, "form": form,
                                   "wrong": " (wrong on purpose)" if bad else "", "body": body})
        names.append(name + ".py")
    with open(os.path.join(d, "sweep.yaml"), "w") as f:
        f.write("name: problems-bench-triton\nproblem:\n  path: problem.py\n"
                "  params: {rows: [512], cols: [1024]}\n  seeds: 2\n"
                "candidates:\n" + "".join("  - %s\n" % c for c in names) +
                "baseline: torch_softmax\ntasks: [build, validate, profile]\n")
    return wrong


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("numpy", "triton"):
        sys.stderr.write("usage: problems_gen.py numpy|triton DIR N\n")
        return 2
    kind, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(d, exist_ok=True)
    src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    wrong = numpy_sweep(d, n) if kind == "numpy" else triton_sweep(d, n, src)
    print(wrong)
    return 0


if __name__ == "__main__":
    sys.exit(main())
