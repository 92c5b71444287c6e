/* doctor — the node's measured ceilings; see doctor.h. */
#include "runner/doctor.h"
#include "runner/cudrv.h"
#include "runner/cudrv_ptx.h"
#include "runner/devcmp.h"
#include "common/log.h"
#include "runner/hostpeak.h"
#include "common/execenv.h"
#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GEMM_N 8192
#define GEMM_REPS 10

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Seconds of this thread's CPU time. */
static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Host memcpy of 64 MiB (past any LLC a CI machine has), the fastest of 7, counting bytes read
 * plus written, each timed by the thread's CPU clock: a ceiling is what the machine can do, and
 * the wall time of a copy the scheduler preempted is not (under three busy loops on 2 cores the
 * median of wall times read 2.5-2.9 GB/s against 11.4 idle, and a cache-resident triad at 20x
 * that was judged impossible: test_baseline_nodes in a loaded CI run). */
static double host_copy_gbps(void)
{
    size_t n = 64u << 20;
    char *a = malloc(n), *b = malloc(n);
    double t[7], r = 0;
    if (a && b) {
        memset(a, 0xA5, n);
        memset(b, 0x5A, n);
        for (int i = 0; i < 7; i++) {
            double t0 = thread_cpu_s();
            memcpy(b, a, n);
            __asm__ volatile("" : : "r"(b) : "memory");
            t[i] = thread_cpu_s() - t0;
        }
        qsort(t, 7, sizeof *t, cmp_d);
        r = t[0] > 0 ? 2.0 * (double)n / t[0] / 1e9 : 0;
    }
    free(a);
    free(b);
    return r;
}

/* The few cuBLAS and runtime-free driver entry points the matrix rate
 * needs; the device buffers come from cudrv's context (the primary one,
 * which cuBLAS's runtime shares). */
typedef int (*cublas_create_fn)(void **);
typedef int (*cublas_destroy_fn)(void *);
typedef int (*cublas_gemm_ex_fn)(void *, int, int, int, int, int, const void *, const void *, int,
                                 int, const void *, int, int, const void *, void *, int, int, int,
                                 int);

static void *open_cublas(void)
{
    static const char *const names[] = {
        "libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so.13",
        "/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

/* bf16 bits of a float, round to nearest even. */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFF + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* One matrix rate: which cuBLAS types it runs and where it is kept. The
 * dtype-correct ceilings (issue 43): an fp32 output is judged against the
 * FMA rate unless its tolerance admits TF32 (report_rows.c), fp64 against
 * its own, fp16/bf16 against the bf16 tensor-core rate. */
typedef struct gemm_kind {
    const char *name;
    int dtype;   /* cudaDataType of A, B and C */
    int compute; /* cublasComputeType_t */
    size_t elem;
    size_t off; /* of its double in kf_doctor */
} gemm_kind;

enum { R_32F = 0, R_64F = 1, R_16BF = 14 };
enum { COMPUTE_32F = 68, COMPUTE_32F_PEDANTIC = 69, COMPUTE_64F = 70, COMPUTE_32F_FAST_TF32 = 77 };

static const gemm_kind gemm_kinds[] = {
    {"bf16", R_16BF, COMPUTE_32F, 2, offsetof(kf_doctor, bf16_tflops)},
    {"fp32", R_32F, COMPUTE_32F_PEDANTIC, 4, offsetof(kf_doctor, f32_tflops)},
    {"tf32", R_32F, COMPUTE_32F_FAST_TF32, 4, offsetof(kf_doctor, tf32_tflops)},
    {"fp64", R_64F, COMPUTE_64F, 8, offsetof(kf_doctor, f64_tflops)},
};

/* Random values in [-1, 1) as the kind's element type: zeros run a matrix
 * product measurably faster. */
static void fill_random(void *host, size_t count, size_t elem)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < count; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float f = (float)(s >> 40) / 16777216.0f * 2.0f - 1.0f;
        if (elem == 2)
            ((uint16_t *)host)[i] = to_bf16(f);
        else if (elem == 4)
            ((float *)host)[i] = f;
        else
            ((double *)host)[i] = f;
    }
}

/* The median of GEMM_REPS n^3 products of one kind, after 3 untimed; 0
 * with d->error said when it cannot run. */
static double gemm_kind_rate(kf_cudrv *cu, void *h, cublas_gemm_ex_fn gemm, const gemm_kind *g,
                             kf_doctor *d)
{
    size_t n = GEMM_N, bytes = n * n * g->elem;
    void *a = NULL, *b = NULL, *c = NULL;
    void *host = malloc(bytes);
    kf_err err;
    double rate = 0;
    if (!host || kf_cudrv_alloc(cu, &a, bytes, &err) || kf_cudrv_alloc(cu, &b, bytes, &err) ||
        kf_cudrv_alloc(cu, &c, bytes, &err)) {
        snprintf(d->error, sizeof d->error, "%s ceiling: %s", g->name,
                 host ? err.msg : "out of host memory");
        goto out;
    }
    fill_random(host, n * n, g->elem);
    if (kf_cudrv_copy_to_device(cu, a, host, bytes, &err) ||
        kf_cudrv_copy_to_device(cu, b, host, bytes, &err)) {
        snprintf(d->error, sizeof d->error, "%s ceiling: %s", g->name, err.msg);
        goto out;
    }
    /* alpha and beta in the compute type's scalar: double for fp64. */
    const float onef = 1.0f, zerof = 0.0f;
    const double oned = 1.0, zerod = 0.0;
    const void *one = g->compute == COMPUTE_64F ? (const void *)&oned : (const void *)&onef;
    const void *zero = g->compute == COMPUTE_64F ? (const void *)&zerod : (const void *)&zerof;
    double t[GEMM_REPS];
    enum { OP_N = 0, ALGO_DEFAULT = -1 };
    for (int i = -3; i < GEMM_REPS; i++) {
        kf_cudrv_mark(cu, 0);
        int st = gemm(h, OP_N, OP_N, (int)n, (int)n, (int)n, one, a, g->dtype, (int)n, b, g->dtype,
                      (int)n, zero, c, g->dtype, (int)n, g->compute, ALGO_DEFAULT);
        double secs;
        if (st != 0 || kf_cudrv_mark(cu, 1) || kf_cudrv_elapsed(cu, &secs, &err)) {
            snprintf(d->error, sizeof d->error, "%s ceiling: cublasGemmEx failed (status %d)",
                     g->name, st);
            goto out;
        }
        if (i >= 0)
            t[i] = secs;
    }
    qsort(t, GEMM_REPS, sizeof *t, cmp_d);
    rate = 2.0 * (double)n * (double)n * (double)n / t[GEMM_REPS / 2] / 1e12;
out:
    kf_cudrv_free(cu, a);
    kf_cudrv_free(cu, b);
    kf_cudrv_free(cu, c);
    free(host);
    return rate;
}

static void gemm_rates(kf_cudrv *cu, kf_doctor *d)
{
    void *lib = open_cublas();
    if (!lib) {
        snprintf(d->error, sizeof d->error,
                 "no cuBLAS on this node (%s): matrix-rate ceilings unknown", dlerror());
        return;
    }
    cublas_create_fn create = (cublas_create_fn)dlsym(lib, "cublasCreate_v2");
    cublas_destroy_fn destroy = (cublas_destroy_fn)dlsym(lib, "cublasDestroy_v2");
    cublas_gemm_ex_fn gemm = (cublas_gemm_ex_fn)dlsym(lib, "cublasGemmEx");
    void *h = NULL;
    if (!create || !destroy || !gemm || create(&h) != 0) {
        snprintf(d->error, sizeof d->error,
                 "cuBLAS does not initialise: matrix-rate ceilings unknown");
        return;
    }
    for (size_t i = 0; i < sizeof gemm_kinds / sizeof gemm_kinds[0]; i++)
        *(double *)((char *)d + gemm_kinds[i].off) = gemm_kind_rate(cu, h, gemm, &gemm_kinds[i], d);
    destroy(h);
}

/* The harness's modules compiled for this GPU into the file at path
 * (cubins.h), before any task: runners load them without compiling. A
 * failure is logged; the runners then compile their PTX, as before. */
static void build_cubins(kf_cudrv *cu, const char *path)
{
    const char *names[] = {KF_CUDRV_PTX_MODULE, KF_DEVCMP_MODULE};
    char *block = kf_cudrv_ptx_named(KF_CUBINS_PLACEHOLDER);
    const char *ptx[] = {block, kf_devcmp_ptx};
    char keys[2][KF_CUBINS_KEY_MAX];
    const char *kp[2] = {keys[0], keys[1]};
    void *img[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    kf_err err;
    int rc = KF_OK;
    for (size_t i = 0; i < 2 && rc == KF_OK; i++)
        rc = kf_cudrv_compile(cu, names[i], ptx[i], keys[i], &img[i], &len[i], &err);
    if (rc == KF_OK)
        rc = kf_cubins_write(path, kp, (const void *const *)img, len, 2, &err);
    if (rc == KF_OK)
        kf_info("doctor.cubins", "path=%s block=%zu devcmp=%zu", path, len[0], len[1]);
    else
        kf_warn("doctor.cubins", "path=%s error=\"%s\"", path, err.msg);
    free(img[0]);
    free(img[1]);
    free(block);
}

int kf_doctor_measure(int gpu, const char *cubins, kf_doctor *d)
{
    memset(d, 0, sizeof *d);
    d->host_copy_gbps = host_copy_gbps();
    d->host_gflops = kf_host_peak_gflops();
    if (!gpu) {
        d->copy_gbps = d->host_copy_gbps;
        return KF_OK;
    }
    kf_cudrv *cu = NULL;
    kf_err err;
    if (kf_cudrv_open(&cu, NULL, &err) != KF_OK) {
        snprintf(d->error, sizeof d->error, "%s", err.msg);
        return KF_OK;
    }
    if (cubins)
        build_cubins(cu, cubins);
    if (kf_cudrv_copy_bandwidth(cu, 1ull << 30, 20, &d->copy_gbps, &err) != KF_OK)
        snprintf(d->error, sizeof d->error, "copy ceiling: %s", err.msg);
    gemm_rates(cu, d);
    kf_cudrv_close(&cu);
    return KF_OK;
}

void kf_doctor_print(const kf_doctor *d, int fd)
{
    char e[sizeof d->error];
    snprintf(e, sizeof e, "%s", d->error);
    for (char *p = e; *p; p++)
        if (*p == '\n')
            *p = ' ';
    dprintf(fd,
            "copy_gbps=%.3f bf16_tflops=%.3f host_copy_gbps=%.3f f32_tflops=%.3f tf32_tflops=%.3f "
            "f64_tflops=%.3f host_gflops=%.3f error=%s\n",
            d->copy_gbps, d->bf16_tflops, d->host_copy_gbps, d->f32_tflops, d->tf32_tflops,
            d->f64_tflops, d->host_gflops, e);
}

int kf_doctor_start(const char *exe, int gpu, const char *visible, kf_doctor_child *c, kf_err *err)
{
    return kf_doctor_start_cubins(exe, gpu, visible, NULL, c, err);
}

int kf_doctor_start_cubins(const char *exe, int gpu, const char *visible, const char *cubins,
                           kf_doctor_child *c, kf_err *err)
{
    memset(c, 0, sizeof *c);
    c->pid = -1;
    c->exe = exe;
    c->started_ns = kf_mono_ns();
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return kf_err_set(err, KF_EIO, "doctor: pipe: %s", strerror(errno));
    /* Its environment made before the fork (common/execenv.h). */
    kf_execenv *env = kf_execenv_new();
    if (visible)
        kf_execenv_set(env, "CUDA_VISIBLE_DEVICES", visible);
    char *argv[] = {"kfleet-agent", "--doctor", gpu ? "--gpu" : "--host", NULL, NULL, NULL};
    if (gpu && cubins) {
        argv[3] = "--cubins";
        argv[4] = (char *)cubins;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        kf_execenv_destroy(&env);
        close(fds[0]);
        close(fds[1]);
        return kf_err_set(err, KF_EIO, "doctor: fork: %s", strerror(e));
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        execve(exe, argv, kf_execenv_array(env));
        _exit(127);
    }
    kf_execenv_destroy(&env);
    close(fds[1]);
    c->pid = pid;
    c->fd = fds[0];
    return KF_OK;
}

int kf_doctor_run(const char *exe, int gpu, const char *visible, double timeout_s, kf_doctor *out,
                  kf_err *err)
{
    kf_doctor_child c;
    int rc = kf_doctor_start(exe, gpu, visible, &c, err);
    if (rc != KF_OK) {
        memset(out, 0, sizeof *out);
        snprintf(out->error, sizeof out->error, "%s", err->msg);
        return rc;
    }
    return kf_doctor_finish(&c, timeout_s, out, err);
}

int kf_doctor_finish(kf_doctor_child *c, double timeout_s, kf_doctor *out, kf_err *err)
{
    memset(out, 0, sizeof *out);
    pid_t pid = c->pid;
    const char *exe = c->exe;
    int fd = c->fd;
    char buf[1024];
    size_t got = 0;
    uint64_t deadline = c->started_ns + (uint64_t)(timeout_s * 1e9);
    int flags = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    int timed_out = 0;
    for (;;) {
        ssize_t n = read(fd, buf + got, sizeof buf - 1 - got);
        if (n > 0) {
            got += (size_t)n;
            if (got == sizeof buf - 1)
                break;
            continue;
        }
        if (n == 0)
            break;
        if (errno != EAGAIN && errno != EINTR)
            break;
        if (kf_mono_ns() > deadline) {
            timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    close(fd);
    buf[got] = '\0';
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    int rc = KF_OK;
    if (timed_out)
        rc = kf_err_set(err, KF_ETIMEOUT, "doctor: no answer within %.0f s", timeout_s);
    else if (sscanf(buf, "copy_gbps=%lf bf16_tflops=%lf", &out->copy_gbps, &out->bf16_tflops) != 2)
        rc =
            kf_err_set(err, KF_EIO, "doctor: %s exited without a measurement (status %d)", exe, st);
    if (rc != KF_OK) {
        snprintf(out->error, sizeof out->error, "%s", err->msg);
        return rc;
    }
    /* Later keys are optional: an older agent binary's child omits them. */
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {{" host_copy_gbps=", offsetof(kf_doctor, host_copy_gbps)},
                {" f32_tflops=", offsetof(kf_doctor, f32_tflops)},
                {" tf32_tflops=", offsetof(kf_doctor, tf32_tflops)},
                {" f64_tflops=", offsetof(kf_doctor, f64_tflops)},
                {" host_gflops=", offsetof(kf_doctor, host_gflops)}};
    const char *end_of_figures = strstr(buf, " error=");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *k = strstr(buf, keys[i].key);
        if (k && (!end_of_figures || k < end_of_figures))
            sscanf(k + strlen(keys[i].key), "%lf", (double *)((char *)out + keys[i].off));
    }
    const char *e = strstr(buf, " error=");
    if (e) {
        snprintf(out->error, sizeof out->error, "%s", e + 7);
        out->error[strcspn(out->error, "\n")] = '\0';
    }
    return KF_OK;
}
