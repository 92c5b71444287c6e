/* thermal — the profile's thermal protocol and throttle policy; thermal.h
 * says what "burst" and "sustained" mean and why the recovery waits are
 * budgeted. */
#include "runner/thermal.h"

#include "common/util.h"

#include <math.h>

#define STEADY_WINDOW 5
#define STEADY_TOL 0.01
#define STEADY_MIN_S 0.05
/* Between the two NVML readings that end a warm slot's warm-up at the
 * default clock (kf_thermal_warm): the kernel runs back to back meanwhile,
 * so a reading from before a fall would show it by the second. */
#define AT_DEFAULT_GAP_S 0.002

const char *kf_thermal_protocol(const kf_thermal *t, int gpu)
{
    return !gpu ? "host" : t->sustained ? "sustained" : "burst";
}

double kf_thermal_rest(const kf_thermal *t, double sample_s)
{
    if (t->sustained || !(sample_s >= KF_THERMAL_REST_MIN_S))
        return 0;
    return fmin(sample_s, KF_THERMAL_REST_MAX_S);
}

int kf_thermal_judge(kf_thermal *t, kf_nvml *nv, uint64_t t0, uint64_t t1, double sm_mhz,
                     kf_nvml_reading *at)
{
    *at = (kf_nvml_reading){0};
    if (!nv)
        return KF_THERMAL_CLEAN;
    /* The sampler's last reading up to now: power and the clock when the
     * stamps have none. Never a fresh NVML read on this thread. */
    kf_nvml_last(nv, at);
    if (sm_mhz > 0)
        at->sm_mhz = (uint32_t)(sm_mhz + 0.5);
    /* A clock event in a reading inside the sample, or in the sampler's
     * last one when it is recent (under 60 ms, the 50 ms period and some):
     * a microsecond sample has no reading inside it. An older one may
     * predate a recovery wait and says nothing of this sample. The
     * software power cap is no such event: a heavy kernel draws the power
     * limit by design, and the sampler's readings average over tens of
     * milliseconds of rests and samples alike (the sample is flagged
     * throttled, and discarded still when its clock falls under the
     * threshold); thermal and hardware slowdowns and the power brake are. */
    uint64_t events = KF_NVML_THROTTLE_MASK & ~KF_NVML_SW_POWER_CAP;
    int recent = at->mono_ns && at->mono_ns + 60000000ull >= t0;
    int event = (recent && (at->reasons & events)) || kf_nvml_event_within(nv, t0, t1, events);
    int slow = t->threshold_mhz && at->sm_mhz && at->sm_mhz < t->threshold_mhz;
    int flagged = event || kf_nvml_throttled(nv, t0, t1);
    if (!t->keep && (event || slow))
        return KF_THERMAL_DISCARD;
    return flagged || slow ? KF_THERMAL_FLAGGED : KF_THERMAL_CLEAN;
}

double kf_thermal_wait(kf_thermal *t, double measured_s)
{
    double room = measured_s - t->waits_s;
    double w = fmin(t->recovery_s, room);
    if (!(w > 0)) {
        t->waits_skipped++;
        return 0;
    }
    double got = kf_sleep_s(w);
    t->waits_s += got;
    return got;
}

int kf_thermal_warm(kf_thermal *t, double cap_s, kf_thermal_sample_fn fn, void *arg)
{
    double clk[STEADY_WINDOW] = {0};
    double spent = 0, wall = 0, next_read = 0;
    uint32_t n = 0, with_clock = 0, at_default = 0, now = 0;
    uint64_t t0 = kf_mono_ns();
    int nvml = t->slot_warm && t->clock_now && t->default_mhz;
    while (spent < cap_s && wall < 3 * cap_s) {
        double s = 0, mhz = 0;
        if (fn(arg, &s, &mhz) != 0)
            return -1;
        spent += s;
        wall = (double)(kf_mono_ns() - t0) / 1e9;
        n++;
        if (mhz > 0)
            clk[with_clock++ % STEADY_WINDOW] = mhz;
        if (nvml && n >= STEADY_WINDOW && 2 * with_clock < n && wall >= next_read) {
            now = t->clock_now(t->clock_ctx);
            next_read = wall + AT_DEFAULT_GAP_S;
            at_default = now && now >= (1 - STEADY_TOL) * t->default_mhz ? at_default + 1 : 0;
            if (at_default >= 2) {
                t->steady = t->at_default = 1;
                break;
            }
        }
        if (spent < STEADY_MIN_S && !(t->slot_warm && wall >= STEADY_MIN_S))
            continue;
        /* No stamps, or stamps on too few runs to judge by: 50 ms of the
         * kernel, the clock unknown. A kernel of ~10 us gets a clock on
         * the odd run whose stamps lie over 20 us apart (cudrv.c), from
         * intervals mostly idle: on an H200 a window of those never
         * agreed and its warm-up ran to the cap (42,300 runs, 3 s). */
        if (n >= STEADY_WINDOW && 2 * with_clock < n)
            break;
        if (with_clock >= STEADY_WINDOW) {
            double lo = clk[0], hi = clk[0];
            for (int i = 1; i < STEADY_WINDOW; i++) {
                lo = fmin(lo, clk[i]);
                hi = fmax(hi, clk[i]);
            }
            if (hi - lo <= STEADY_TOL * hi) {
                t->steady = 1;
                break;
            }
        }
    }
    t->warmup_s = spent;
    t->warmup_samples = n;
    if (t->at_default)
        t->steady_mhz = now;
    else if (with_clock) {
        double sum = 0;
        uint32_t m = with_clock < STEADY_WINDOW ? with_clock : STEADY_WINDOW;
        for (uint32_t i = 0; i < m; i++)
            sum += clk[i];
        t->steady_mhz = (uint32_t)(sum / m + 0.5);
    }
    return 0;
}
