/* cudrv — dlopen'd CUDA driver calls for the runner; see cudrv.h. */
#include "runner/cudrv.h"
#include "runner/cudrv_ptx.h"
#include "runner/cupti.h"
#include "common/util.h"
#include "common/xalloc.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUevent;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

#define CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE 38
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_JIT_INPUT_PTX 1

struct kf_cudrv {
    void *lib;
    CUdevice dev;
    CUcontext ctx;
    CUevent start, stop;
    CUdeviceptr flush;
    size_t flush_bytes;
    unsigned flush_value;
    /* The blocking kernel (see kf_cudrv_time): its module, function and the
     * host-mapped release flag; NULL when the driver could not load it. */
    void *block_mod, *block_fn, *flush_fn;
    volatile unsigned *release;
    /* The clock stamps (kf_stamp, nvbench's GPU frequency): SM 0's clock64
     * and %globaltimer before and after a sample, in the same host-mapped
     * block as the release flag; NULL without the module. */
    void *stamp_fn;
    /* The runner's kernels are named kf_block<ours>, ...: a random suffix
     * per runner, so the CUPTI timer (cupti.h) tells them from the
     * kernel's whatever it names its own. */
    char ours[24];
    kf_cupti *cupti; /* NULL: samples keep their events' time */
    int trace_tried; /* kf_cudrv_trace_open ran */
    int until_idle;
    double rest_s; /* kf_cudrv_rest */
    int nsm;
    CUevent after;
    CUdeviceptr release_dev;
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDeviceGet)(CUdevice *, int);
    CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuGetErrorName)(CUresult, const char **);
    CUresult (*cuGetErrorString)(CUresult, const char **);
    CUresult (*cuDeviceGetUuid)(unsigned char *, CUdevice);
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*cuModuleLoadData)(void **, const void *);
    CUresult (*cuModuleGetFunction)(void **, void *, const char *);
    CUresult (*cuModuleUnload)(void *);
    CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, CUstream, void **, void **);
    CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
    CUresult (*cuMemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
    CUresult (*cuMemFreeHost)(void *);
    CUresult (*cuProfilerStart)(void);
    CUresult (*cuProfilerStop)(void);
    CUresult (*cuMemGetInfo)(size_t *, size_t *);
    /* Optional (NULL: the node's compiled modules are not built here). */
    CUresult (*cuLinkCreate)(unsigned, void *, void **, void **);
    CUresult (*cuLinkAddData)(void *, int, void *, size_t, const char *, unsigned, void *, void **);
    CUresult (*cuLinkComplete)(void *, void **, size_t *);
    CUresult (*cuLinkDestroy)(void *);
    /* The node's compiled modules (cubins.h), owned; NULL: PTX each time. */
    kf_cubins *cubins;
    int major, minor, driver; /* the device's compute capability, the driver's version */
};

static int cu_fail(kf_cudrv *cu, CUresult r, const char *what, kf_err *err)
{
    const char *name = "?", *desc = "";
    if (cu && cu->cuGetErrorName)
        cu->cuGetErrorName(r, &name);
    if (cu && cu->cuGetErrorString)
        cu->cuGetErrorString(r, &desc);
    return kf_err_set(err, KF_EIO, "%s failed: %s (%d): %s", what, name ? name : "?", r,
                      desc ? desc : "");
}

/* 803 and 804 with the forward-compat libraries loaded (runner/compat.h)
 * mean the driver refused them: the message says which ones and why. */
static int init_fail(kf_cudrv *cu, CUresult r, kf_err *err)
{
    int rc = cu_fail(cu, r, "cuInit", err);
    const char *compat = getenv("KF_CUDA_COMPAT_DIR");
    if (!compat || !*compat || (r != 803 && r != 804) || !err)
        return rc;
    return kf_err_set(err, KF_EIO,
                      "%s (this runner loaded the forward-compatibility libraries in %s and the "
                      "driver refused them: they must come from a newer driver branch than the "
                      "node's, on a datacenter GPU)",
                      err->msg, compat);
}

#define SYM(cu, name, ver)                                                                         \
    do {                                                                                           \
        *(void **)&(cu)->name = dlsym((cu)->lib, ver);                                             \
        if (!(cu)->name) {                                                                         \
            missing = ver;                                                                         \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static int load(kf_cudrv *cu, kf_err *err)
{
    const char *missing = NULL;
    cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu->lib)
        return kf_err_set(err, KF_EUNAVAIL,
                          "no CUDA driver on this node (libcuda.so.1: %s); CUDA kernels need a "
                          "GPU node",
                          dlerror());
    SYM(cu, cuInit, "cuInit");
    SYM(cu, cuDeviceGet, "cuDeviceGet");
    SYM(cu, cuDeviceGetAttribute, "cuDeviceGetAttribute");
    SYM(cu, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    SYM(cu, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    SYM(cu, cuCtxSetCurrent, "cuCtxSetCurrent");
    SYM(cu, cuCtxSynchronize, "cuCtxSynchronize");
    SYM(cu, cuEventCreate, "cuEventCreate");
    SYM(cu, cuEventDestroy, "cuEventDestroy_v2");
    SYM(cu, cuEventRecord, "cuEventRecord");
    SYM(cu, cuEventSynchronize, "cuEventSynchronize");
    SYM(cu, cuEventElapsedTime, "cuEventElapsedTime");
    SYM(cu, cuMemAlloc, "cuMemAlloc_v2");
    SYM(cu, cuMemFree, "cuMemFree_v2");
    SYM(cu, cuMemcpyDtoH, "cuMemcpyDtoH_v2");
    SYM(cu, cuMemsetD8, "cuMemsetD8_v2");
    SYM(cu, cuMemsetD8Async, "cuMemsetD8Async");
    SYM(cu, cuGetErrorName, "cuGetErrorName");
    SYM(cu, cuGetErrorString, "cuGetErrorString");
    SYM(cu, cuDeviceGetUuid, "cuDeviceGetUuid_v2");
    SYM(cu, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    SYM(cu, cuMemcpyHtoD, "cuMemcpyHtoD_v2");
    SYM(cu, cuModuleLoadData, "cuModuleLoadData");
    SYM(cu, cuModuleGetFunction, "cuModuleGetFunction");
    SYM(cu, cuModuleUnload, "cuModuleUnload");
    SYM(cu, cuLaunchKernel, "cuLaunchKernel");
    SYM(cu, cuMemHostAlloc, "cuMemHostAlloc");
    SYM(cu, cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
    SYM(cu, cuMemFreeHost, "cuMemFreeHost");
    SYM(cu, cuProfilerStart, "cuProfilerStart");
    SYM(cu, cuProfilerStop, "cuProfilerStop");
    SYM(cu, cuMemGetInfo, "cuMemGetInfo_v2");
    *(void **)&cu->cuLinkCreate = dlsym(cu->lib, "cuLinkCreate_v2");
    *(void **)&cu->cuLinkAddData = dlsym(cu->lib, "cuLinkAddData_v2");
    *(void **)&cu->cuLinkComplete = dlsym(cu->lib, "cuLinkComplete");
    *(void **)&cu->cuLinkDestroy = dlsym(cu->lib, "cuLinkDestroy");
    return KF_OK;
fail:
    return kf_err_set(err, KF_EUNAVAIL, "the CUDA driver lacks %s; update the driver", missing);
}

static void load_block_kernel(kf_cudrv *cu);

int kf_cudrv_open(kf_cudrv **out, kf_cubins *cubins, kf_err *err)
{
    kf_cudrv *cu = kf_xcalloc(1, sizeof *cu);
    cu->cubins = cubins;
    int rc = load(cu, err);
    CUresult r = 0;
    if (rc)
        goto out;
    if ((r = cu->cuInit(0)))
        rc = init_fail(cu, r, err);
    else if ((r = cu->cuDeviceGet(&cu->dev, 0)))
        rc = cu_fail(cu, r, "cuDeviceGet(0)", err);
    else if ((r = cu->cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev)))
        rc = cu_fail(cu, r, "cuDevicePrimaryCtxRetain", err);
    else if ((r = cu->cuCtxSetCurrent(cu->ctx)))
        rc = cu_fail(cu, r, "cuCtxSetCurrent", err);
    else if ((r = cu->cuEventCreate(&cu->start, 0)) || (r = cu->cuEventCreate(&cu->stop, 0)) ||
             (r = cu->cuEventCreate(&cu->after, 0)))
        rc = cu_fail(cu, r, "cuEventCreate", err);
    if (rc == KF_OK) {
        CUresult (*version)(int *) = (CUresult(*)(int *))dlsym(cu->lib, "cuDriverGetVersion");
        cu->cuDeviceGetAttribute(&cu->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev);
        cu->cuDeviceGetAttribute(&cu->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev);
        if (!version || version(&cu->driver) != 0)
            cu->driver = 0;
        int l2 = 0;
        cu->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, cu->dev);
        cu->flush_bytes = 2 * (size_t)(l2 > 0 ? l2 : 64 << 20);
        if ((r = cu->cuMemAlloc(&cu->flush, cu->flush_bytes)) ||
            (r = cu->cuMemsetD8(cu->flush, 0x5A, cu->flush_bytes)))
            rc = cu_fail(cu, r, "cuMemAlloc (L2 flush buffer)", err);
        else
            load_block_kernel(cu);
    }
out:
    if (rc) {
        kf_cudrv_close(&cu);
        return rc;
    }
    *out = cu;
    return KF_OK;
}

void kf_cudrv_close(kf_cudrv **self)
{
    kf_cudrv *cu = self ? *self : NULL;
    if (!cu)
        return;
    kf_cupti_close(&cu->cupti);
    if (cu->flush)
        cu->cuMemFree(cu->flush);
    if (cu->release)
        cu->cuMemFreeHost((void *)cu->release);
    if (cu->start)
        cu->cuEventDestroy(cu->start);
    if (cu->stop)
        cu->cuEventDestroy(cu->stop);
    if (cu->after)
        cu->cuEventDestroy(cu->after);
    /* The primary context stays retained: the kernel's runtime still uses it
     * until the runner exits. */
    kf_cubins_free(&cu->cubins);
    free(cu);
    *self = NULL;
}

int kf_cudrv_copy_to_host(kf_cudrv *cu, void *dst, const void *dev_src, size_t n, kf_err *err)
{
    CUresult r = cu->cuMemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)dev_src, n);
    return r ? cu_fail(cu, r, "copying the output to the host", err) : KF_OK;
}

int kf_cudrv_memset(kf_cudrv *cu, void *dev_dst, unsigned char value, size_t n, kf_err *err)
{
    CUresult r = cu->cuMemsetD8((CUdeviceptr)(uintptr_t)dev_dst, value, n);
    return r ? cu_fail(cu, r, "poisoning the output", err) : KF_OK;
}

int kf_cudrv_sync(kf_cudrv *cu, kf_err *err)
{
    CUresult r = cu->cuCtxSynchronize();
    return r ? cu_fail(cu, r, "the kernel (cuCtxSynchronize)", err) : KF_OK;
}

int kf_cudrv_mem_info(kf_cudrv *cu, size_t *free_b, size_t *total_b, kf_err *err)
{
    CUresult r = cu->cuMemGetInfo(free_b, total_b);
    return r ? cu_fail(cu, r, "cuMemGetInfo", err) : KF_OK;
}

static int ours_fn(kf_cudrv *cu, void **fn, const char *name)
{
    char full[64];
    snprintf(full, sizeof full, "%s%s", name, cu->ours);
    return cu->cuModuleGetFunction(fn, cu->block_mod, full);
}

/* Module `module` from the node's compiled image of ptx (cubins.h), its
 * placeholder named `suffix` (NULL: none): 1 when loaded so, 0 when there is
 * no such image or the driver refused it (then the PTX's turn). */
static int load_image(kf_cudrv *cu, const char *module, const char *ptx, const char *suffix,
                      void **mod)
{
    if (!cu->cubins || !cu->driver)
        return 0;
    char key[KF_CUBINS_KEY_MAX];
    size_t len = 0;
    kf_cubins_key(key, module, cu->major, cu->minor, cu->driver, ptx);
    const void *img = kf_cubins_find(cu->cubins, key, &len);
    void *named = img && suffix ? kf_cubins_named(img, len, suffix) : NULL;
    int ok = img && (!suffix || named) && cu->cuModuleLoadData(mod, named ? named : img) == 0;
    free(named);
    return ok;
}

static void load_block_kernel(kf_cudrv *cu)
{
    void *host = NULL;
    snprintf(cu->ours, sizeof cu->ours, "_kf%016llx", (unsigned long long)kf_unpredictable_u64());
    char *ptx = kf_cudrv_ptx_named(KF_CUBINS_PLACEHOLDER);
    int loaded = load_image(cu, KF_CUDRV_PTX_MODULE, ptx, cu->ours, &cu->block_mod);
    free(ptx);
    if (loaded && ours_fn(cu, &cu->block_fn, "kf_block") != 0) { /* not our names: the PTX */
        cu->cuModuleUnload(cu->block_mod);
        loaded = 0;
    }
    if (!loaded) {
        ptx = kf_cudrv_ptx_named(cu->ours);
        loaded = cu->cuModuleLoadData(&cu->block_mod, ptx) == 0;
        free(ptx);
    }
    if (!loaded || ours_fn(cu, &cu->block_fn, "kf_block") != 0 ||
        ours_fn(cu, &cu->flush_fn, "kf_flush") != 0 ||
        cu->cuMemHostAlloc(&host, 128, 0x1 | 0x2) != 0 || /* PORTABLE | DEVICEMAP */
        cu->cuMemHostGetDevicePointer(&cu->release_dev, host, 0) != 0) {
        if (host)
            cu->cuMemFreeHost(host);
        cu->block_fn = cu->flush_fn = NULL;
        return;
    }
    cu->release = host;
    if (ours_fn(cu, &cu->stamp_fn, "kf_stamp") != 0 ||
        cu->cuDeviceGetAttribute(&cu->nsm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cu->dev) !=
            0 ||
        cu->nsm <= 0)
        cu->stamp_fn = NULL;
}

/* The stamps live 64 bytes into the host-mapped block: [0] before, [2]
 * after, [4] once the context is idle, each {globaltimer ns, clock64};
 * [6] is the blocking kernel's release time (globaltimer ns). */
static volatile uint64_t *stamps(kf_cudrv *cu)
{
    return (volatile uint64_t *)((volatile char *)cu->release + 64);
}

static int stamp(kf_cudrv *cu, int which)
{
    CUdeviceptr out = cu->release_dev + 64 + (CUdeviceptr)which * 16;
    void *args[] = {&out};
    return cu->cuLaunchKernel(cu->stamp_fn, 2 * (unsigned)cu->nsm, 1, 1, 1, 1, 1, 0,
                              CU_STREAM_LEGACY, args, NULL) == 0;
}

/* SM 0's mean clock between the two stamps, MHz; 0 when a stamp is missing
 * (no block ran on SM 0) or the interval is too short for %globaltimer's
 * resolution (it ticks in up to 1 us steps on some GPUs). */
static double stamped_mhz(kf_cudrv *cu)
{
    volatile uint64_t *st = stamps(cu);
    uint64_t g0 = st[0], c0 = st[1], g1 = st[2], c1 = st[3];
    if (!g0 || !g1 || g1 <= g0 + 20000 || c1 <= c0)
        return 0;
    return (double)(c1 - c0) / (double)(g1 - g0) * 1000.0;
}

int kf_cudrv_blocking(const kf_cudrv *cu)
{
    return cu->block_fn != NULL;
}

int kf_cudrv_time(kf_cudrv *cu, int hot, unsigned batch, kf_cudrv_run_fn run, void *state,
                  kf_cudrv_timing *out, kf_err *err)
{
    CUresult r;
    uint64_t te = kf_mono_ns();
    if (!hot && cu->flush_fn) {
        unsigned long long n16 = cu->flush_bytes / 16;
        CUdeviceptr sink = cu->release_dev + 32;
        void *args[] = {&cu->flush, &n16, &sink};
        if ((r = cu->cuLaunchKernel(cu->flush_fn, 1024, 1, 1, 256, 1, 1, 0, CU_STREAM_LEGACY, args,
                                    NULL)))
            return cu_fail(cu, r, "flushing L2", err);
    } else if (!hot) {
        /* Without the PTX module: a different byte each time, so the write
         * is never elided (it leaves dirty lines the kernel evicts). */
        cu->flush_value = (cu->flush_value + 1) & 0xFF;
        if ((r = cu->cuMemsetD8Async(cu->flush, (unsigned char)cu->flush_value, cu->flush_bytes,
                                     CU_STREAM_LEGACY)))
            return cu_fail(cu, r, "flushing L2", err);
    }
    int blocked = 0, stamped = 0;
    out->sm_mhz = 0;
    out->idle_s = 0;
    out->enqueue_s = out->wait_s = 0;
    out->rest_s = 0;
    if (cu->block_fn) {
        *cu->release = 0;
        cu->release[2] = 0; /* the blocker's "running" word */
        if (cu->stamp_fn)
            for (int i = 0; i < 7; i++)
                stamps(cu)[i] = 0;
        __sync_synchronize();
        void *args[] = {&cu->release_dev};
        blocked = cu->cuLaunchKernel(cu->block_fn, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_LEGACY, args,
                                     NULL) == 0;
        /* Behind the blocking kernel: it runs once released, right before
         * the start event, with no host latency between. */
        stamped = blocked && cu->stamp_fn && stamp(cu, 0);
        /* Until idle, the interval starts at the blocker's release: wait
         * for it to spin first, or work the kernel puts on another stream
         * (which starts at once) would run while the blocker still waits
         * behind the L2 flush, before the interval. */
        if (blocked && cu->until_idle) {
            uint64_t t0 = kf_mono_ns();
            while (!cu->release[2] && kf_mono_ns() - t0 < 1000000000ull)
                __sync_synchronize();
        }
        if (blocked && cu->rest_s > 0) {
            /* The blocker spins through the rest: the GPU stays awake at one
             * SM's power. */
            out->rest_s = kf_sleep_s(fmin(cu->rest_s, KF_CUDRV_REST_MAX_S));
        }
    }
    int launch_failed = 0;
    char kerr[512] = "";
    if ((r = cu->cuEventRecord(cu->start, CU_STREAM_LEGACY)) == 0) {
        for (unsigned i = 0; i < (batch ? batch : 1) && !launch_failed; i++)
            launch_failed = run(state, kerr, sizeof kerr) != 0;
        if (!launch_failed)
            r = cu->cuEventRecord(cu->stop, CU_STREAM_LEGACY);
    }
    if (blocked) { /* released on every path, or the stream waits its 1 s */
        __sync_synchronize();
        *cu->release = 1;
    }
    if (launch_failed)
        return kf_err_set(err, KF_EIO, "launch failed: %s", kerr);
    if (r)
        return cu_fail(cu, r, "cuEventRecord", err);
    stamped = stamped && stamp(cu, 1) && cu->cuEventRecord(cu->after, CU_STREAM_LEGACY) == 0;
    uint64_t tw = kf_mono_ns();
    out->enqueue_s = (double)(tw - te) / 1e9 - out->rest_s;
    if ((r = cu->cuEventSynchronize(stamped ? cu->after : cu->stop)))
        return cu_fail(cu, r, "the kernel", err);
    out->wait_s = (double)(kf_mono_ns() - tw) / 1e9;
    if (stamped) {
        __sync_synchronize();
        out->sm_mhz = stamped_mhz(cu);
    }
    if (stamped && cu->until_idle) {
        /* Every stream of the context drained, then one more stamp: the
         * interval covers work the kernel put anywhere. */
        if ((r = cu->cuCtxSynchronize()))
            return cu_fail(cu, r, "the kernel (on another stream)", err);
        if (stamp(cu, 2) && cu->cuCtxSynchronize() == 0) {
            __sync_synchronize();
            volatile uint64_t *st = stamps(cu);
            if (st[6] && st[4] > st[6])
                out->idle_s = (double)(st[4] - st[6]) / 1e9;
        }
    }
    float ms = 0;
    if ((r = cu->cuEventElapsedTime(&ms, cu->start, cu->stop)))
        return cu_fail(cu, r, "cuEventElapsedTime", err);
    out->event_s = out->seconds = (double)ms / 1e3 / (batch ? batch : 1);
    out->traced = 0;
    if (cu->cupti && blocked) { /* 0 ns unless recording (kf_cudrv_trace) */
        /* The stop event has completed, so has every legacy-stream record;
         * work on other streams is in only when timed until idle. */
        uint64_t tc = kf_mono_ns();
        unsigned long long ns = kf_cupti_sample_ns(cu->cupti);
        out->wait_s += (double)(kf_mono_ns() - tc) / 1e9;
        if (ns) {
            out->seconds = (double)ns / 1e9 / (batch ? batch : 1);
            out->traced = 1;
        }
    }
    return KF_OK;
}

int kf_cudrv_timer_setting(int *events, kf_err *err)
{
    const char *t = getenv("KF_TIMER");
    *events = t && strcmp(t, "events") == 0;
    if (t && *t && !*events && strcmp(t, "cupti") != 0)
        return kf_err_set(err, KF_EINVAL,
                          "KF_TIMER=%.64s in the environment: it takes cupti (samples timed by "
                          "CUPTI's activity records where libcupti loads, the default) or events "
                          "(the event pair around the launches)",
                          t);
    return KF_OK;
}

int kf_cudrv_trace_open(kf_cudrv *cu, kf_err *err)
{
    int events, rc = kf_cudrv_timer_setting(&events, err);
    if (rc != KF_OK || cu->trace_tried) /* once per runner: it would end the same way */
        return rc;
    cu->trace_tried = 1;
    if (events)
        return kf_err_set(err, KF_EUNAVAIL, "KF_TIMER=events");
    if (!cu->block_fn)
        return kf_err_set(err, KF_EUNAVAIL, "no blocking kernel to mark a sample's start");
    return kf_cupti_open(&cu->cupti, cu->ours, err);
}

size_t kf_cudrv_launches(kf_cudrv *cu, kf_cupti_launch *out, size_t max)
{
    return kf_cupti_launches(cu->cupti, out, max);
}

int kf_cudrv_trace(kf_cudrv *cu, int on)
{
    if (!cu->cupti || kf_cupti_record(cu->cupti, on) != KF_OK)
        return 0;
    return on;
}

void kf_cudrv_rest(kf_cudrv *cu, double seconds)
{
    cu->rest_s = seconds > 0 ? seconds : 0;
}

void kf_cudrv_until_idle(kf_cudrv *cu, int on)
{
    cu->until_idle = on;
}

static int run_nothing(void *state, char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int kf_cudrv_idle_overhead(kf_cudrv *cu, unsigned n, double *out, kf_err *err)
{
    double v[64];
    unsigned k = 0;
    int was = cu->until_idle;
    *out = 0;
    cu->until_idle = 1;
    for (unsigned i = 0; i < n && i < 64; i++) {
        kf_cudrv_timing tm;
        int rc = kf_cudrv_time(cu, 1, 1, run_nothing, NULL, &tm, err);
        if (rc != KF_OK) {
            cu->until_idle = was;
            return rc;
        }
        if (tm.idle_s > 0)
            v[k++] = tm.idle_s;
    }
    cu->until_idle = was;
    if (k) {
        qsort(v, k, sizeof *v, cmp_double);
        *out = v[k / 2];
    }
    return KF_OK;
}

int kf_cudrv_compute_capability(int dev, int *major, int *minor)
{
    kf_cudrv cu = {0};
    kf_err err;
    if (load(&cu, &err) != KF_OK) {
        if (cu.lib)
            dlclose(cu.lib);
        return KF_EUNAVAIL;
    }
    CUdevice d;
    int rc = KF_EUNAVAIL;
    if (cu.cuInit(0) == 0 && cu.cuDeviceGet(&d, dev) == 0 &&
        cu.cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) == 0 &&
        cu.cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) == 0)
        rc = KF_OK;
    return rc;
}

int kf_cudrv_driver_version(int *version)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return KF_EUNAVAIL;
    CUresult (*get)(int *) = (CUresult(*)(int *))dlsym(lib, "cuDriverGetVersion");
    int rc = get && get(version) == 0 ? KF_OK : KF_EUNAVAIL;
    return rc;
}

static int after(const char *line, const char *pat)
{
    const char *p = strstr(line, pat);
    if (!p)
        return -1;
    /* The number stands just before the pattern: "... 40 bytes stack frame". */
    while (p > line && p[-1] == ' ')
        p--;
    while (p > line && p[-1] >= '0' && p[-1] <= '9')
        p--;
    return atoi(p);
}

void kf_cudrv_parse_ptxas(const char *log, int *regs, int *smem, int *stack, int *spill)
{
    *regs = *smem = *stack = *spill = 0;
    const char *line = log;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        char buf[512];
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        if (n >= sizeof buf)
            n = sizeof buf - 1;
        memcpy(buf, line, n);
        buf[n] = '\0';
        int v;
        if ((v = after(buf, " registers")) > *regs)
            *regs = v;
        if ((v = after(buf, " bytes smem")) > *smem)
            *smem = v;
        if ((v = after(buf, " bytes stack frame")) > *stack)
            *stack = v;
        if ((v = after(buf, " bytes spill stores")) > *spill)
            *spill = v;
        line = nl ? nl + 1 : NULL;
    }
}

int kf_cudrv_uuid(kf_cudrv *cu, char *out, size_t len)
{
    unsigned char u[16];
    if (cu->cuDeviceGetUuid(u, cu->dev) != 0)
        return KF_EUNAVAIL;
    /* NVML's spelling: GPU-8-4-4-4-12 hex digits. */
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    return KF_OK;
}

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int kf_cudrv_copy_bandwidth(kf_cudrv *cu, size_t bytes, int reps, double *gbps, kf_err *err)
{
    CUdeviceptr a = 0, b = 0;
    CUresult r;
    int rc = KF_OK;
    float ms[64];
    if (reps < 1 || reps > 64)
        reps = 20;
    if ((r = cu->cuMemAlloc(&a, bytes)) || (r = cu->cuMemAlloc(&b, bytes))) {
        rc = cu_fail(cu, r, "cuMemAlloc (copy ceiling)", err);
        goto out;
    }
    /* Not zeros: a fill pattern the copy engine cannot shortcut. */
    if ((r = cu->cuMemsetD8(a, 0xA5, bytes))) {
        rc = cu_fail(cu, r, "cuMemsetD8", err);
        goto out;
    }
    for (int i = -2; i < reps; i++) { /* two warm-ups */
        if ((r = cu->cuEventRecord(cu->start, CU_STREAM_LEGACY)) ||
            (r = cu->cuMemcpyDtoDAsync(b, a, bytes, CU_STREAM_LEGACY)) ||
            (r = cu->cuEventRecord(cu->stop, CU_STREAM_LEGACY)) ||
            (r = cu->cuEventSynchronize(cu->stop))) {
            rc = cu_fail(cu, r, "device-to-device copy", err);
            goto out;
        }
        if (i >= 0 && (r = cu->cuEventElapsedTime(&ms[i], cu->start, cu->stop))) {
            rc = cu_fail(cu, r, "cuEventElapsedTime", err);
            goto out;
        }
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp_f);
    /* Bytes read plus bytes written, per the median copy. */
    *gbps = 2.0 * (double)bytes / ((double)ms[reps / 2] / 1e3) / 1e9;
out:
    if (a)
        cu->cuMemFree(a);
    if (b)
        cu->cuMemFree(b);
    return rc;
}

int kf_cudrv_alloc(kf_cudrv *cu, void **out, size_t n, kf_err *err)
{
    CUdeviceptr p = 0;
    CUresult r = cu->cuMemAlloc(&p, n);
    if (r)
        return cu_fail(cu, r, "cuMemAlloc", err);
    *out = (void *)(uintptr_t)p;
    return KF_OK;
}

void kf_cudrv_free(kf_cudrv *cu, void *p)
{
    if (p)
        cu->cuMemFree((CUdeviceptr)(uintptr_t)p);
}

int kf_cudrv_copy_to_device(kf_cudrv *cu, void *dev_dst, const void *src, size_t n, kf_err *err)
{
    CUresult r = cu->cuMemcpyHtoD((CUdeviceptr)(uintptr_t)dev_dst, src, n);
    return r ? cu_fail(cu, r, "copying to the device", err) : KF_OK;
}

int kf_cudrv_copy_device(kf_cudrv *cu, void *dev_dst, const void *dev_src, size_t n, kf_err *err)
{
    CUresult r = cu->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)dev_dst,
                                       (CUdeviceptr)(uintptr_t)dev_src, n, CU_STREAM_LEGACY);
    return r ? cu_fail(cu, r, "copying on the device", err) : KF_OK;
}

int kf_cudrv_module_load(kf_cudrv *cu, const char *module, const char *ptx, void **mod, kf_err *err)
{
    if (load_image(cu, module, ptx, NULL, mod))
        return KF_OK;
    CUresult r = cu->cuModuleLoadData(mod, ptx);
    return r ? cu_fail(cu, r, "loading the harness's PTX (cuModuleLoadData)", err) : KF_OK;
}

int kf_cudrv_compile(kf_cudrv *cu, const char *module, const char *ptx, char key[KF_CUBINS_KEY_MAX],
                     void **img, size_t *len, kf_err *err)
{
    *img = NULL;
    if (!cu->cuLinkCreate || !cu->cuLinkAddData || !cu->cuLinkComplete || !cu->cuLinkDestroy ||
        !cu->driver)
        return kf_err_set(err, KF_EUNAVAIL, "the CUDA driver lacks cuLink* or its version");
    void *link = NULL, *out = NULL;
    CUresult r = cu->cuLinkCreate(0, NULL, NULL, &link);
    if (!r)
        r = cu->cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)ptx, strlen(ptx) + 1, module, 0, NULL,
                              NULL);
    if (!r)
        r = cu->cuLinkComplete(link, &out, len);
    if (!r && *len) { /* the image is the link state's: copied before it goes */
        *img = kf_xmalloc(*len);
        memcpy(*img, out, *len);
        kf_cubins_key(key, module, cu->major, cu->minor, cu->driver, ptx);
    }
    if (link)
        cu->cuLinkDestroy(link);
    return r      ? cu_fail(cu, r, "compiling the harness's PTX (cuLink)", err)
           : *img ? KF_OK
                  : kf_err_set(err, KF_EIO, "cuLinkComplete gave an empty image");
}

int kf_cudrv_module_function(kf_cudrv *cu, void *mod, const char *name, void **fn, kf_err *err)
{
    CUresult r = cu->cuModuleGetFunction(fn, mod, name);
    return r ? cu_fail(cu, r, name, err) : KF_OK;
}

void kf_cudrv_module_unload(kf_cudrv *cu, void *mod)
{
    if (mod)
        cu->cuModuleUnload(mod);
}

int kf_cudrv_launch(kf_cudrv *cu, void *fn, unsigned grid, unsigned block, void **args, kf_err *err)
{
    CUresult r = cu->cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, CU_STREAM_LEGACY, args, NULL);
    return r ? cu_fail(cu, r, "launching the harness's kernel", err) : KF_OK;
}

int kf_cudrv_mark(kf_cudrv *cu, int stop)
{
    return cu->cuEventRecord(stop ? cu->stop : cu->start, CU_STREAM_LEGACY) ? KF_EIO : KF_OK;
}

int kf_cudrv_elapsed(kf_cudrv *cu, double *seconds, kf_err *err)
{
    CUresult r;
    float ms = 0;
    if ((r = cu->cuEventSynchronize(cu->stop)))
        return cu_fail(cu, r, "cuEventSynchronize", err);
    if ((r = cu->cuEventElapsedTime(&ms, cu->start, cu->stop)))
        return cu_fail(cu, r, "cuEventElapsedTime", err);
    *seconds = (double)ms / 1e3;
    return KF_OK;
}

int kf_cudrv_profiler(kf_cudrv *cu, int on, kf_err *err)
{
    CUresult r = on ? cu->cuProfilerStart() : cu->cuProfilerStop();
    return r ? cu_fail(cu, r, on ? "cuProfilerStart" : "cuProfilerStop", err) : KF_OK;
}

size_t kf_cudrv_l2_bytes(const kf_cudrv *cu)
{
    return cu->flush_bytes / 2;
}
