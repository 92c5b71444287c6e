/* CUDA forward compatibility (see compat.h). Checked here: that the
 * libraries are present and come from a newer driver branch than the
 * node's (the driver refuses others). Whether this GPU accepts them
 * (datacenter parts only) shows when a runner's cuInit returns
 * CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, which fails that task with the
 * driver's own words rather than a guess made here. */
#include "runner/compat.h"
#include "common/util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void kf_compat_driver_cuda(int driver_version, char *out, size_t len)
{
    const char *fake = getenv("KF_DRIVER_CUDA");
    if (fake && *fake)
        snprintf(out, len, "%s", fake);
    else if (driver_version > 0)
        snprintf(out, len, "%d.%d", driver_version / 1000, driver_version % 1000 / 10);
    else if (len)
        out[0] = '\0';
}

void kf_compat_package(const char *cuda, char *out, size_t len)
{
    unsigned long major = strtoul(cuda, NULL, 10), minor = 0;
    const char *dot = strchr(cuda, '.');
    if (dot)
        minor = strtoul(dot + 1, NULL, 10);
    snprintf(out, len, "cuda-compat-%lu-%lu", major, minor);
}

static int holds_libcuda(const char *dir)
{
    char lib[4096];
    int n = snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
    return n > 0 && (size_t)n < sizeof lib && access(lib, R_OK) == 0;
}

int kf_compat_find(const char *toolkit, const char *cuda, char *dir, size_t len, char *looked,
                   size_t looked_len)
{
    char cand[3][4096];
    size_t n = 0;
    const char *env = getenv("KF_CUDA_COMPAT");
    if (env && *env) {
        snprintf(cand[n++], sizeof cand[0], "%s", env);
    } else {
        if (toolkit && *toolkit)
            snprintf(cand[n++], sizeof cand[0], "%s/compat", toolkit);
        snprintf(cand[n], sizeof cand[0], "/usr/local/cuda-%s/compat", cuda);
        if (n == 0 || strcmp(cand[n], cand[0]) != 0)
            n++;
    }
    size_t used = 0;
    if (looked_len)
        looked[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (holds_libcuda(cand[i])) {
            snprintf(dir, len, "%s", cand[i]);
            return 1;
        }
        if (used < looked_len)
            used +=
                (size_t)snprintf(looked + used, looked_len - used, "%s%s", i ? ", " : "", cand[i]);
    }
    if (len)
        dir[0] = '\0';
    return 0;
}

void kf_compat_lib_version(const char *dir, char *out, size_t len)
{
    char lib[4096], real[PATH_MAX];
    if (len)
        out[0] = '\0';
    snprintf(lib, sizeof lib, "%s/libcuda.so.1", dir);
    if (!realpath(lib, real))
        return;
    const char *base = strrchr(real, '/');
    base = base ? base + 1 : real;
    if (strncmp(base, "libcuda.so.", 11) == 0 && strcmp(base + 11, "1") != 0)
        snprintf(out, len, "%s", base + 11);
}

int kf_compat_check(const char *toolkit, const char *toolkit_cuda, const char *driver_cuda,
                    const char *driver_version, char *dir, size_t len, kf_err *err)
{
    if (len)
        dir[0] = '\0';
    if (!toolkit_cuda || !*toolkit_cuda || !driver_cuda || !*driver_cuda ||
        kf_version_cmp(toolkit_cuda, driver_cuda) <= 0)
        return KF_OK;
    char looked[1024], pkg[64], libv[64];
    kf_compat_package(toolkit_cuda, pkg, sizeof pkg);
    if (kf_compat_find(toolkit, toolkit_cuda, dir, len, looked, sizeof looked)) {
        kf_compat_lib_version(dir, libv, sizeof libv);
        if (!libv[0] || !driver_version || !*driver_version ||
            strtoul(libv, NULL, 10) > strtoul(driver_version, NULL, 10))
            return KF_OK;
        int rc = kf_err_set(err, KF_EUNAVAIL,
                            "nvcc builds for CUDA %s but this node's driver runs CUDA %s at most, "
                            "and the forward-compatibility libraries in %s (driver %s) are not "
                            "from a newer branch than the node's driver %s, so the driver would "
                            "refuse them: install the %s package of a newer branch, use an nvcc "
                            "of CUDA %s or older (KF_NVCC), or update the driver",
                            toolkit_cuda, driver_cuda, dir, libv, driver_version, pkg, driver_cuda);
        if (len)
            dir[0] = '\0';
        return rc;
    }
    return kf_err_set(err, KF_EUNAVAIL,
                      "nvcc builds for CUDA %s but this node's driver runs CUDA %s at most, and "
                      "no forward-compatibility libraries are here (no libcuda.so.1 in %s): "
                      "install NVIDIA's %s package (datacenter GPUs) or point KF_CUDA_COMPAT at "
                      "its directory, use an nvcc of CUDA %s or older (KF_NVCC), or update the "
                      "driver",
                      toolkit_cuda, driver_cuda, looked, pkg, driver_cuda);
}
