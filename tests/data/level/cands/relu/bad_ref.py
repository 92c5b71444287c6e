"""Refused: declares its own reference."""
import numpy as np


def run(s):
    np.maximum(s["x"], 0, out=s["out"])


def reference(s):
    return s["out"]
