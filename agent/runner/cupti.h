/* cupti — a sample's GPU time from CUPTI's activity records: from the start
 * of the first kernel, memset or copy the sample ran to the end of its last
 * (on any stream), as nsys and ncu's gpu__time_duration see a kernel, where
 * an event pair also holds the launch of the first kernel and the completion
 * of the last (2-3 us on an H200: traj_resample 40.0 us by events, 36.9 us by
 * ncu; issue 32). libcupti is dlopen'ed like libcuda: one bundle runs with or
 * without it, and without it samples keep their events' time.
 *
 * The runner's own kernels (the L2 flush, the blocker, the clock stamps) are
 * told apart by a name suffix drawn at random per runner (cudrv.c): a kernel
 * cannot name itself to be left out. A sample's own records are those that
 * start once its L2 flush (or, hot, its blocker) started: what ran before
 * (the guard's poison, the last sample's spot checks) is not in it. */
#ifndef KF_CUPTI_H
#define KF_CUPTI_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

/* Where CUpti_ActivityKernel4 to 10 (CUDA 9-13) and CUpti_ActivityMemcpy and
 * Memset keep what is read: kind at 0, start and end (ns) at 16 and 24, a
 * kernel's name at 104 (checked against CUDA 13.0's cupti_activity.h). */
#define KF_CUPTI_KIND_MEMCPY 1
#define KF_CUPTI_KIND_MEMSET 2
#define KF_CUPTI_KIND_CONCURRENT_KERNEL 10
#define KF_CUPTI_REC_START 16
#define KF_CUPTI_REC_END 24
#define KF_CUPTI_REC_KERNEL_NAME 104
/* Records kept between two samples: a sample with more (thousands of
 * launches) keeps its events' time. */
#define KF_CUPTI_MAX_RECORDS 8192

/* What ran (issue 43 item 4): each kernel name's launches and summed
 * duration over a recording's samples; copies and memsets under "(copy)"
 * and "(memset)", names past KF_CUPTI_MAX_NAMES under "(other kernels)".
 * A name is CUPTI's (mangled C++, a Triton kernel's function name, a
 * library's), cut to its first 127 bytes. */
#define KF_CUPTI_MAX_NAMES 32
typedef struct kf_cupti_launch {
    char name[128];
    uint64_t count, ns;
} kf_cupti_launch;

/* The records one sample delivered, as the buffer callback takes them. */
typedef struct kf_cupti_acc {
    uint64_t blocker_start; /* the runner's blocker began (0: none seen, no sample) */
    uint64_t flush_start;   /* its L2 flush began: a cold sample's start */
    uint64_t start[KF_CUPTI_MAX_RECORDS], end[KF_CUPTI_MAX_RECORDS];
    uint8_t who[KF_CUPTI_MAX_RECORDS]; /* each record's entry in names */
    size_t n;
    int overflow;
    /* The recording's tally, kept across samples (kf_cupti_acc_reset
     * leaves it; kf_cupti_acc_forget_launches empties it). */
    kf_cupti_launch names[KF_CUPTI_MAX_NAMES + 3];
    size_t nnames;
} kf_cupti_acc;

void kf_cupti_acc_reset(kf_cupti_acc *acc);
void kf_cupti_acc_forget_launches(kf_cupti_acc *acc);
/* Adds the records of the sample that kf_cupti_acc_span spans (those that
 * began with it or after) to the tally. */
void kf_cupti_acc_tally(kf_cupti_acc *acc);
/* Takes one activity record: a kernel whose name holds ours_suffix is the
 * runner's (its kf_flush, or kf_block for a hot sample, marks the sample's
 * start), kinds other than kernels, memsets and copies are ignored. */
void kf_cupti_acc_take(kf_cupti_acc *acc, const void *record, const char *ours_suffix);
/* First start to last end of the records taken that began with the sample
 * or after, ns; 0 without a blocker, with none, or past the cap. */
unsigned long long kf_cupti_acc_span(const kf_cupti_acc *acc);

typedef struct kf_cupti kf_cupti;

/* Loads libcupti (already in the process, e.g. torch's, else the CUDA
 * toolkit's) and registers for activity buffers; ours_suffix marks the
 * runner's own kernels. One per process: CUPTI's buffer callbacks carry no
 * context pointer. KF_EUNAVAIL when libcupti is absent or refuses. */
int kf_cupti_open(kf_cupti **out, const char *ours_suffix, kf_err *err);
void kf_cupti_close(kf_cupti **self);

/* Starts or stops recording kernels, memsets and copies (off by default:
 * only the profile's samples need them). */
int kf_cupti_record(kf_cupti *cp, int on);

/* After a sample (the device synchronised): flushes the records and gives
 * the span of the sample's own work, ns; 0 when there is none or it cannot
 * be told (no clock stamp seen, too many records): then the events stand. */
unsigned long long kf_cupti_sample_ns(kf_cupti *cp);

/* The tally of the samples since recording was turned on, at most max
 * entries, most time first; their number. */
size_t kf_cupti_launches(kf_cupti *cp, kf_cupti_launch *out, size_t max);

#endif
