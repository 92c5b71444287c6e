"""Imports a package no node has."""
import numpy as np
import kfleet_no_such_package  # noqa: F401

device = "cpu"
tol_abs = 0
tol_rel = 0
