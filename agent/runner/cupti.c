/* cupti — see cupti.h. No CUPTI header is needed to build: the few calls are
 * looked up with dlsym, and records are read at the offsets cupti.h names. */
#include "runner/cupti.h"

#include "common/xalloc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER_BYTES (1u << 20)

typedef int CUptiResult;
typedef void (*req_fn)(uint8_t **, size_t *, size_t *);
typedef void (*done_fn)(void *, uint32_t, uint8_t *, size_t, size_t);

struct kf_cupti {
    void *lib;
    char suffix[40];
    int recording;
    /* CUPTI may deliver a full buffer from its own thread. */
    pthread_mutex_t mu;
    kf_cupti_acc acc; /* what was delivered since the last sample */
    CUptiResult (*RegisterCallbacks)(req_fn, done_fn);
    CUptiResult (*Enable)(int);
    CUptiResult (*Disable)(int);
    CUptiResult (*FlushAll)(uint32_t);
    CUptiResult (*GetNextRecord)(uint8_t *, size_t, void **);
};

/* CUPTI calls the buffer callbacks with no pointer of ours: the one open
 * instance is found here (one per process, as CUPTI's own subscription). */
static kf_cupti *active;

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static uint64_t u64_at(const uint8_t *rec, size_t off)
{
    uint64_t v;
    memcpy(&v, rec + off, sizeof v);
    return v;
}

void kf_cupti_acc_reset(kf_cupti_acc *acc)
{
    acc->n = 0;
    acc->blocker_start = acc->flush_start = 0;
    acc->overflow = 0;
}

void kf_cupti_acc_forget_launches(kf_cupti_acc *acc)
{
    acc->nnames = 0;
}

/* The tally's entry of a name, made on first sight; past the cap, the
 * "(other kernels)" one. */
static uint8_t name_slot(kf_cupti_acc *acc, const char *name)
{
    for (size_t i = 0; i < acc->nnames; i++)
        if (strncmp(acc->names[i].name, name, sizeof acc->names[i].name - 1) == 0)
            return (uint8_t)i;
    if (acc->nnames >= KF_CUPTI_MAX_NAMES + 2 && strcmp(name, "(other kernels)") != 0)
        return name_slot(acc, "(other kernels)");
    kf_cupti_launch *l = &acc->names[acc->nnames];
    snprintf(l->name, sizeof l->name, "%s", name);
    l->count = l->ns = 0;
    return (uint8_t)acc->nnames++;
}

/* The sample's start: its L2 flush (a cold sample) or its blocker. */
static uint64_t sample_from(const kf_cupti_acc *acc)
{
    return acc->flush_start && acc->flush_start < acc->blocker_start ? acc->flush_start
                                                                     : acc->blocker_start;
}

void kf_cupti_acc_tally(kf_cupti_acc *acc)
{
    uint64_t from = sample_from(acc);
    if (!acc->blocker_start)
        return;
    for (size_t i = 0; i < acc->n; i++) {
        if (acc->start[i] < from || acc->end[i] < acc->start[i])
            continue;
        kf_cupti_launch *l = &acc->names[acc->who[i]];
        l->count++;
        l->ns += acc->end[i] - acc->start[i];
    }
}

void kf_cupti_acc_take(kf_cupti_acc *acc, const void *record, const char *ours_suffix)
{
    const uint8_t *rec = record;
    uint32_t kind;
    memcpy(&kind, rec, sizeof kind);
    if (kind != KF_CUPTI_KIND_CONCURRENT_KERNEL && kind != KF_CUPTI_KIND_MEMCPY &&
        kind != KF_CUPTI_KIND_MEMSET)
        return;
    uint64_t start = u64_at(rec, KF_CUPTI_REC_START), end = u64_at(rec, KF_CUPTI_REC_END);
    const char *name = kind == KF_CUPTI_KIND_MEMCPY   ? "(copy)"
                       : kind == KF_CUPTI_KIND_MEMSET ? "(memset)"
                                                      : NULL;
    if (kind == KF_CUPTI_KIND_CONCURRENT_KERNEL) {
        memcpy(&name, rec + KF_CUPTI_REC_KERNEL_NAME, sizeof name);
        if (name && *ours_suffix && strstr(name, ours_suffix)) { /* the runner's own */
            uint64_t *mark = strncmp(name, "kf_block", 8) == 0   ? &acc->blocker_start
                             : strncmp(name, "kf_flush", 8) == 0 ? &acc->flush_start
                                                                 : NULL;
            if (mark && (!*mark || start < *mark))
                *mark = start;
            return;
        }
    }
    if (acc->n == KF_CUPTI_MAX_RECORDS) {
        acc->overflow = 1;
        return;
    }
    acc->who[acc->n] = name_slot(acc, name && *name ? name : "(unnamed kernel)");
    acc->start[acc->n] = start;
    acc->end[acc->n++] = end;
}

unsigned long long kf_cupti_acc_span(const kf_cupti_acc *acc)
{
    /* The sample began with its L2 flush (a cold sample) or its blocker:
     * work the kernel put on a stream of its own can start while the flush
     * still runs, before the blocker, and is the sample's all the same.
     * What began before (the guard's poison, the last sample's spot checks)
     * is not. */
    uint64_t from = sample_from(acc);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < acc->n; i++) {
        if (acc->start[i] < from || acc->end[i] < acc->start[i])
            continue;
        lo = acc->start[i] < lo ? acc->start[i] : lo;
        hi = acc->end[i] > hi ? acc->end[i] : hi;
    }
    if (!acc->blocker_start || acc->overflow || hi <= lo)
        return 0;
    return (unsigned long long)(hi - lo);
}

static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    kf_cupti *cp = active;
    void *rec = NULL;
    if (cp) {
        pthread_mutex_lock(&cp->mu);
        while (valid && cp->GetNextRecord(buffer, valid, &rec) == 0)
            kf_cupti_acc_take(&cp->acc, rec, cp->suffix);
        pthread_mutex_unlock(&cp->mu);
    }
    free(buffer);
}

static const int kinds[] = {KF_CUPTI_KIND_CONCURRENT_KERNEL, KF_CUPTI_KIND_MEMCPY,
                            KF_CUPTI_KIND_MEMSET};

/* A libcupti already loaded (torch links one) is the one to use: a second
 * copy in the process would be a second subscriber. Else the toolkit's. */
static void *load_lib(void)
{
    static const char *names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *l = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
        if (l)
            return l;
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *l = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (l)
            return l;
    }
    const char *home = getenv("CUDA_HOME");
    const char *roots[] = {home && *home ? home : "/usr/local/cuda", "/usr/local/cuda"};
    static const char *dirs[] = {"lib64", "lib", "extras/CUPTI/lib64", "targets/x86_64-linux/lib",
                                 "targets/sbsa-linux/lib"};
    for (size_t r = 0; r < 2; r++)
        for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s/libcupti.so", roots[r], dirs[d]);
            void *l = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (l)
                return l;
        }
    return NULL;
}

int kf_cupti_open(kf_cupti **out, const char *ours_suffix, kf_err *err)
{
    *out = NULL;
    if (active)
        return kf_err_set(err, KF_EUNAVAIL, "CUPTI is already open in this runner");
    void *lib = load_lib();
    if (!lib)
        return kf_err_set(err, KF_EUNAVAIL, "no libcupti (the CUDA toolkit's CUPTI)");
    kf_cupti *cp = kf_xcalloc(1, sizeof *cp);
    cp->lib = lib;
    snprintf(cp->suffix, sizeof cp->suffix, "%s", ours_suffix);
    *(void **)&cp->RegisterCallbacks = dlsym(lib, "cuptiActivityRegisterCallbacks");
    *(void **)&cp->Enable = dlsym(lib, "cuptiActivityEnable");
    *(void **)&cp->Disable = dlsym(lib, "cuptiActivityDisable");
    *(void **)&cp->FlushAll = dlsym(lib, "cuptiActivityFlushAll");
    *(void **)&cp->GetNextRecord = dlsym(lib, "cuptiActivityGetNextRecord");
    CUptiResult r = -1;
    if (!cp->RegisterCallbacks || !cp->Enable || !cp->Disable || !cp->FlushAll ||
        !cp->GetNextRecord || (r = cp->RegisterCallbacks(buffer_requested, buffer_completed))) {
        free(cp);
        return kf_err_set(err, KF_EUNAVAIL, "libcupti refused its activity API (error %d)", r);
    }
    pthread_mutex_init(&cp->mu, NULL);
    active = cp;
    *out = cp;
    return KF_OK;
}

static void forget(kf_cupti *cp)
{
    pthread_mutex_lock(&cp->mu);
    kf_cupti_acc_reset(&cp->acc);
    pthread_mutex_unlock(&cp->mu);
}

int kf_cupti_record(kf_cupti *cp, int on)
{
    if (!cp || cp->recording == !!on)
        return KF_OK;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
        CUptiResult r = on ? cp->Enable(kinds[i]) : cp->Disable(kinds[i]);
        if (r && on) {
            for (size_t j = 0; j < i; j++)
                cp->Disable(kinds[j]);
            return KF_EUNAVAIL; /* e.g. under ncu or nsys: another subscriber */
        }
    }
    cp->recording = !!on;
    if (!on) /* what is left is no sample's */
        cp->FlushAll(1);
    forget(cp);
    if (on) { /* a new recording's tally */
        pthread_mutex_lock(&cp->mu);
        kf_cupti_acc_forget_launches(&cp->acc);
        pthread_mutex_unlock(&cp->mu);
    }
    return KF_OK;
}

unsigned long long kf_cupti_sample_ns(kf_cupti *cp)
{
    if (!cp || !cp->recording)
        return 0;
    int flushed = cp->FlushAll(0) == 0;
    pthread_mutex_lock(&cp->mu);
    unsigned long long ns = kf_cupti_acc_span(&cp->acc);
    if (flushed && ns)
        kf_cupti_acc_tally(&cp->acc);
    pthread_mutex_unlock(&cp->mu);
    forget(cp);
    return flushed ? ns : 0;
}

static int by_time(const void *a, const void *b)
{
    const kf_cupti_launch *x = a, *y = b;
    return x->ns > y->ns ? -1 : x->ns < y->ns;
}

size_t kf_cupti_launches(kf_cupti *cp, kf_cupti_launch *out, size_t max)
{
    if (!cp)
        return 0;
    kf_cupti_launch all[KF_CUPTI_MAX_NAMES + 3];
    size_t n = 0;
    pthread_mutex_lock(&cp->mu);
    for (size_t i = 0; i < cp->acc.nnames; i++)
        if (cp->acc.names[i].count)
            all[n++] = cp->acc.names[i];
    pthread_mutex_unlock(&cp->mu);
    qsort(all, n, sizeof *all, by_time);
    n = n < max ? n : max;
    memcpy(out, all, n * sizeof *out);
    return n;
}

void kf_cupti_close(kf_cupti **self)
{
    kf_cupti *cp = self ? *self : NULL;
    if (!cp)
        return;
    kf_cupti_record(cp, 0);
    active = NULL;
    pthread_mutex_destroy(&cp->mu);
    /* libcupti stays loaded: its threads may outlive a dlclose. */
    free(cp);
    *self = NULL;
}
