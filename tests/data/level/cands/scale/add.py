"""scale as x + x."""
import numpy as np


def run(s):
    np.add(s["x"], s["x"], out=s["out"])
