"""Refused: declares a tolerance."""
import numpy as np

atol = 1.0


def run(s):
    s["out"][:] = 0
