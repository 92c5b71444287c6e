/* coordbench — the benchmark programs of bench/coord, one per subcommand of
 * `kfbench` (main.c). Each prints one `RESULT bench=NAME key=value ...` line
 * on stdout and its progress on stderr, and returns 0 or a KF_E* code with
 * err filled. */
#ifndef KFB_COORDBENCH_H
#define KFB_COORDBENCH_H

#include "common/err.h"

#include <stddef.h>

typedef struct kfb_opts {
    const char *home; /* the --home of the `kfleet serve` under test */
    unsigned agents, slots, tasks, runs, iterations, batch, window, task_ms, workers;
    unsigned long long samples;
    double idle_s, seconds;
    const char *host; /* peers: the server's address */
    int port;
    const char *dir; /* lmdb: where the scratch environment goes */
    int durable;     /* peers: label only (the server decides) */
    const char *label;
} kfb_opts;

/* coordbench.c: against a running `kfleet serve --home HOME` */
int kfb_dispatch(const kfb_opts *o, kf_err *err);
int kfb_latency(const kfb_opts *o, kf_err *err);
int kfb_ingest(const kfb_opts *o, kf_err *err);
int kfb_scale(const kfb_opts *o, kf_err *err);

/* blocks.c: the ceilings */
int kfb_zmq(const kfb_opts *o, kf_err *err);
int kfb_lmdb(const kfb_opts *o, kf_err *err);
int kfb_open(const kfb_opts *o, kf_err *err);

/* peers.c: the same no-op job workload through other job queues */
int kfb_beanstalk(const kfb_opts *o, kf_err *err);
int kfb_gearman(const kfb_opts *o, kf_err *err);

/* Helpers shared by the programs. */
int kfb_proc_cpu(int pid, double *cpu_s);
int kfb_proc_rss_kib(int pid, long *kib);
/* Sorts v and returns its p-th percentile (nearest rank). */
double kfb_percentile(double *v, size_t n, double p);

#endif
