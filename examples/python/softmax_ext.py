"""softmax_ext — softmax_c.cu's device code in a torch C++/CUDA extension
(softmax_ext_op.cpp and softmax_ext_kernel.cu, named on the `extension`
line below), built on each node by kfleet's build task and launched from
Python on torch's current stream. The extension is built with the node's
nvcc for its GPU's arch, as softmax_c is, so the two rows of
examples/torch.yaml time the same machine code launched from C and from
Python. Params: rows, cols."""
import torch

import softmax_ext_op

device = "cuda"
extension = ["softmax_ext_op.cpp", "softmax_ext_kernel.cu"]
tol_abs = 1e-6
tol_rel = 1e-4
deterministic = True


def setup(params, seed):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed % (1 << 63))
    x = torch.rand(params["rows"], params["cols"], generator=g, device="cuda") * 8.0 - 4.0
    return {"x": x, "y": torch.empty_like(x)}


def run(s):
    softmax_ext_op.softmax_out(s["x"], s["y"])


def output(s):
    return s["y"]


def reference(s):
    return torch.softmax(s["x"].double(), dim=1)


def bytes(params):
    return 8.0 * params["rows"] * params["cols"]


def flops(params):
    return 5.0 * params["rows"] * params["cols"]
