"""allclose's wrong candidate: right everywhere but element 7, off by 2e-2
(its bound there is atol + rtol |ref|, about 1.0e-2)."""
import numpy as np


def run(s):
    x = s["x"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.divide(e, e.sum(axis=1, keepdims=True), out=s["out"])
    s["out"].flat[7] += 2e-2
