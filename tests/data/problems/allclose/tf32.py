"""allclose's TF32-like candidate: its inputs rounded to TF32's 10-bit
mantissa first (as a tensor core reads them), then softmax in float32:
about 5e-4 relative off everywhere, within rtol = 1e-2."""
import numpy as np


def run(s):
    x = s["x"].view(np.uint32)
    x = ((x + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.divide(e, e.sum(axis=1, keepdims=True), out=s["out"])
