/* test_thermal — the thermal protocol's decisions (thermal.c) as far as no
 * GPU is needed: the protocol's name, the burst protocol's rest before each
 * sample, the warm-up's stop at a steady clock, and the recovery waits'
 * budget. The rests on a GPU are read there (bench/gpu/run.sh targets3:
 * the profile's thermal.rest_s and slot time "rests"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "common/util.h"
#include "runner/thermal.h"

#define STEADY_WINDOW_TEST 5 /* thermal.c's window of clocks */

#include <math.h>

static void test_protocol_names(void **state)
{
    (void)state;
    kf_thermal burst = {0}, sustained = {.sustained = 1};
    assert_string_equal(kf_thermal_protocol(&burst, 1), "burst");
    assert_string_equal(kf_thermal_protocol(&sustained, 1), "sustained");
    assert_string_equal(kf_thermal_protocol(&burst, 0), "host");
    assert_string_equal(kf_thermal_protocol(&sustained, 0), "host");
}

/* Burst: a rest as long as the sample, capped where the blocker that spins
 * through it would give up, none after a sample shorter than the host's
 * own time between samples; sustained: none. */
static void test_rest(void **state)
{
    (void)state;
    kf_thermal burst = {0}, sustained = {.sustained = 1};
    assert_true(kf_thermal_rest(&burst, 0.0024) == 0.0024);
    assert_true(kf_thermal_rest(&burst, KF_THERMAL_REST_MIN_S) == KF_THERMAL_REST_MIN_S);
    assert_true(kf_thermal_rest(&burst, 3e-6) == 0);
    assert_true(kf_thermal_rest(&burst, 49e-6) == 0);
    assert_true(kf_thermal_rest(&burst, 2.0) == KF_THERMAL_REST_MAX_S);
    assert_true(KF_THERMAL_REST_MAX_S < 1.0);
    assert_true(kf_thermal_rest(&burst, 0) == 0);
    assert_true(kf_thermal_rest(&burst, -1) == 0);
    assert_true(kf_thermal_rest(&burst, NAN) == 0);
    assert_true(kf_thermal_rest(&sustained, 0.0024) == 0);
}

/* A fake kernel for the warm-up: each run takes `s` seconds at the next
 * clock of a script (the last one repeats, or with cycle the script). */
typedef struct script {
    const double *mhz;
    int n, at;
    double s;
    int cycle;
    double wall_s; /* each run also sleeps this long: its launch overhead */
} script;

static int scripted(void *arg, double *seconds, double *sm_mhz)
{
    script *sc = arg;
    if (sc->wall_s > 0)
        kf_sleep_s(sc->wall_s);
    *seconds = sc->s;
    *sm_mhz = sc->mhz[sc->cycle ? sc->at % sc->n : sc->at < sc->n ? sc->at : sc->n - 1];
    sc->at++;
    return 0;
}

static int failing(void *arg, double *seconds, double *sm_mhz)
{
    (void)arg, (void)seconds, (void)sm_mhz;
    return -1;
}

/* A GEMM's clock falls from its boost to a step and holds: the warm-up
 * stops once 5 clocks agree within 1 % and 50 ms have run, not before. */
static void test_warm_until_steady(void **state)
{
    (void)state;
    const double mhz[] = {1980, 1900, 1800, 1700, 1670, 1668, 1666, 1667, 1665};
    script sc = {mhz, 9, 0, 0.002, 0, 0};
    kf_thermal t = {0};
    assert_int_equal(kf_thermal_warm(&t, 1.0, scripted, &sc), 0);
    assert_int_equal(t.steady, 1);
    assert_true(t.warmup_s >= 0.05);
    assert_in_range(t.warmup_samples, 25, 26); /* 50 ms of 2 ms runs */
    assert_int_equal(t.steady_mhz, 1665);
    /* A clock that never settles runs to the cap, not steady. */
    const double wobble[] = {1980, 1500};
    script w = {wobble, 2, 0, 0.01, 1, 0};
    kf_thermal u = {0};
    assert_int_equal(kf_thermal_warm(&u, 0.1, scripted, &w), 0);
    assert_int_equal(u.steady, 0);
    assert_true(u.warmup_s >= 0.1);
    /* No clock readings: 50 ms of the kernel, the clock unknown. */
    const double none[] = {0};
    script z = {none, 1, 0, 0.02, 0, 0};
    kf_thermal v = {0};
    assert_int_equal(kf_thermal_warm(&v, 1.0, scripted, &z), 0);
    assert_int_equal(v.steady, 0);
    assert_int_equal(v.steady_mhz, 0);
    assert_int_equal(v.warmup_samples, 5);
    /* Clocks on one run in fifty (stamps far enough apart only now and
     * then), never agreeing: the clock unknown at the floor, not the cap. */
    double sparse[100] = {0};
    sparse[0] = 1980;
    sparse[50] = 1500;
    script sp = {sparse, 100, 0, 2e-6, 1, 0};
    kf_thermal q = {0};
    assert_int_equal(kf_thermal_warm(&q, 1.0, scripted, &sp), 0);
    assert_int_equal(q.steady, 0);
    assert_in_range(q.warmup_samples, 24999, 25001); /* 50 ms of 2 us runs, not 500,000 */
    /* A failed run fails the warm-up. */
    kf_thermal f = {0};
    assert_int_equal(kf_thermal_warm(&f, 1.0, failing, NULL), -1);
}

/* A 2 us kernel whose runs cost 1 ms of launch each: on an idle slot the
 * floor is 50 ms of device time (25,000 runs); on a slot busy until just
 * before (the agent's word), 50 ms of wall time also meets it, and the
 * clock check still decides. A clock that never settles stops at three
 * times the cap in wall time, not after the cap's ~500,000 runs. */
static void test_warm_slot_busy(void **state)
{
    (void)state;
    const double flat[] = {1980};
    script cold = {flat, 1, 0, 2e-6, 0, 0};
    kf_thermal t = {0};
    assert_int_equal(kf_thermal_warm(&t, 1.0, scripted, &cold), 0);
    assert_int_equal(t.steady, 1);
    assert_in_range(t.warmup_samples, 24999, 25001);
    script busy = {flat, 1, 0, 2e-6, 0, 1e-3};
    kf_thermal u = {.slot_warm = 1};
    assert_int_equal(kf_thermal_warm(&u, 1.0, scripted, &busy), 0);
    assert_int_equal(u.steady, 1);
    assert_in_range(u.warmup_samples, STEADY_WINDOW_TEST, 50);
    assert_int_equal(u.steady_mhz, 1980);
    /* Busy, but the clock still moving: the check decides, not the floor. */
    const double ramp[] = {1200, 1400, 1600, 1800, 1980};
    script moving = {ramp, 5, 0, 2e-6, 0, 12e-3};
    kf_thermal v = {.slot_warm = 1};
    assert_int_equal(kf_thermal_warm(&v, 1.0, scripted, &moving), 0);
    assert_int_equal(v.steady, 1);
    assert_true(v.warmup_samples >= 9); /* the 5 ramp clocks out of the window */
    const double wobble[] = {1980, 1500};
    script never = {wobble, 2, 0, 2e-6, 1, 1e-3};
    kf_thermal w = {.slot_warm = 1};
    assert_int_equal(kf_thermal_warm(&w, 0.01, scripted, &never), 0);
    assert_int_equal(w.steady, 0);
    assert_in_range(w.warmup_samples, 2, 30); /* 30 ms of 1 ms runs, not 5,000 */
}

/* NVML's SM clock, read by the warm-up: the readings of a script in turn
 * (the last one repeats), each read counted. */
typedef struct reads {
    const uint32_t *mhz;
    int n, at;
} reads;

static uint32_t read_clock(void *ctx)
{
    reads *r = ctx;
    uint32_t v = r->mhz[r->at < r->n ? r->at : r->n - 1];
    r->at++;
    return v;
}

/* A warm-up of a 2 us kernel, each run wall_s with its launch, its
 * stamps' clocks mhz[0..n) (0: none), on a slot warm or not, NVML's
 * readings r, the GPU's default clock dflt (0: unknown). */
static kf_thermal warm_with(const double *mhz, int n, double wall_s, int slot_warm, uint32_t dflt,
                            reads *r)
{
    script sc = {mhz, n, 0, 2e-6, 0, wall_s};
    kf_thermal t = {
        .slot_warm = slot_warm, .default_mhz = dflt, .clock_now = read_clock, .clock_ctx = r};
    assert_int_equal(kf_thermal_warm(&t, 1.0, scripted, &sc), 0);
    return t;
}

/* A 2 us kernel without stamps' clocks, runs of 1 ms each with their
 * launch: on a warm slot NVML at the default clock on two readings 2 ms
 * apart ends the warm-up after a few runs, not 50 ms of them, and says so;
 * a reading under the default starts the count again; a clock below it
 * keeps the 50 ms floor; an idle slot keeps the device-time floor whatever
 * NVML reads; and a kernel the stamps time is never judged by NVML. */
static void test_warm_slot_at_default_clock(void **state)
{
    (void)state;
    const double none[] = {0}, flat[] = {1980};
    const uint32_t at[] = {1980};
    reads r1 = {at, 1, 0};
    kf_thermal t = warm_with(none, 1, 1e-3, 1, 1980, &r1);
    assert_int_equal(t.steady, 1);
    assert_int_equal(t.at_default, 1);
    assert_int_equal(t.steady_mhz, 1980);
    assert_int_equal(r1.at, 2);
    assert_in_range(t.warmup_samples, STEADY_WINDOW_TEST, 12); /* ~2 ms past the window */

    /* 1965 is within 1 % of 1980; 1900 is not and starts the count again. */
    const uint32_t dip[] = {1965, 1900, 1980, 1979};
    reads r2 = {dip, 4, 0};
    kf_thermal u = warm_with(none, 1, 1e-3, 1, 1980, &r2);
    assert_int_equal(u.at_default, 1);
    assert_int_equal(r2.at, 4);
    assert_int_equal(u.steady_mhz, 1979);

    /* Below the default throughout: the 50 ms floor, the clock unknown. */
    const uint32_t low[] = {1410};
    reads r3 = {low, 1, 0};
    kf_thermal v = warm_with(none, 1, 1e-3, 1, 1980, &r3);
    assert_int_equal(v.at_default, 0);
    assert_int_equal(v.steady, 0);
    assert_int_equal(v.steady_mhz, 0);
    assert_in_range(v.warmup_samples, 30, 51); /* 50 ms of 1 ms runs */
    assert_true(r3.at >= 2);

    /* An idle slot: NVML is not asked; the device-time floor stands. */
    reads r4 = {at, 1, 0};
    kf_thermal w = warm_with(none, 1, 0, 0, 1980, &r4);
    assert_int_equal(w.at_default, 0);
    assert_int_equal(r4.at, 0);
    assert_in_range(w.warmup_samples, 24999, 25001);

    /* Stamps give the clock: they decide, NVML is not asked. */
    reads r5 = {at, 1, 0};
    kf_thermal x = warm_with(flat, 1, 1e-3, 1, 1980, &r5);
    assert_int_equal(x.at_default, 0);
    assert_int_equal(x.steady, 1);
    assert_int_equal(r5.at, 0);

    /* No default clock known (NVML could not say): no reading either. */
    reads r6 = {at, 1, 0};
    kf_thermal y = warm_with(none, 1, 1e-3, 1, 0, &r6);
    assert_int_equal(y.at_default, 0);
    assert_int_equal(r6.at, 0);
}

/* Recovery waits never exceed the time measured: with none measured the
 * wait is skipped and counted; once the waits reach it, the next is too. */
static void test_waits_budget(void **state)
{
    (void)state;
    kf_thermal t = {.recovery_s = 0.005};
    assert_true(kf_thermal_wait(&t, 0) == 0);
    assert_int_equal(t.waits_skipped, 1);
    double got = kf_thermal_wait(&t, 0.003); /* room for 3 ms of the 5 */
    assert_true(got >= 0.003);
    assert_true(t.waits_s >= 0.003);
    assert_true(kf_thermal_wait(&t, 0.003) == 0);
    assert_int_equal(t.waits_skipped, 2);
    assert_true(kf_thermal_wait(&t, 1.0) >= 0.005); /* more measured: a full wait */
    assert_int_equal(t.waits_skipped, 2);
}

/* Without NVML every sample is clean: nothing says otherwise. */
static void test_judge_without_nvml(void **state)
{
    (void)state;
    kf_thermal t = {.threshold_mhz = 1485};
    kf_nvml_reading at = {.sm_mhz = 7};
    assert_int_equal(kf_thermal_judge(&t, NULL, 0, 1000, 900, &at), KF_THERMAL_CLEAN);
    assert_int_equal(at.sm_mhz, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocol_names),
        cmocka_unit_test(test_rest),
        cmocka_unit_test(test_warm_until_steady),
        cmocka_unit_test(test_waits_budget),
        cmocka_unit_test(test_judge_without_nvml),
        cmocka_unit_test(test_warm_slot_busy),
        cmocka_unit_test(test_warm_slot_at_default_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
