"""A host kernel in torch: on a node whose Python has no torch it must not
be sent there at all (the scheduler reads the import), and a sweep that no
agent can run is refused with what each agent lacks
(tests/integration/test_python.sh)."""
import torch

device = "cpu"
tol_abs = 1e-5
tol_rel = 1e-6


def setup(params, seed):
    g = torch.Generator().manual_seed(seed)
    n = params["n"]
    return {"x": torch.randn(n, generator=g), "out": torch.empty(n)}


def run(s):
    torch.mul(s["x"], 2.0, out=s["out"])


def output(s):
    return s["out"].numpy()


def reference(s):
    return 2.0 * s["x"].double().numpy()
