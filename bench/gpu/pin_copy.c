/* bench/gpu/pin_copy.c — what a gigabyte output's copy to the checker's
 * shared buffer costs (issue 45, docs/benchmarks.md): a memfd of N GiB mapped
 * shared and populated by threads, as runner/checker.c makes it, then
 * cuMemcpyDtoH into it pageable, cuMemHostRegister of it, and the copy again
 * pinned. Build: gcc -O2 -o pin_copy bench/gpu/pin_copy.c -ldl -lpthread */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(void **, int);
static CUresult (*cuCtxSetCurrent)(void *);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cuMemHostRegister)(void *, size_t, unsigned);
static CUresult (*cuMemHostUnregister)(void *);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static char *P;
static size_t N;
static int T;
static void *touch(void *a)
{
    long k = (long)a;
    size_t lo = N * k / T, hi = N * (k + 1) / T;
    for (size_t i = (lo + 4095) / 4096 * 4096; i < hi; i += 4096)
        P[i] = 0;
    return NULL;
}

#define L(name, sym)                                                                              \
    if (!(*(void **)&name = dlsym(lib, sym))) {                                                  \
        printf("no %s\n", sym);                                                                   \
        return 1;                                                                                 \
    }

int main(int argc, char **argv)
{
    N = (size_t)(argc > 1 ? atof(argv[1]) : 8) * (1ull << 30);
    T = argc > 2 ? atoi(argv[2]) : 8;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
        return printf("no libcuda\n"), 1;
    L(cuInit, "cuInit") L(cuDeviceGet, "cuDeviceGet");
    L(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") L(cuCtxSetCurrent, "cuCtxSetCurrent");
    L(cuMemAlloc, "cuMemAlloc_v2") L(cuMemsetD8, "cuMemsetD8_v2");
    L(cuMemcpyDtoH, "cuMemcpyDtoH_v2") L(cuMemHostRegister, "cuMemHostRegister_v2");
    L(cuMemHostUnregister, "cuMemHostUnregister");
    int dev;
    void *ctx;
    CUdeviceptr d;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuMemAlloc(&d, N) || cuMemsetD8(d, 0x3F, N))
        return printf("cuda setup failed\n"), 1;
    int fd = memfd_create("pin-copy", 0);
    if (fd < 0 || ftruncate(fd, (off_t)N))
        return printf("memfd failed\n"), 1;
    double t0 = now();
    P = mmap(NULL, N, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    pthread_t th[64];
    for (long k = 0; k < T; k++)
        pthread_create(&th[k], NULL, touch, (void *)k);
    for (int k = 0; k < T; k++)
        pthread_join(th[k], NULL);
    double t1 = now();
    printf("%.1f GiB memfd populated by %d threads: %.3f s\n", N / 1073741824.0, T, t1 - t0);
    for (int r = 0; r < 2; r++) {
        t0 = now();
        CUresult e = cuMemcpyDtoH(P, d, N);
        t1 = now();
        printf("pageable copy %d: %.3f s (%.1f GB/s) rc %d\n", r, t1 - t0, N / (t1 - t0) / 1e9, e);
    }
    t0 = now();
    CUresult e = cuMemHostRegister(P, N, 0);
    t1 = now();
    printf("cuMemHostRegister: %.3f s rc %d\n", t1 - t0, e);
    for (int r = 0; r < 2 && !e; r++) {
        t0 = now();
        CUresult e2 = cuMemcpyDtoH(P, d, N);
        t1 = now();
        printf("pinned copy %d: %.3f s (%.1f GB/s) rc %d\n", r, t1 - t0, N / (t1 - t0) / 1e9, e2);
    }
    t0 = now();
    e = cuMemHostUnregister(P);
    printf("cuMemHostUnregister: %.3f s rc %d; P[12345] = 0x%02x\n", now() - t0, e,
           (unsigned char)P[12345]);
    return 0;
}
