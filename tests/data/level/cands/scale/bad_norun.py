"""Refused: no run(s)."""
import numpy as np


def compute(s):
    np.multiply(s["x"], 2, out=s["out"])
