"""KernelBench level1/40 (LayerNorm over the last three dims) at its own
size: x of 16 x 64 x 256 x 256 float32, nn.LayerNorm((64, 256, 256)) as
initialized (weight 1, bias 0), torch.rand inputs. The reference in float64
on the GPU; KernelBench's fp32 check. Params: batch, features, dim1, dim2."""
import torch

device = "cuda"
atol = 1e-4
rtol = 1e-4


def setup(params, seed):
    g = torch.Generator(device="cuda").manual_seed(seed % (1 << 63))
    shape = (params["batch"], params["features"], params["dim1"], params["dim2"])
    x = torch.rand(*shape, device="cuda", generator=g)
    w = torch.ones(shape[1:], device="cuda")
    b = torch.zeros(shape[1:], device="cuda")
    return {"x": x, "w": w, "b": b, "out": torch.empty_like(x)}


def output(s):
    return s["out"]


def reference(s):
    return torch.nn.functional.layer_norm(s["x"].double(), s["w"].shape, s["w"].double(),
                                          s["b"].double(), 1e-5)


def bytes(params):
    return 8.0 * params["batch"] * params["features"] * params["dim1"] * params["dim2"]


def flops(params):
    return 8.0 * params["batch"] * params["features"] * params["dim1"] * params["dim2"]
