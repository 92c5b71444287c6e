"""The baseline candidate of relu."""
import numpy as np


def run(s):
    np.maximum(s["x"], 0, out=s["out"])
