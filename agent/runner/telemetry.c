/* telemetry — a GPU profile's NVML readings: the sampler started beside
 * the samples (20 Hz), its readings streamed with the sample batches, and
 * summarized into the Result (clocks, power, temperature, the clock-event
 * reasons seen); and what the samples launched, by kernel name (CUPTI).
 * Moved out of profile.c, which drives the samples. */
#include "runner/hctx.h"

#include <stdio.h>

/* NVML for the GPU, once: the warm-up reads its clock before the sampler
 * starts (thermal.h). Without NVML the profile still runs, with no
 * telemetry and nothing flagged (the summary says 0 readings). */
void hctx_telemetry_open(hctx *h)
{
    kf_err err;
    if (h->nv || h->nv_tried)
        return;
    h->nv_tried = 1;
    if (kf_cudrv_uuid(h->cu, h->uuid, sizeof h->uuid) != KF_OK) {
        fprintf(stderr, "runner: no GPU UUID from the driver: no telemetry\n");
        return;
    }
    if (kf_nvml_open(h->uuid, &h->nv, &err) != KF_OK)
        fprintf(stderr, "runner: %s: no telemetry\n", err.msg);
}

static uint32_t clock_now(void *nv)
{
    kf_nvml_reading r;
    kf_nvml_read_now(nv, &r);
    return r.sm_mhz;
}

void hctx_telemetry_clocks(hctx *h, kf_thermal *tp, double thr_pct)
{
    if (!h->nv)
        return;
    tp->clock_now = clock_now;
    tp->clock_ctx = h->nv;
    tp->default_mhz = kf_nvml_default_sm_mhz(h->nv);
    tp->threshold_mhz = (uint32_t)(tp->default_mhz * thr_pct / 100.0);
}

/* NVML at 20 Hz beside the profile's samples. */
void hctx_telemetry_start(hctx *h)
{
    kf_err err;
    hctx_telemetry_open(h);
    if (h->nv && kf_nvml_start(h->nv, 50, &err) != KF_OK) {
        fprintf(stderr, "runner: %s\n", err.msg);
        kf_nvml_close(&h->nv);
    }
}

/* Streams what the sampler read after the last sample batch. */
int hctx_telemetry_drain(hctx *h)
{
    while (h->nv) {
        kf_nvml_reading one;
        if (kf_nvml_readings(h->nv, h->tel_sent, &one, 1) == 0)
            return KF_OK;
        int rc = hctx_flush_samples(h);
        if (rc != KF_OK)
            return rc;
    }
    return KF_OK;
}

static void minmax(uint32_t *lo, uint32_t *hi, uint32_t v)
{
    if (v < *lo)
        *lo = v;
    if (v > *hi)
        *hi = v;
}

void hctx_summarize_telemetry(hctx *h, Kfleet__TelemetrySummary *ts)
{
    ts->gpu_uuid = h->uuid;
    kf_nvml_reading r[256];
    size_t from = 0, k;
    uint64_t first = 0, last = 0;
    while (h->nv && (k = kf_nvml_readings(h->nv, from, r, 256)) > 0) {
        for (size_t i = 0; i < k; i++) {
            if (ts->readings == 0) {
                ts->sm_clock_min_mhz = ts->sm_clock_max_mhz = r[i].sm_mhz;
                ts->mem_clock_min_mhz = ts->mem_clock_max_mhz = r[i].mem_mhz;
                first = r[i].mono_ns;
            }
            minmax(&ts->sm_clock_min_mhz, &ts->sm_clock_max_mhz, r[i].sm_mhz);
            minmax(&ts->mem_clock_min_mhz, &ts->mem_clock_max_mhz, r[i].mem_mhz);
            if (r[i].power_mw > ts->power_max_mw)
                ts->power_max_mw = r[i].power_mw;
            if (r[i].temp_c > ts->temp_max_c)
                ts->temp_max_c = r[i].temp_c;
            ts->reasons_seen |= r[i].reasons;
            ts->throttled_readings += (uint32_t)r[i].throttled;
            ts->readings++;
            last = r[i].mono_ns;
        }
        from += k;
    }
    ts->period_s = ts->readings > 1 ? (double)(last - first) / 1e9 / (ts->readings - 1) : 0;
}

void hctx_launches(hctx *h, Kfleet__ProfileStats *ps)
{
    size_t n = kf_cudrv_launches(h->cu, h->launch, HCTX_MAX_LAUNCHES);
    for (size_t i = 0; i < n; i++) {
        kfleet__launch__init(&h->launch_msg[i]);
        h->launch_msg[i].name = h->launch[i].name;
        h->launch_msg[i].count = h->launch[i].count;
        h->launch_msg[i].seconds = (double)h->launch[i].ns / 1e9;
        h->launch_ptr[i] = &h->launch_msg[i];
    }
    ps->n_launches = n;
    ps->launches = n ? h->launch_ptr : NULL;
}
