/* pysrc — the Python that the runner runs, kept as .py files beside this
 * header (readable and testable as Python) and compiled in as strings by
 * CMake (the generated pysrc.c): pyprobe.py, what the node's Python is;
 * pyglue.py, the harness's side of a Python kernel; pyext.py, the build of
 * a kernel's torch extension. */
#ifndef KF_PYSRC_H
#define KF_PYSRC_H

extern const char kf_py_probe_src[];
extern const char kf_py_glue_src[];
extern const char kf_py_ext_src[];

#endif
