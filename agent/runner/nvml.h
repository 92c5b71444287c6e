/* nvml — GPU telemetry sampled alongside a profile, through a dlopen'd
 * libnvidia-ml.so.1 (the agent links no NVIDIA library).
 *
 * A sampler thread reads the GPU's SM and memory clocks, power, temperature
 * and clock-event ("throttle") reasons every period and keeps the readings.
 * The profile asks, per timed sample, whether any reading that overlaps the
 * sample's interval saw a throttling reason, and flags the sample; the
 * readings themselves are streamed and stored with the samples.
 *
 * Reasons that count as throttling: software power cap, hardware slowdown,
 * software/hardware thermal slowdown, power brake. Idle, application-clock
 * and sync-boost settings are not throttling. */
#ifndef KF_NVML_H
#define KF_NVML_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kf_nvml kf_nvml;

typedef struct kf_nvml_reading {
    uint64_t mono_ns; /* CLOCK_MONOTONIC, comparable with kf_mono_ns() */
    uint64_t wall_ns;
    uint32_t sm_mhz, mem_mhz, power_mw, temp_c;
    uint64_t reasons;
    int throttled;
} kf_nvml_reading;

/* The reasons (nvmlClocksEventReasons bits) that count as throttling. */
#define KF_NVML_THROTTLE_MASK (0x4ull | 0x8ull | 0x20ull | 0x40ull | 0x80ull)
/* The software power cap alone: the steady state of a kernel that draws
 * the GPU's power limit, which the sustained protocol measures. */
#define KF_NVML_SW_POWER_CAP 0x4ull

/* Opens NVML for the GPU with this UUID ("GPU-…", as cudrv reports it).
 * KF_EUNAVAIL (err filled) when NVML or the GPU is not there. */
int kf_nvml_open(const char *uuid, kf_nvml **out, kf_err *err);
void kf_nvml_close(kf_nvml **self);

/* Starts the sampler thread, one reading every period_ms (>= 1). */
int kf_nvml_start(kf_nvml *n, unsigned period_ms, kf_err *err);
/* Stops it (joins); readings stay available. */
void kf_nvml_stop(kf_nvml *n);

/* Whether a reading in [t0, t1] (mono ns), or the last one before t0 when
 * none falls inside (a sample shorter than the period), was throttled. */
int kf_nvml_throttled(kf_nvml *n, uint64_t t0, uint64_t t1);

/* Whether a sampler reading inside [t0, t1] saw one of `reasons` (bits of
 * KF_NVML_THROTTLE_MASK; no fallback to an earlier reading: for the
 * throttle policy, a reading from before a recovery wait says nothing of
 * the sample after it). */
int kf_nvml_event_within(kf_nvml *n, uint64_t t0, uint64_t t1, uint64_t reasons);

/* One reading now, on the caller's thread (NVML is thread-safe): the clock,
 * power and reasons as a sample ends. */
void kf_nvml_read_now(kf_nvml *n, kf_nvml_reading *out);

/* The sampler's latest reading into *out: 1, or 0 when it has none yet.
 * No NVML call: what a per-sample judgement reads (thermal.c). */
int kf_nvml_last(kf_nvml *n, kf_nvml_reading *out);

/* The GPU's default SM clock (default application clock, else the maximum),
 * MHz; 0 when NVML cannot say. The throttle threshold is a share of it. */
unsigned kf_nvml_default_sm_mhz(kf_nvml *n);

/* Copies the readings from index `from` on into out (at most cap); returns
 * how many. Thread-safe against the sampler. */
size_t kf_nvml_readings(kf_nvml *n, size_t from, kf_nvml_reading *out, size_t cap);

#endif
