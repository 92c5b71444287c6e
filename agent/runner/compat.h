#ifndef KF_RUNNER_COMPAT_H
#define KF_RUNNER_COMPAT_H

/* CUDA forward compatibility: a datacenter GPU whose kernel driver is older
 * than the toolkit still runs the toolkit's code when the toolkit's own
 * user-mode driver (libcuda.so.1 from NVIDIA's cuda-compat-X-Y package, in
 * /usr/local/cuda-X.Y/compat) is loaded instead of the system one. The
 * agent decides once per start; its runners get that directory first on
 * LD_LIBRARY_PATH and its name in KF_CUDA_COMPAT_DIR, and builds record it. */

#include "common/err.h"

#include <stddef.h>

/* The newest CUDA a driver runs, "12.8", from cuDriverGetVersion's 12080
 * (0 or less: unknown, ""); KF_DRIVER_CUDA, when set, stands in for it (the
 * tests' simulated older driver). */
void kf_compat_driver_cuda(int driver_version, char *out, size_t len);

/* The package that installs the libraries for CUDA "13.0": "cuda-compat-13-0". */
void kf_compat_package(const char *cuda, char *out, size_t len);

/* The forward-compatibility directory for toolkit CUDA `cuda`: $KF_CUDA_COMPAT
 * when set (and only it), else <toolkit>/compat, else
 * /usr/local/cuda-<cuda>/compat; the first holding libcuda.so.1. Fills dir
 * and returns 1, or returns 0 and fills `looked` with the places tried. */
int kf_compat_find(const char *toolkit, const char *cuda, char *dir, size_t len, char *looked,
                   size_t looked_len);

/* Whether a toolkit of CUDA `toolkit_cuda` can run on a driver of CUDA
 * `driver_cuda` here: KF_OK with dir "" when the driver is new enough (or
 * either version is unknown), KF_OK with dir set when the forward-compat
 * libraries bridge the gap, KF_EUNAVAIL naming both versions and the package
 * when nothing does. With the node's driver version ("570.124.06", NULL or ""
 * when unknown), libraries from a branch not newer than it are refused: the
 * driver would refuse them (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH). */
int kf_compat_check(const char *toolkit, const char *toolkit_cuda, const char *driver_cuda,
                    const char *driver_version, char *dir, size_t len, kf_err *err);

/* The driver version of the libcuda.so.1 in dir, from the file it links to
 * ("libcuda.so.580.95.05" gives "580.95.05"); "" when it does not say. */
void kf_compat_lib_version(const char *dir, char *out, size_t len);

#endif
