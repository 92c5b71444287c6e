# What the runner needs to know of the node's Python before it can host a
# Python kernel, printed as one JSON object: the interpreter, its prefix and
# module path (the embedded interpreter is given the same), the shared
# libpython to load, and the versions of the packages kernels use. Fast: no
# package is imported (versions come from their metadata), so it can run in
# every runner.
import json
import os
import sys
import sysconfig

cfg = sysconfig.get_config_var
libs = []
for name in (cfg("INSTSONAME"), cfg("LDLIBRARY")):
    if not name or ".so" not in name:
        continue
    for d in (cfg("LIBDIR"), os.path.join(sys.base_prefix, "lib"),
              os.path.join(sys.base_prefix, "lib64")):
        p = os.path.join(d or "", name)
        if d and os.path.exists(p) and p not in libs:
            libs.append(p)

packages = {}
try:
    from importlib import metadata
except ImportError:  # Python < 3.8
    metadata = None
for pkg in ("numpy", "torch", "triton", "cupy-cuda12x", "cupy-cuda13x", "cupy"):
    try:
        packages[pkg.split("-")[0]] = metadata.version(pkg) if metadata else ""
    except Exception:
        pass

torch_cuda = ""
torch_abi = ""  # torch's -D_GLIBCXX_USE_CXX11_ABI, which an extension must match
try:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec and spec.submodule_search_locations:
        tdir = list(spec.submodule_search_locations)[0]
        with open(os.path.join(tdir, "version.py")) as f:
            for line in f:
                if line.startswith("cuda"):
                    torch_cuda = line.split("=", 1)[1].strip().strip("'\"")
                    if torch_cuda == "None":
                        torch_cuda = ""
        # The flag torch's own CMake package hands dependent builds, where it
        # says it (torch 2.11 does not: its wheels are built with one ABI).
        with open(os.path.join(tdir, "share", "cmake", "Torch", "TorchConfig.cmake")) as f:
            text = f.read()
        at = text.find("_GLIBCXX_USE_CXX11_ABI=")
        if at >= 0:
            torch_abi = text[at + len("_GLIBCXX_USE_CXX11_ABI=")]
except Exception:
    pass

print(json.dumps({
    "executable": sys.executable,
    "version": "%d.%d.%d" % sys.version_info[:3],
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "base_exec_prefix": sys.base_exec_prefix,
    "path": [p for p in sys.path if p],
    "libpython": libs,
    "shared": bool(cfg("Py_ENABLE_SHARED")),
    "packages": packages,
    "torch_cuda": torch_cuda,
    "torch_cxx11_abi": torch_abi,
}))
