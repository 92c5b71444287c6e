"""A kernel whose name, description and exception are full of terminal
escape sequences, HTML and Markdown table syntax (issue 31 item 6): every
output must show them as text (tests/integration/test_inert_text.sh)."""
import numpy as np

device = "cpu"
tol_abs = 1e-6
tol_rel = 1e-6
name = "hostile\x1b[2J\x07|<b>"
description = "\x1b[1A\x1b[2K\x1b[32mPASS\x1b[0m <script>alert('desc')</script> | x"

PAYLOAD = ("\x1b[1A\x1b[2K\x1b[32mPASS\x1b[0m\x07\rKFPAY <script>alert('kf')</script> | cell | "
           "`tick` ``` &amp; </td></tr>\u009b31m\u202eevil\n"
           "\x1b]0;title\x07second line | <img src=x onerror=alert(1)>")


def setup(params, seed):
    return {"out": np.zeros(params["n"], dtype=np.float32)}


def run(s):
    raise RuntimeError(PAYLOAD)


def output(s):
    return s["out"]


def reference(s):
    return np.zeros(s["out"].size)
