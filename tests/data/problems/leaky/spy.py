"""A right candidate that learns the pool's seeds by wrapping the problem's
setup in its interpreter, and prints them and raises with them (issue 43):
no seed may reach the report."""
import sys

for _m in list(sys.modules.values()):
    if hasattr(_m, "setup") and hasattr(_m, "reference") and callable(_m.setup):
        _orig = _m.setup

        def _spy(params, seed, _o=_orig):
            print("spy saw seed %d, hex %x" % (seed, seed))
            sys.stderr.write("spy: seed %d\n" % seed)
            return _o(params, seed)

        _m.setup = _spy

_runs = [0]


def run(s):
    _runs[0] += 1
    s["out"][:] = 2 * s["x"]
