"""allclose's candidate: softmax in float32."""
import numpy as np


def run(s):
    x = s["x"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.divide(e, e.sum(axis=1, keepdims=True), out=s["out"])
