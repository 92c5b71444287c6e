"""rmsnorm-cpu's problem (docs/problems.md): RMSNorm over the last axis of a
rows x cols float32 matrix, y = x / sqrt(mean(x^2) + eps) * w. The problem
owns the judgement: the inputs from the secret seed, the reference in
float64, the tolerances, bytes and FLOPs. The candidates beside it bring
only run(s). Params: rows, cols."""
import numpy as np

device = "cpu"
tol_abs = 1e-4           # float32 against a float64 reference, |y| up to ~20
tol_rel = 1e-5
EPS = 1e-6


def setup(params, seed):
    rng = np.random.default_rng(seed)
    rows, cols = params["rows"], params["cols"]
    x = rng.standard_normal((rows, cols), dtype=np.float32)
    w = rng.standard_normal(cols, dtype=np.float32)
    return {"x": x, "w": w, "eps": EPS, "out": np.empty_like(x)}


def inputs(s):                       # what a C candidate reads, in order
    return [s["x"], s["w"]]


def output(s):
    return s["out"]


def reference(s):
    x = s["x"].astype(np.float64)
    rms = np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + s["eps"])
    return x / rms * s["w"].astype(np.float64)


def bytes(params):
    return 4.0 * (2 * params["rows"] * params["cols"] + params["cols"])


def flops(params):
    return 4.0 * params["rows"] * params["cols"]
