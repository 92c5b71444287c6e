/* doctor — measures the node's ceilings once per registration, so that
 * every profile is reported as a percentage of what this node really does,
 * not of a datasheet.
 *
 * On a GPU: the device-to-device copy rate (1 GiB copies, bytes read plus
 * written, median of 20) and the bf16 matrix rate of cuBLAS (8192^3
 * cublasGemmEx, bf16 in and out, fp32 compute, random inputs, median of
 * 10). cuBLAS is dlopen'd (libcublas.so.13/.12 or the toolkit's), like the
 * driver: the agent links no CUDA library. Without cuBLAS the matrix rate
 * is 0 and the reason is recorded. On a CPU-only node: host memcpy
 * bandwidth, counted the same way; on every node the host memcpy bandwidth
 * too (host_copy_gbps), which host kernels' rows are judged against, and
 * the host's FLOP ceiling (host_gflops). The GPU's matrix rates are
 * measured for each dtype a kernel's output may have (bf16, fp32 FMA, TF32,
 * fp64).
 *
 * The measurement runs in a child (`kfleet-agent --doctor`) so that a
 * broken driver cannot take the agent down; kf_doctor_run spawns it and
 * reads its one line of output. */
#ifndef KF_DOCTOR_H
#define KF_DOCTOR_H

#include "common/err.h"

typedef struct kf_doctor {
    double copy_gbps;      /* 0: not measured */
    double bf16_tflops;    /* 0: not measured (CPU node, or no cuBLAS) */
    double host_copy_gbps; /* host memcpy, on any node; 0: not measured */
    /* The dtype-correct matrix rates (cuBLAS 8192^3: fp32 without tensor
     * cores, fp32 data on TF32 tensor cores, fp64), and the host's FLOP
     * ceiling (single-precision FMA on every lane, one core's rate times
     * the cores): the ceilings a row is judged impossible by for its
     * output's dtype (issue 43). 0: not measured. */
    double f32_tflops, tf32_tflops, f64_tflops;
    double host_gflops;
    char error[512]; /* why something was not measured; "" when all was */
} kf_doctor;

/* Measures in this process (the --doctor child). gpu: 1 to measure device
 * 0 as CUDA_VISIBLE_DEVICES shows it, 0 for the host; on a GPU with
 * cubins (a path, else NULL), the harness's modules are compiled for it
 * into that file first (runner/cubins.h). Returns 0; failures are
 * described in out->error. */
int kf_doctor_measure(int gpu, const char *cubins, kf_doctor *out);

/* Prints out as one line "copy_gbps=… bf16_tflops=… host_copy_gbps=…
 * f32_tflops=… tf32_tflops=… f64_tflops=… host_gflops=… error=…" to fd. */
void kf_doctor_print(const kf_doctor *d, int fd);

/* Runs `exe --doctor [--gpu]` with CUDA_VISIBLE_DEVICES=visible (when not
 * NULL), waits at most timeout_s, parses its line. Returns 0, or KF_EIO /
 * KF_ETIMEOUT with err filled (and out->error set to the same text). */
int kf_doctor_run(const char *exe, int gpu, const char *visible, double timeout_s, kf_doctor *out,
                  kf_err *err);

/* The same in two steps, so the agent does other work of its start
 * (Python's facts) while the child measures: kf_doctor_start spawns it,
 * kf_doctor_finish waits (timeout_s counted from the start) and parses. */
typedef struct kf_doctor_child {
    int pid, fd;
    const char *exe; /* the caller's, for messages */
    unsigned long long started_ns;
} kf_doctor_child;
int kf_doctor_start(const char *exe, int gpu, const char *visible, kf_doctor_child *c, kf_err *err);
/* The same, with `--cubins PATH` on a GPU (kf_doctor_measure). */
int kf_doctor_start_cubins(const char *exe, int gpu, const char *visible, const char *cubins,
                           kf_doctor_child *c, kf_err *err);
int kf_doctor_finish(kf_doctor_child *c, double timeout_s, kf_doctor *out, kf_err *err);

#endif
