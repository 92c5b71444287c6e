# Builds a Python kernel's torch C++/CUDA extension for the build task
# (pyext.c), in the node's Python with its own torch. The compile and link
# lines are the ones torch.utils.cpp_extension writes for ninja (torch's
# include and library paths, its C++11 ABI and pybind11 ABI macros,
# TORCH_EXTENSION_NAME, torch's nvcc flags), run here directly, units in
# parallel: many nodes have no ninja, and the build must use the agent's
# nvcc and the GPU's arch, as C kernels do.
#
#   python pyext.py DIR OUT MODULE ARCH NVCC CXX SOURCE...   (the sources in DIR)
#
# Writes OUT/MODULE<EXT_SUFFIX> and OUT/record.json (what it was built for:
# torch, torch's CUDA, the C++11 ABI, arch, nvcc), printing every command
# and the compilers' output. Exit 0 built, 1 the compiler refused, 2 the
# node cannot build it (no torch, no compiler).
import json
import os
import re
import subprocess
import sys
import sysconfig


def fail(code, msg):
    sys.stdout.write("kfleet: %s\n" % msg)
    sys.stdout.flush()
    sys.exit(code)


def paths(fn, cuda):
    try:
        return fn(device_type="cuda" if cuda else "cpu")
    except TypeError:  # torch < 2.6 names it cuda=
        return fn(cuda=cuda)


def cxx_standard(ce):
    """The newest -std=c++NN torch's own extension builder passes."""
    try:
        with open(ce.__file__) as f:
            found = re.findall(r"-std=c\+\+(\d\d)\b", f.read())
    except OSError:
        found = []
    return max(found) if found else "17"


def version_line(exe, pick):
    try:
        out = subprocess.run([exe, "--version"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True).stdout
    except OSError:
        return ""
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    chosen = [l for l in lines if pick in l] or lines
    return chosen[0] if chosen else ""


def main(argv):
    if len(argv) < 7:
        fail(2, "usage: pyext.py DIR OUT MODULE ARCH NVCC CXX SOURCE...")
    src_dir, out, module, arch, nvcc, cxx = argv[:6]
    sources = argv[6:]
    os.chdir(src_dir)  # relative names: the compilers' messages read "op.cu:12:3: error"
    try:
        import torch
        from torch.utils import cpp_extension as ce
    except Exception as e:  # ImportError, or torch failing to load its libraries
        fail(2, "the extension needs torch in %s, and importing it failed: %s"
             % (sys.executable, e))
    units = [s for s in sources if s.endswith((".cpp", ".cc", ".cxx", ".cu"))]
    cuda = any(s.endswith(".cu") for s in units)
    if cuda and not torch.version.cuda:
        fail(2, "the extension has CUDA sources but this torch (%s) is built without CUDA"
             % torch.__version__)
    std = cxx_standard(ce)
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    incs = ["-I."] + ["-I" + p for p in paths(ce.include_paths, cuda)]
    incs.append("-I" + sysconfig.get_paths()["include"])
    defs = ["-DTORCH_EXTENSION_NAME=" + module, "-DTORCH_API_INCLUDE_EXTENSION_H",
            "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi]
    for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
        val = getattr(torch._C, "_PYBIND11_" + name, None)
        if val is not None:
            defs.append('-DPYBIND11_%s="%s"' % (name, val))
    nvcc_line = version_line(nvcc, "release") if cuda else ""
    if cuda:
        m = re.search(r"release (\d+)\.", nvcc_line)
        if not m:
            fail(2, "nvcc %s does not run (`%s --version`); install the CUDA toolkit or set "
                 "KF_NVCC" % (nvcc, nvcc))
        if m.group(1) != torch.version.cuda.split(".")[0]:
            fail(2, "nvcc %s builds for CUDA %s.x but torch %s is built for CUDA %s; the "
                 "extension must be built with a toolkit of torch's CUDA major version "
                 "(set KF_NVCC)" % (nvcc, m.group(1), torch.__version__, torch.version.cuda))
    if arch == "native":
        gencode = ["-arch=native"]
    else:
        gencode = ["-gencode=arch=compute_%s,code=sm_%s" % (arch, arch),
                   "-gencode=arch=compute_%s,code=compute_%s" % (arch, arch)]
    nvflags = [f for f in getattr(ce, "COMMON_NVCC_FLAGS", []) if isinstance(f, str)]
    jobs = []
    for src in units:
        obj = os.path.join(out, os.path.basename(src) + ".o")
        if src.endswith(".cu"):
            cmd = ([nvcc, "-c", src, "-o", obj, "-O3", "-std=c++" + std, "-Xcompiler",
                    "-fPIC"] + gencode + nvflags + incs + defs)
        else:
            cmd = ([cxx, "-c", src, "-o", obj, "-O3", "-std=c++" + std, "-fPIC"] + incs
                   + defs)
        jobs.append((src, obj, cmd))
    os.makedirs(out, exist_ok=True)
    procs = []
    for src, obj, cmd in jobs:
        print(" ".join(cmd))
        try:
            procs.append((src, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT,
                                                universal_newlines=True)))
        except OSError as e:
            fail(2, "cannot run %s: %s" % (cmd[0], e))
    refused = []
    for src, p in procs:
        text = p.communicate()[0]
        sys.stdout.write(text)
        if p.returncode != 0:
            refused.append(src)
    sys.stdout.flush()
    if refused:
        fail(1, "the compiler refused %s" % ", ".join(refused))
    so = module + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
    libdirs = paths(ce.library_paths, cuda)
    libs = ["-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"]
    if cuda:
        tk = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
        libdirs = libdirs + [os.path.join(tk, "lib64")]
        libs += ["-lc10_cuda", "-ltorch_cuda", "-lcudart"]
    link = ([cxx, "-shared", "-o", os.path.join(out, so)] + [o for _, o, _ in jobs]
            + ["-L" + d for d in libdirs] + libs
            + ["-Wl,-rpath," + d for d in libdirs])
    print(" ".join(link))
    r = subprocess.run(link, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        fail(1, "linking %s failed" % so)
    for _, obj, _ in jobs:
        os.unlink(obj)
    record = {"module": module, "so": so, "torch": torch.__version__,
              "torch_cuda": torch.version.cuda or "", "cxx11_abi": abi, "arch": arch,
              "nvcc": nvcc_line, "cxx": version_line(cxx, ""), "std": "c++" + std,
              "python": "%d.%d.%d" % sys.version_info[:3], "sources": sources}
    with open(os.path.join(out, "record.json"), "w") as f:
        json.dump(record, f, indent=2, sort_keys=True)
    return 0


sys.exit(main(sys.argv[1:]))
