/* bench/gpu/ctx_steps.c — what a runner's CUDA start costs, step by step
 * (issue 45: a candidate's "context" phase, agent/runner/cudrv.c
 * kf_cudrv_open): cuInit, the primary context, its events, the L2 flush
 * buffer, and the runner's own kernels, loaded from PTX renamed per runner
 * (JIT-compiled each time: the driver's cache never saw that text), and
 * the cubin of that text loaded instead (what an image compiled ahead would
 * cost). docs/benchmarks.md has what it found and what was tried with it.
 *
 *   ctx_steps [GPU] [ROUNDS]   one process per round, each on GPU, in turn
 *
 * Built here and carried as an untracked file (the GPU host has no
 * protobuf-c, hence its own kf_xmalloc; CUDA's headers are needed here):
 *   gcc -O2 -I. -Iagent -I/usr/local/cuda/include -o ctx_steps.bin
 *   bench/gpu/ctx_steps.c agent/runner/cudrv_ptx.c -ldl
 * Prints one JSON line a round (milliseconds). */
#include "runner/cudrv_ptx.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void *kf_xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

#define SYM(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(lib, #name)

static int one(int gpu, int round)
{
    double t0 = ms();
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
        return 1;
    SYM(cuInit);
    SYM(cuDeviceGet);
    SYM(cuDevicePrimaryCtxRetain);
    SYM(cuCtxSetCurrent);
    SYM(cuEventCreate);
    SYM(cuMemAlloc_v2);
    SYM(cuMemsetD8_v2);
    SYM(cuModuleLoadData);
    SYM(cuLinkCreate_v2);
    SYM(cuLinkAddData_v2);
    SYM(cuLinkComplete);
    SYM(cuCtxSynchronize);
    double t1 = ms();
    CUdevice dev;
    CUcontext ctx;
    CUevent e[3];
    CUdeviceptr flush;
    if (p_cuInit(0))
        return 2;
    double t2 = ms();
    if (p_cuDeviceGet(&dev, gpu) || p_cuDevicePrimaryCtxRetain(&ctx, dev) || p_cuCtxSetCurrent(ctx))
        return 3;
    double t3 = ms();
    for (int i = 0; i < 3; i++)
        p_cuEventCreate(&e[i], 0);
    double t4 = ms();
    if (p_cuMemAlloc_v2(&flush, 100 << 20) || p_cuMemsetD8_v2(flush, 0x5A, 100 << 20) ||
        p_cuCtxSynchronize())
        return 4;
    double t5 = ms();
    char suffix[32];
    snprintf(suffix, sizeof suffix, "_kf%08x%08x", (unsigned)getpid(), (unsigned)round);
    char *ptx = kf_cudrv_ptx_named(suffix);
    CUmodule mod;
    if (p_cuModuleLoadData(&mod, ptx))
        return 5;
    double t6 = ms();
    /* The same text compiled to a cubin by the driver's linker (a JIT
     * like the load's), then that cubin loaded: what an image compiled
     * ahead would cost a runner instead. */
    CUlinkState ls;
    void *cubin = NULL;
    size_t cubin_n = 0;
    if (p_cuLinkCreate_v2(0, NULL, NULL, &ls) ||
        p_cuLinkAddData_v2(ls, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "kf", 0, NULL, NULL) ||
        p_cuLinkComplete(ls, &cubin, &cubin_n))
        return 6;
    double t7 = ms();
    CUmodule mod2;
    if (p_cuModuleLoadData(&mod2, cubin))
        return 7;
    double t8 = ms();
    printf("{\"gpu\": %d, \"round\": %d, \"dlopen\": %.1f, \"init\": %.1f, \"ctx\": %.1f, "
           "\"events\": %.1f, \"flush\": %.1f, \"ptx_load\": %.1f, \"link\": %.1f, "
           "\"cubin_load\": %.2f, \"cubin_bytes\": %zu, \"open_total\": %.1f}\n",
           gpu, round, t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7,
           cubin_n, t6 - t0);
    fflush(stdout);
    free(ptx);
    return 0;
}

int main(int argc, char **argv)
{
    int gpu = argc > 1 ? atoi(argv[1]) : 0, rounds = argc > 2 ? atoi(argv[2]) : 5;
    for (int r = 0; r < rounds; r++) {
        pid_t p = fork();
        if (p == 0)
            _exit(one(gpu, r));
        int st = 0;
        waitpid(p, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            fprintf(stderr, "ctx_steps: round %d: exit %d\n", r, WEXITSTATUS(st));
    }
    return 0;
}
