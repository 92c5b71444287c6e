"""KernelBench level 1 problem 23 (softmax over dim 1) at a small shape,
judged as KernelBench v0 judges: numpy.isclose with atol = rtol = 1e-2
(issue 41). At 16 x 16384 every softmax value is below 1e-3, so an output
of zeros is within atol everywhere; the relative-L2 bound that stays
(0.5 when only atol and rtol are stated) fails it. Params: rows, cols."""
import numpy as np

device = "cpu"
atol = 1e-2
rtol = 1e-2


def setup(params, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((params["rows"], params["cols"]), dtype=np.float32)
    return {"x": x, "out": np.empty_like(x)}


def output(s):
    return s["out"]


def reference(s):
    x = s["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def bytes(params):
    return 8.0 * params["rows"] * params["cols"]
