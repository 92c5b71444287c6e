/* cudrv — the few CUDA driver API calls the runner needs, through
 * dlopen("libcuda.so.1"): the agent and runner link no CUDA library, so one
 * bundle runs on any driver.
 *
 * The runner makes the device's primary context current before the kernel's
 * setup runs; the kernel's own CUDA runtime calls then share that context,
 * so device pointers the kernel hands back are valid here, and events on the
 * legacy default stream order against the kernel's launches. */
#ifndef KF_CUDRV_H
#define KF_CUDRV_H

#include "common/err.h"
#include "runner/cubins.h"
#include "runner/cupti.h"

#include <stddef.h>

typedef struct kf_cudrv kf_cudrv;

typedef struct kf_cudrv_timing {
    double seconds; /* per launch */
    /* SM 0's mean clock over the sample (clock64 over %globaltimer, read by
     * a stamp kernel on each side, as nvbench's gpu_frequency); 0 when it
     * could not be read. Power and thermal events are NVML's (nvml.h). */
    double sm_mhz;
    /* With kf_cudrv_until_idle on: from the blocking kernel's release (the
     * launches are enqueued by then) to a stamp launched once the whole
     * context was idle (every stream, not only the legacy one), in seconds;
     * 0 when off or unstamped. It holds the host's wake-up and a launch
     * besides the work: compare it with an empty run's
     * (kf_cudrv_idle_overhead). Work another stream began while the host
     * was still enqueuing (microseconds) is not in it. */
    double idle_s;
    /* Host time: enqueuing the sample (flush, blocker, stamps, events, the
     * kernel's launches) and waiting for it (the event synchronise, which
     * holds the flush's and the kernel's device time). */
    double enqueue_s, wait_s;
    /* seconds is the sample's span in CUPTI's records (kf_cudrv_trace on
     * and the records complete: traced 1), else event_s, the event pair's
     * time per launch, which event_s always is. */
    double event_s;
    int traced;
    double rest_s; /* host time the blocker spun before the kernel (kf_cudrv_rest) */
} kf_cudrv_timing;

typedef int (*kf_cudrv_run_fn)(void *state, char *err, size_t errlen);

/* Opens the driver, device 0 (as CUDA_VISIBLE_DEVICES shows it), its primary
 * context, two events and a flush buffer of twice the L2. cubins: the
 * node's compiled modules (cubins.h), taken (freed with the driver, or
 * at once when the open fails); NULL: every module compiled from its PTX. */
int kf_cudrv_open(kf_cudrv **out, kf_cubins *cubins, kf_err *err);
void kf_cudrv_close(kf_cudrv **self);

int kf_cudrv_copy_to_host(kf_cudrv *cu, void *dst, const void *dev_src, size_t n, kf_err *err);
int kf_cudrv_memset(kf_cudrv *cu, void *dev_dst, unsigned char value, size_t n, kf_err *err);
/* Waits for the device; a kernel fault comes back as its driver error name. */
int kf_cudrv_sync(kf_cudrv *cu, kf_err *err);
/* The device memory free and in all, as the driver counts it. */
int kf_cudrv_mem_info(kf_cudrv *cu, size_t *free_b, size_t *total_b, kf_err *err);

/* Times `batch` back-to-back launches of run between two events on the
 * legacy stream, L2 flushed first unless hot. A blocking kernel holds the
 * stream while they are enqueued (as nvbench does), so the host's launch
 * latency stays out of the interval. */
int kf_cudrv_time(kf_cudrv *cu, int hot, unsigned batch, kf_cudrv_run_fn run, void *state,
                  kf_cudrv_timing *out, kf_err *err);

/* KF_TIMER from the environment: cupti (or unset) or events (*events 1);
 * KF_EINVAL, saying what it takes, for anything else. */
int kf_cudrv_timer_setting(int *events, kf_err *err);
/* Loads libcupti for kf_cudrv_trace (cupti.h), once per runner: KF_EUNAVAIL,
 * saying why, the first time it cannot (or KF_TIMER=events), KF_OK after;
 * KF_EINVAL for a bad KF_TIMER, every time. */
int kf_cudrv_trace_open(kf_cudrv *cu, kf_err *err);
/* On: samples are timed by CUPTI's activity records (first start to last
 * end of the sample's work), which leaves the first launch's and the
 * completion's latency out; off, or without kf_cudrv_trace_open, by the
 * event pair. Returns 1 when samples will be traced. */
int kf_cudrv_trace(kf_cudrv *cu, int on);
/* What the samples recorded since kf_cudrv_trace(cu, 1) launched, by
 * kernel name (cupti.h); 0 entries without CUPTI. */
size_t kf_cudrv_launches(kf_cudrv *cu, kf_cupti_launch *out, size_t max);

/* A rest's cap: the blocker that spins through it gives up by itself after
 * 1 s. */
#define KF_CUDRV_REST_MAX_S 0.5
/* Before each later sample's kernel, the blocker holds the stream `seconds`
 * longer (at most KF_CUDRV_REST_MAX_S; 0: none), the L2 flush ahead of it: the GPU rests
 * at one SM's power, awake, so a power-bound kernel's sample starts under
 * the power limit's average without an idle GPU's clock ramp (thermal.h). */
void kf_cudrv_rest(kf_cudrv *cu, double seconds);

/* Also time each sample until the context is idle (timing.idle_s): work a
 * kernel left on another stream escapes the events on the legacy stream. */
void kf_cudrv_until_idle(kf_cudrv *cu, int on);
/* The median idle_s of `n` samples of nothing (no launch between the
 * events): what idle_s holds besides a kernel's work. 0 without stamps. */
int kf_cudrv_idle_overhead(kf_cudrv *cu, unsigned n, double *out, kf_err *err);

/* Device memory in the primary context, for the doctor's own buffers. */
int kf_cudrv_alloc(kf_cudrv *cu, void **out, size_t n, kf_err *err);
void kf_cudrv_free(kf_cudrv *cu, void *p);
int kf_cudrv_copy_to_device(kf_cudrv *cu, void *dev_dst, const void *src, size_t n, kf_err *err);
/* Copies n bytes from device to device on the legacy stream (ordered
 * with the copies, memsets and launches here; not waited for). */
int kf_cudrv_copy_device(kf_cudrv *cu, void *dev_dst, const void *dev_src, size_t n, kf_err *err);
/* The harness's own device code (devcmp.c): a PTX module loaded into the
 * primary context (*mod, unloaded with kf_cudrv_module_unload) from the
 * node's compiled image of it under `module` (cubins.h) where there is
 * one, else from the PTX; a function of it, and a 1-D launch of one on the
 * legacy stream (not waited for: a fault surfaces at the next copy or
 * kf_cudrv_sync). */
int kf_cudrv_module_load(kf_cudrv *cu, const char *module, const char *ptx, void **mod,
                         kf_err *err);
/* The doctor's (cubins.h): ptx compiled for this device by the driver, the
 * image (*img, freed by the caller) and its key. 0, or KF_EUNAVAIL (a
 * driver without cuLink) / KF_EIO with err. */
int kf_cudrv_compile(kf_cudrv *cu, const char *module, const char *ptx, char key[KF_CUBINS_KEY_MAX],
                     void **img, size_t *len, kf_err *err);
int kf_cudrv_module_function(kf_cudrv *cu, void *mod, const char *name, void **fn, kf_err *err);
void kf_cudrv_module_unload(kf_cudrv *cu, void *mod);
int kf_cudrv_launch(kf_cudrv *cu, void *fn, unsigned grid, unsigned block, void **args,
                    kf_err *err);
/* Records the start (stop = 0) or stop event on the legacy stream, and the
 * time between them once the stop event completed. */
int kf_cudrv_mark(kf_cudrv *cu, int stop);
int kf_cudrv_elapsed(kf_cudrv *cu, double *seconds, kf_err *err);

/* Opens (on = 1) or closes the range a profiler started with
 * --profile-from-start off records. */
int kf_cudrv_profiler(kf_cudrv *cu, int on, kf_err *err);

/* The device's UUID as NVML spells it ("GPU-xxxxxxxx-xxxx-…"). */
int kf_cudrv_uuid(kf_cudrv *cu, char *out, size_t len);

/* The device-to-device copy rate of `bytes`-sized copies, counting bytes
 * read plus written, median of `reps` after two warm-ups: the memory
 * ceiling profiles are compared with. */
int kf_cudrv_copy_bandwidth(kf_cudrv *cu, size_t bytes, int reps, double *gbps, kf_err *err);

/* The device's L2 size in bytes. */
size_t kf_cudrv_l2_bytes(const kf_cudrv *cu);

/* Whether the blocking kernel loaded (else timing includes launch gaps). */
int kf_cudrv_blocking(const kf_cudrv *cu);

/* Compute capability of device `dev` without keeping the driver open. */
int kf_cudrv_compute_capability(int dev, int *major, int *minor);
/* The CUDA version the driver supports (cuDriverGetVersion, e.g. 13000). */
int kf_cudrv_driver_version(int *version);

/* Reads ptxas -v output: registers, shared memory, stack frame and spill
 * bytes of the largest kernel reported (0 when absent). */
void kf_cudrv_parse_ptxas(const char *log, int *regs, int *smem, int *stack, int *spill);

#endif
