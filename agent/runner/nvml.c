/* nvml — telemetry sampler over a dlopen'd NVML; see nvml.h.
 *
 * The readings live in one growing array guarded by a mutex: the sampler
 * appends, the profile loop reads ranges. A profile is at most a few
 * minutes, so at 20 Hz the array stays in the thousands. */
#include "runner/nvml.h"
#include "common/xalloc.h"
#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *nvmlDevice_t;
typedef int nvmlReturn_t;
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0

struct kf_nvml {
    void *lib;
    nvmlDevice_t dev;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*power)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*default_clock)(nvmlDevice_t, int, unsigned *); /* may be NULL */
    nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned *);     /* may be NULL */
    pthread_t thread;
    int running;
    volatile int stop;
    unsigned period_ms;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* the sampler's wait, cut short by kf_nvml_stop */
    kf_nvml_reading *r;
    size_t n, cap;
};

int kf_nvml_open(const char *uuid, kf_nvml **out, kf_err *err)
{
    kf_nvml *n = kf_xcalloc(1, sizeof *n);
    pthread_mutex_init(&n->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&n->wake, &ca);
    pthread_condattr_destroy(&ca);
    n->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        kf_err_set(err, KF_EUNAVAIL, "no NVML on this node (libnvidia-ml.so.1: %s)", dlerror());
        kf_nvml_close(&n);
        return KF_EUNAVAIL;
    }
    *(void **)&n->init = dlsym(n->lib, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
    *(void **)&n->by_uuid = dlsym(n->lib, "nvmlDeviceGetHandleByUUID");
    *(void **)&n->clock = dlsym(n->lib, "nvmlDeviceGetClockInfo");
    *(void **)&n->power = dlsym(n->lib, "nvmlDeviceGetPowerUsage");
    *(void **)&n->temp = dlsym(n->lib, "nvmlDeviceGetTemperature");
    *(void **)&n->default_clock = dlsym(n->lib, "nvmlDeviceGetDefaultApplicationsClock");
    *(void **)&n->max_clock = dlsym(n->lib, "nvmlDeviceGetMaxClockInfo");
    /* Renamed in CUDA 12.2's NVML; older drivers only have the old name. */
    *(void **)&n->reasons = dlsym(n->lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!n->reasons)
        *(void **)&n->reasons = dlsym(n->lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    nvmlReturn_t r;
    if (!n->init || !n->shutdown || !n->by_uuid || !n->clock || !n->power || !n->temp ||
        !n->reasons) {
        kf_err_set(err, KF_EUNAVAIL, "NVML lacks the telemetry calls; update the driver");
    } else if ((r = n->init()) != 0) {
        n->shutdown = NULL;
        kf_err_set(err, KF_EUNAVAIL, "nvmlInit_v2 returned %d", r);
    } else if ((r = n->by_uuid(uuid, &n->dev)) != 0) {
        kf_err_set(err, KF_EUNAVAIL, "NVML does not know GPU %s (error %d)", uuid, r);
    } else {
        *out = n;
        return KF_OK;
    }
    kf_nvml_close(&n);
    return KF_EUNAVAIL;
}

void kf_nvml_close(kf_nvml **self)
{
    kf_nvml *n = self ? *self : NULL;
    if (!n)
        return;
    kf_nvml_stop(n);
    if (n->lib && n->shutdown)
        n->shutdown();
    /* The library stays loaded: NVML's own threads may outlive shutdown. */
    pthread_mutex_destroy(&n->mu);
    pthread_cond_destroy(&n->wake);
    free(n->r);
    free(n);
    *self = NULL;
}

static void read_one(kf_nvml *n, kf_nvml_reading *x)
{
    memset(x, 0, sizeof *x);
    x->mono_ns = kf_mono_ns();
    x->wall_ns = kf_now_ns();
    unsigned v = 0;
    unsigned long long reasons = 0;
    if (n->clock(n->dev, NVML_CLOCK_SM, &v) == 0)
        x->sm_mhz = v;
    if (n->clock(n->dev, NVML_CLOCK_MEM, &v) == 0)
        x->mem_mhz = v;
    if (n->power(n->dev, &v) == 0)
        x->power_mw = v;
    if (n->temp(n->dev, NVML_TEMPERATURE_GPU, &v) == 0)
        x->temp_c = v;
    if (n->reasons(n->dev, &reasons) == 0)
        x->reasons = reasons;
    x->throttled = (x->reasons & KF_NVML_THROTTLE_MASK) != 0;
}

static void *sampler(void *arg)
{
    kf_nvml *n = arg;
    while (!n->stop) {
        kf_nvml_reading x;
        read_one(n, &x);
        pthread_mutex_lock(&n->mu);
        if (n->n == n->cap) {
            size_t cap = n->cap ? 2 * n->cap : 1024;
            kf_nvml_reading *nr = realloc(n->r, cap * sizeof *nr);
            if (nr) {
                n->r = nr;
                n->cap = cap;
            }
        }
        if (n->n < n->cap)
            n->r[n->n++] = x;
        /* Until the next reading, or a stop: a stop used to wait out the
         * sleep, up to a period per profile, before the next task. */
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(n->period_ms % 1000) * 1000000L;
        until.tv_sec += n->period_ms / 1000 + until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (!n->stop && pthread_cond_timedwait(&n->wake, &n->mu, &until) == 0)
            ;
        pthread_mutex_unlock(&n->mu);
    }
    return NULL;
}

int kf_nvml_start(kf_nvml *n, unsigned period_ms, kf_err *err)
{
    if (n->running)
        return KF_OK;
    n->period_ms = period_ms ? period_ms : 1;
    n->stop = 0;
    int e = pthread_create(&n->thread, NULL, sampler, n);
    if (e != 0)
        return kf_err_set(err, KF_EIO, "cannot start the telemetry thread: %s", strerror(e));
    n->running = 1;
    return KF_OK;
}

void kf_nvml_stop(kf_nvml *n)
{
    if (!n || !n->running)
        return;
    pthread_mutex_lock(&n->mu);
    n->stop = 1;
    pthread_cond_signal(&n->wake);
    pthread_mutex_unlock(&n->mu);
    pthread_join(n->thread, NULL);
    n->running = 0;
}

void kf_nvml_read_now(kf_nvml *n, kf_nvml_reading *out)
{
    read_one(n, out);
}

unsigned kf_nvml_default_sm_mhz(kf_nvml *n)
{
    unsigned v = 0;
    if (n->default_clock && n->default_clock(n->dev, NVML_CLOCK_SM, &v) == 0 && v > 0)
        return v;
    if (n->max_clock && n->max_clock(n->dev, NVML_CLOCK_SM, &v) == 0 && v > 0)
        return v;
    return 0;
}

int kf_nvml_event_within(kf_nvml *n, uint64_t t0, uint64_t t1, uint64_t reasons)
{
    int th = 0;
    pthread_mutex_lock(&n->mu);
    for (size_t i = n->n; i > 0 && n->r[i - 1].mono_ns >= t0; i--)
        if (n->r[i - 1].mono_ns <= t1)
            th |= (n->r[i - 1].reasons & reasons) != 0;
    pthread_mutex_unlock(&n->mu);
    return th;
}

int kf_nvml_throttled(kf_nvml *n, uint64_t t0, uint64_t t1)
{
    int th = 0, inside = 0;
    pthread_mutex_lock(&n->mu);
    size_t i = n->n;
    while (i > 0 && n->r[i - 1].mono_ns > t1)
        i--;
    for (; i > 0 && n->r[i - 1].mono_ns >= t0; i--) {
        inside = 1;
        th |= n->r[i - 1].throttled;
    }
    if (!inside && i > 0)
        th = n->r[i - 1].throttled;
    pthread_mutex_unlock(&n->mu);
    return th;
}

size_t kf_nvml_readings(kf_nvml *n, size_t from, kf_nvml_reading *out, size_t cap)
{
    pthread_mutex_lock(&n->mu);
    size_t k = 0;
    for (size_t i = from; i < n->n && k < cap; i++)
        out[k++] = n->r[i];
    pthread_mutex_unlock(&n->mu);
    return k;
}

int kf_nvml_last(kf_nvml *n, kf_nvml_reading *out)
{
    pthread_mutex_lock(&n->mu);
    int have = n->n > 0;
    if (have)
        *out = n->r[n->n - 1];
    pthread_mutex_unlock(&n->mu);
    return have;
}
