/* preflight — what the launcher checks on a node over SSH before it uploads
 * anything: GPUs, driver and the CUDA it supports, nvcc and whether the driver
 * can load what it builds, the work dir's free space and writability, CPU
 * arch, glibc and OS.
 *
 * The launcher runs kf_preflight_script() on the node as `sh -s -- WORKDIR`
 * (the script on stdin), hands its stdout to kf_preflight_parse, then asks
 * kf_preflight_check whether the node may get work; a node that fails is
 * reported with every reason and skipped. The script is POSIX sh (dash), needs
 * no GPU, nvcc, awk or root, creates WORKDIR (mkdir -p) and expands a leading
 * "~" in it with the node's $HOME, and prints one key=value per line between
 * `kf_preflight=1` and `kf_preflight_end=1` (what a login shell's rc files
 * print before it is skipped):
 *
 *   workdir=/root/kfleet         the work dir, ~ expanded
 *   workdir_ok=1                 mkdir -p worked (else workdir_error=...)
 *   writable=1                   a file could be created in it
 *   fs_total_kb= fs_free_kb=     df -Pk of the work dir (or its nearest parent)
 *   arch= glibc= os=             uname -m, glibc version, PRETTY_NAME
 *   nvidia_smi=PATH              empty when absent; nvidia_smi_error= when it fails
 *   gpu=INDEX, NAME, DRIVER, MEMORY_MIB   one line per GPU (nvidia-smi csv)
 *   driver_cuda=13.0             the "CUDA Version" of nvidia-smi's header
 *   nvcc=PATH nvcc_version=12.8  from PATH, else $CUDA_HOME/bin, /usr/local/cuda/bin
 *   nvcc_compat=DIR              that toolkit's forward-compat libraries, when installed
 *   python=3.12.3                python3 from PATH, when there is one
 *   python_packages=numpy 2.5.2, torch 2.11.0   which of numpy/torch/triton/cupy it has
 *
 * Unknown keys are ignored, so a newer script works with an older parser. */
#ifndef KF_PREFLIGHT_H
#define KF_PREFLIGHT_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kf_preflight_gpu {
    int index;
    char *name;       /* "NVIDIA H100 80GB HBM3" */
    uint64_t mem_mib; /* 0 when not reported */
} kf_preflight_gpu;

typedef struct kf_preflight {
    char *workdir;       /* as the node resolved it */
    char *workdir_error; /* mkdir -p's message; NULL when the dir exists */
    int writable;
    int have_fs; /* df answered: fs_* are valid */
    uint64_t fs_total_bytes, fs_free_bytes;
    char *arch;       /* uname -m */
    char *glibc;      /* "2.36"; NULL when unknown (musl, no getconf/ldd) */
    char *os;         /* PRETTY_NAME; NULL when unknown */
    char *nvidia_smi; /* path; NULL when not installed */
    char *gpu_error;  /* nvidia-smi's complaint when it failed; NULL otherwise */
    kf_preflight_gpu *gpus;
    size_t ngpus;
    char *driver;          /* "580.95.05"; NULL without a driver */
    char *driver_cuda;     /* "13.0": newest CUDA the driver runs; NULL when unknown */
    char *nvcc;            /* path; NULL when not found */
    char *nvcc_version;    /* "12.8" (the release); NULL when unknown */
    char *nvcc_compat;     /* its forward-compat libraries' dir; NULL when none */
    char *python;          /* "3.12.3"; NULL without python3 */
    char *python_packages; /* "numpy 2.5.2, torch 2.11.0"; NULL or "" when none */
} kf_preflight;

/* The script, a static string. */
const char *kf_preflight_script(void);

/* Parses the script's stdout into *pf (zeroed first; free with
 * kf_preflight_free, also after an error). KF_EPROTO when the markers are
 * missing (the script did not run, or was cut off) or a line is malformed. */
int kf_preflight_parse(const char *out, size_t len, kf_preflight *pf, kf_err *err);

/* 0 when the node may get work; else KF_EINVAL with every reason, joined by
 * "; ", in err: the work dir missing, not writable or with less than
 * min_free_bytes free; no GPU while need_gpu; an nvcc newer than the driver's
 * CUDA without its forward-compat libraries (the same test as
 * agent/runner/compat.c); an arch other than x86_64/aarch64. */
int kf_preflight_check(const kf_preflight *pf, uint64_t min_free_bytes, int need_gpu, kf_err *err);

/* One line for a progress display, like "2× NVIDIA H100 80GB HBM3, driver
 * 580.95 (CUDA 13.0), nvcc 12.8, 41.2 GiB free, x86_64". Always terminated. */
void kf_preflight_summary(const kf_preflight *pf, char *buf, size_t n);

/* "412 MiB", "1.0 GiB": sizes as the messages print them. */
void kf_preflight_bytes(uint64_t bytes, char *buf, size_t n);

/* Frees what parse allocated and zeroes *pf. */
void kf_preflight_free(kf_preflight *pf);

#endif
