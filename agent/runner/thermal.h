/* thermal — the profile's thermal protocol (issue 32): what a GPU number
 * means when the GPU's clock follows its temperature and power.
 *
 * Under both protocols, before its first kept sample the profile runs the
 * kernel, timed but not kept, until the SM clock that the in-stream stamps
 * measure (cudrv: clock64 over %globaltimer, nvbench's gpu_frequency)
 * holds steady. Then:
 *
 * "burst" (the default): before each sample's kernel the GPU rests as long
 * as the last sample ran (kf_thermal_rest), awake: the runner's blocker
 * spins on one SM (cudrv's kf_cudrv_rest), so no idle clock ramp is timed.
 * The GPU works at most half the time, under its power limit's average, so
 * a kernel that would draw the limit back to back (a large GEMM) runs at
 * the clock it gets alone, as ncu's replays and a model's single GEMM see
 * it. Back to back the power controller moves such a kernel among clock
 * steps every few tens of milliseconds (an H200, cuBLAS bf16 8192^3: 1401
 * to 1506 us, median 1474 us; rested 1402 us, ncu 1402 us), and which steps
 * a profile catches depends on what ran before it. The rests cost as much
 * device time as the samples, at most KF_THERMAL_REST_MAX_S each; samples
 * under KF_THERMAL_REST_MIN_S have theirs in the host's time between.
 *
 * "sustained" (measure: {thermal: sustained}, or a runner whose blocker
 * did not load): samples back to back, the kernel at its power cap as a
 * long loop of it runs; needs many samples to average the controller's
 * steps.
 *
 * Host kernels have no protocol ("host": the CPU's clock is not observed).
 *
 * Then the throttle policy judges each sample from what is already
 * measured: the stamps' clock and the NVML sampler thread's readings
 * inside the sample (no NVML call per sample). A sample is discarded when
 * its clock is under the threshold or a thermal or hardware slowdown (or
 * the power brake) was seen; the software power cap alone only flags it
 * throttled, since a kernel that draws the power limit runs there. A
 * sample discarded while the GPU throttled is followed by a recovery wait,
 * but the waits together may not exceed the time measured so far (kept
 * and discarded samples): the waits grow with the sample count, not with
 * the timeout; a wait the budget does not allow is skipped and counted,
 * and the report says so. */
#ifndef KF_THERMAL_H
#define KF_THERMAL_H

#include "runner/cudrv.h"
#include "runner/nvml.h"

#include <stdint.h>

typedef struct kf_thermal {
    /* The policy, from the sweep's measure settings. */
    int keep;                            /* throttle: keep (flag, never discard) */
    int sustained;                       /* thermal: sustained (no rests) */
    double recovery_s;                   /* the wait after a discarded sample */
    uint32_t default_mhz, threshold_mhz; /* 0: NVML does not say */
    /* What happened. */
    double waits_s;          /* waited after discarded samples */
    uint32_t waits_skipped;  /* waits the budget (time measured) did not allow */
    double warmup_s;         /* the warm-up to a steady clock, device time */
    uint32_t warmup_samples; /* its samples (timed, not kept) */
    uint32_t steady_mhz;     /* the clock it settled at; 0: not measured */
    int steady;              /* 1: settled before the warm-up's cap */
    int slot_warm;           /* the agent's word: the slot was busy just before */
    double rest_s;           /* burst: the rests before samples, host time */
    /* The GPU's SM clock now (NVML, on the caller's thread), MHz, 0 when
     * unknown; NULL without NVML. Read by the warm-up on a warm slot when
     * the stamps give no clock (kf_thermal_warm). */
    uint32_t (*clock_now)(void *ctx);
    void *clock_ctx;
    int at_default; /* the warm-up ended on NVML's clock at the GPU's default */
} kf_thermal;

/* A rest's cap: the blocker's that spins through it (cudrv.h). */
#define KF_THERMAL_REST_MAX_S KF_CUDRV_REST_MAX_S
/* No rest after a shorter sample: the host's own time between samples
 * (launch, synchronisation, the guard: ~100 us each on an H200) is already
 * as long, and a sleep that short takes the timer's slack (~60 us) anyway:
 * rests after every sample doubled examples/gpu.yaml's sample time in host
 * overshoot alone (1.6 s of rests against 0.9 s measured). */
#define KF_THERMAL_REST_MIN_S 50e-6

enum { KF_THERMAL_CLEAN = 0, KF_THERMAL_FLAGGED = 1, KF_THERMAL_DISCARD = 2 };

/* The protocol's name for a report: "burst" or "sustained" on a GPU, "host"
 * without. */
const char *kf_thermal_protocol(const kf_thermal *t, int gpu);

/* The rest before the next sample's kernel after one of sample_s (device
 * time, every launch of a batch): as long, up to KF_THERMAL_REST_MAX_S,
 * under "burst"; none under "sustained" or under KF_THERMAL_REST_MIN_S. */
double kf_thermal_rest(const kf_thermal *t, double sample_s);

/* How the sample [t0, t1] (mono ns) stands: KF_THERMAL_CLEAN, _FLAGGED
 * (kept) or _DISCARD. sm_mhz: the sample's mean clock from the stamps (0:
 * none, then the sampler's last reading's). *at: the sampler's last reading
 * with that clock, for the stored sample. Reads no NVML itself. */
int kf_thermal_judge(kf_thermal *t, kf_nvml *nv, uint64_t t0, uint64_t t1, double sm_mhz,
                     kf_nvml_reading *at);

/* After a discarded sample: waits recovery_s, or less, so that the waits
 * together stay within measured_s (the samples' device time so far); a
 * wait with no budget left is skipped and counted. Returns the seconds
 * waited. */
double kf_thermal_wait(kf_thermal *t, double measured_s);

/* One timed run of the warm-up: its seconds per launch and mean SM clock
 * (0: unknown), as kf_cudrv_time gives them. Returns 0 or -1 (the caller's
 * task has failed). */
typedef int (*kf_thermal_sample_fn)(void *arg, double *seconds, double *sm_mhz);

/* The warm-up to a steady clock: samples until the last 5 clocks are within
 * 1 % of each other and at least 50 ms of device time has run, or until
 * cap_s of device time or three times that of wall time (t->steady stays
 * 0). Without clock readings it runs 50 ms and says so (steady_mhz 0).
 *
 * On a slot that was busy until just before (t->slot_warm: the agent saw
 * its last task end less than KF_SLOT_WARM_S ago) 50 ms of wall time also
 * meets the floor: the GPU is as warm as the work it has been running keeps
 * it, and the clock check still decides. A 2 us kernel needs 25,000 runs,
 * ~2 s of launches on an H200, for 50 ms of device time, and those barely
 * load the GPU more than its samples will (issue 45: 1.7 s of a Triton
 * candidate's 7.4 s of slot time). The first profile on an idle slot has
 * the device-time floor. And on a warm slot, for a kernel whose runs give
 * the stamps no clock (too short: they said nothing in any of 96
 * profiles of 100 Triton softmax candidates, where 50 ms was a twelfth of
 * a row), NVML's clock decides: at the GPU's default (default_mhz, within
 * 1 %) on two readings AT_DEFAULT_GAP_S apart, the kernel running back to
 * back after STEADY_WINDOW runs, ends the warm-up (at_default); below it,
 * the 50 ms floor stands. Never on an idle slot, where the GPU may still
 * be on its way up and the reading lag it. 0, or -1 when a sample
 * failed. */
#define KF_SLOT_WARM_S 1.0
int kf_thermal_warm(kf_thermal *t, double cap_s, kf_thermal_sample_fn fn, void *arg);

#endif
