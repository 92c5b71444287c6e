/* coordbench — the coordinator benchmarks of issue 7, run against a real
 * `kfleet serve` (started by bench/coord/run.sh with its own --home):
 *
 *   dispatch  N emulated agents, sweeps of no-op validate tasks; tasks/s from
 *             the submit request leaving to the ack of the last result
 *   latency   one agent, one task at a time: submit-to-start and
 *             result-to-commit percentiles
 *   ingest    agents streaming SampleBatches; samples/s committed and the
 *             coordinator's CPU seconds per million samples
 *   scale     a thousand agents heartbeating: the coordinator's CPU and RSS
 *             idle, and a sweep's makespan against the ideal
 *
 * Sweeps go through the control socket exactly as `kfleet submit` builds
 * them (kf_sweep_parse_string + kf_client_build_submit): the request is
 * built and packed before the clock starts and sent without blocking, so
 * the loop keeps answering assignments while the reply is on its way.
 * Each benchmark prints one machine-readable `RESULT key=value ...` line on
 * stdout; bench/coord/run.sh collects them into the table. */
#include "coordbench.h"
#include "cli/client.h"
#include "fleet.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/paths.h"
#include "core/sweep.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

typedef struct kctl {
    kf_paths paths;
    void *zctx, *sock;
    char kernels[4096];
    kf_buf req; /* a packed request, ready to send */
    int waiting;
    uint32_t sweep_id; /* from the last reply */
} kctl;

/* ---- /proc of the coordinator ---- */

int kfb_proc_cpu(int pid, double *cpu_s)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return KF_EIO;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = '\0';
    /* Fields after the command name, which may hold blanks: after ") ". */
    char *p = strrchr(buf, ')');
    if (!p)
        return KF_EIO;
    unsigned long long ut = 0, st = 0;
    /* state is field 3; utime and stime are fields 14 and 15. */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return KF_EIO;
    *cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
    return KF_OK;
}

int kfb_proc_rss_kib(int pid, long *kib)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return KF_EIO;
    int rc = KF_EIO;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "VmRSS: %ld", kib) == 1) {
            rc = KF_OK;
            break;
        }
    fclose(fp);
    return rc;
}

/* ---- the control socket ---- */

static int ctl_open(const char *home, kctl *c, kf_err *err)
{
    memset(c, 0, sizeof *c);
    kf_buf_init(&c->req);
    int rc = kf_paths_resolve(&c->paths, home, 0, err);
    if (rc)
        return rc;
    if ((rc = kf_client_kernels_dir(c->kernels, sizeof c->kernels, err)))
        return rc;
    /* kf_client_open checks the coordinator's lock: no coordinator is one
     * clear line rather than a timeout. */
    kf_client *probe = NULL;
    if ((rc = kf_client_open(&c->paths, &probe, err)))
        return rc;
    kf_client_close(&probe);
    c->zctx = zmq_ctx_new();
    c->sock = zmq_socket(c->zctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(c->sock, ZMQ_LINGER, &zero, sizeof zero);
    if (zmq_connect(c->sock, c->paths.control_endpoint) != 0)
        return kf_err_set(err, KF_EUNAVAIL, "cannot connect to %s: %s", c->paths.control_endpoint,
                          zmq_strerror(errno));
    return KF_OK;
}

static void ctl_close(kctl *c)
{
    if (c->sock)
        zmq_close(c->sock);
    if (c->zctx)
        zmq_ctx_term(c->zctx);
    kf_buf_release(&c->req);
}

/* A synchronous call, outside any timed part. */
static int ctl_call(kctl *c, Kfleet__ControlRequest *req, Kfleet__ControlReply **out, kf_err *err)
{
    kf_ctl_pack_request(req, &c->req);
    if (zmq_send(c->sock, c->req.data, c->req.len, 0) < 0)
        return kf_err_set(err, KF_EIO, "control send: %s", zmq_strerror(errno));
    zmq_pollitem_t it = {c->sock, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, 60000) <= 0)
        return kf_err_set(err, KF_ETIMEOUT, "the coordinator did not answer in 60 s");
    zmq_msg_t m;
    zmq_msg_init(&m);
    zmq_msg_recv(&m, c->sock, 0);
    Kfleet__ControlReply *rep = kf_ctl_unpack_reply(zmq_msg_data(&m), zmq_msg_size(&m), err);
    zmq_msg_close(&m);
    if (!rep)
        return KF_EPROTO;
    if (rep->code) {
        int rc = kf_err_set(err, rep->code, "coordinator: %s", rep->error ? rep->error : "");
        kfleet__control_reply__free_unpacked(rep, NULL);
        return rc;
    }
    *out = rep;
    return KF_OK;
}

static int ctl_coordinator_pid(kctl *c, int *pid, kf_err *err)
{
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
    req.status = 1;
    Kfleet__ControlReply *rep = NULL;
    int rc = ctl_call(c, &req, &rep, err);
    if (rc)
        return rc;
    *pid = rep->status ? (int)rep->status->pid : 0;
    kfleet__control_reply__free_unpacked(rep, NULL);
    return *pid > 0 ? KF_OK : kf_err_set(err, KF_EPROTO, "status reply without a pid");
}

/* Packs the submit request of a sweep of `ntasks` no-op configurations:
 * one host kernel (triad), one parameter axis, tasks [validate]. */
static int ctl_prepare_sweep(kctl *c, uint32_t ntasks, kf_err *err)
{
    char yaml[512];
    int n = snprintf(yaml, sizeof yaml,
                     "name: bench-%u\n"
                     "kernels: [triad]\n"
                     "params: {n: {from: 1, to: %u, step: 1}}\n"
                     "tasks: [validate]\n"
                     "nodes: any\n",
                     ntasks, ntasks);
    kf_sweep_spec *spec = NULL;
    Kfleet__SubmitRequest *sub = NULL;
    int rc = kf_sweep_parse_string(yaml, (size_t)n, "bench.yaml", ".", c->kernels, &spec, err);
    if (rc == KF_OK)
        rc = kf_client_build_submit(spec, c->kernels, &sub, err);
    if (rc == KF_OK) {
        Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
        req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
        req.submit = sub;
        kf_ctl_pack_request(&req, &c->req);
    }
    kf_client_free_submit(&sub);
    kf_sweep_destroy(&spec);
    return rc;
}

static int ctl_send_prepared(kctl *c, kf_err *err)
{
    if (zmq_send(c->sock, c->req.data, c->req.len, 0) < 0)
        return kf_err_set(err, KF_EIO, "control send: %s", zmq_strerror(errno));
    c->waiting = 1;
    return KF_OK;
}

/* Takes the reply of a sent submit if it is there. */
static int ctl_poll_reply(kctl *c, kf_err *err)
{
    if (!c->waiting)
        return KF_OK;
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, c->sock, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&m);
        return KF_OK;
    }
    Kfleet__ControlReply *rep = kf_ctl_unpack_reply(zmq_msg_data(&m), zmq_msg_size(&m), err);
    zmq_msg_close(&m);
    if (!rep)
        return KF_EPROTO;
    int rc = KF_OK;
    if (rep->code)
        rc = kf_err_set(err, rep->code, "submit refused: %s", rep->error ? rep->error : "");
    c->sweep_id = rep->sweep_id;
    c->waiting = 0;
    kfleet__control_reply__free_unpacked(rep, NULL);
    return rc;
}

/* ---- common driving ---- */

static int fleet_open(kctl *c, unsigned nagents, const kfb_fleet_config *base, kfb_fleet **out,
                      kf_err *err)
{
    char endpoint[512] = "", pub[KF_KEY_Z85 + 1];
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, c->paths.agent_endpoint_file) != KF_OK)
        return kf_err_set(err, KF_EIO, "cannot read %s (is `kfleet serve` running?)",
                          c->paths.agent_endpoint_file);
    snprintf(endpoint, sizeof endpoint, "%.*s", (int)strcspn(b.data, "\n"), b.data);
    kf_buf_release(&b);
    int rc = kf_keys_read_public(c->paths.coord_pub, pub, err);
    if (rc)
        return rc;
    kfb_fleet_config cfg = *base;
    cfg.endpoint = endpoint;
    cfg.server_pub = pub;
    cfg.allow_file = c->paths.allow;
    cfg.nagents = nagents;
    uint64_t t0 = kf_mono_ns();
    if ((rc = kfb_fleet_new(&cfg, out, err)))
        return rc;
    uint64_t t1 = kf_mono_ns();
    /* Every agent registered, within a minute. */
    while (kfb_fleet_stats_get(*out)->welcomed < nagents) {
        if ((rc = kfb_fleet_step(*out, 10)))
            return kf_err_set(err, rc, "poll failed");
        if (kf_mono_ns() - t1 > 60000000000ull)
            return kf_err_set(err, KF_ETIMEOUT, "only %llu of %u agents registered in 60 s",
                              (unsigned long long)kfb_fleet_stats_get(*out)->welcomed, nagents);
    }
    fprintf(stderr, "coordbench: %u agents: keys enrolled in %.2f s, registered in %.2f s\n",
            nagents, (double)(t1 - t0) / 1e9, (double)(kf_mono_ns() - t1) / 1e9);
    return KF_OK;
}

/* Submits the prepared sweep and steps the fleet until `want` more
 * non-build results are acked. Returns the seconds from the send to the
 * last ack. */
static int run_sweep(kctl *c, kfb_fleet *f, uint64_t want, double timeout_s, double *secs,
                     uint64_t *start_mono, kf_err *err)
{
    const kfb_fleet_stats *st = kfb_fleet_stats_get(f);
    uint64_t base = st->results_acked;
    uint64_t t0 = kf_mono_ns();
    if (start_mono)
        *start_mono = t0;
    int rc = ctl_send_prepared(c, err);
    if (rc)
        return rc;
    while (st->results_acked - base < want || c->waiting) {
        if ((rc = kfb_fleet_step(f, 1)))
            return kf_err_set(err, rc, "poll failed");
        if ((rc = ctl_poll_reply(c, err)))
            return rc;
        if ((double)(kf_mono_ns() - t0) / 1e9 > timeout_s)
            return kf_err_set(
                err, KF_ETIMEOUT, "sweep not done in %.0f s: %llu of %llu results acked", timeout_s,
                (unsigned long long)(st->results_acked - base), (unsigned long long)want);
    }
    *secs = (double)(st->last_ack_mono - t0) / 1e9;
    return KF_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double kfb_percentile(double *v, size_t n, double p)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static int check_clean(const kfb_fleet *f, kf_err *err)
{
    const kfb_fleet_stats *st = kfb_fleet_stats_get(f);
    if (st->rejects)
        return kf_err_set(err, KF_EPROTO, "the coordinator rejected %llu frames",
                          (unsigned long long)st->rejects);
    return KF_OK;
}

/* ---- dispatch ---- */

int kfb_dispatch(const kfb_opts *o, kf_err *err)
{
    kctl c;
    kfb_fleet *f = NULL;
    int pid = 0, rc = ctl_open(o->home, &c, err);
    double *rates = calloc(o->runs ? o->runs : 1, sizeof *rates);
    kfb_fleet_config base = {0};
    base.cpu_slots = o->slots;
    base.prefix = "disp";
    if (rc || (rc = ctl_coordinator_pid(&c, &pid, err)) ||
        (rc = fleet_open(&c, o->agents, &base, &f, err)))
        goto out;
    /* Warm-up: every agent builds the kernel once (its first task needs it). */
    double secs;
    if ((rc = ctl_prepare_sweep(&c, o->agents * 4, err)) ||
        (rc = run_sweep(&c, f, o->agents * 4, 120, &secs, NULL, err)))
        goto out;
    if ((rc = ctl_prepare_sweep(&c, o->tasks, err)))
        goto out;
    double cpu0 = 0, cpu1 = 0;
    kfb_proc_cpu(pid, &cpu0);
    for (unsigned r = 0; r < o->runs; r++) {
        if ((rc = run_sweep(&c, f, o->tasks, 300, &secs, NULL, err)))
            goto out;
        rates[r] = o->tasks / secs;
        fprintf(stderr,
                "coordbench: dispatch agents=%u run %u: %u tasks in %.3f s = %.0f tasks/s\n",
                o->agents, r + 1, o->tasks, secs, rates[r]);
    }
    kfb_proc_cpu(pid, &cpu1);
    if ((rc = check_clean(f, err)))
        goto out;
    double med = kfb_percentile(rates, o->runs, 50);
    printf("RESULT bench=dispatch agents=%u tasks=%u runs=%u tasks_per_s=%.0f min=%.0f max=%.0f "
           "coord_cpu_us_per_task=%.1f resends=%llu\n",
           o->agents, o->tasks, o->runs, med, rates[0], rates[o->runs - 1],
           (cpu1 - cpu0) * 1e6 / ((double)o->tasks * o->runs),
           (unsigned long long)kfb_fleet_stats_get(f)->resends);
out:
    free(rates);
    kfb_fleet_destroy(&f);
    ctl_close(&c);
    return rc;
}

/* ---- latency ---- */

typedef struct klat {
    uint64_t submit_mono, assign_mono, sent_mono, ack_mono;
    int got_assign, got_ack;
} klat;

static void lat_assigned(void *ctx, uint64_t task_id, int build, uint64_t recv_mono)
{
    klat *l = ctx;
    (void)task_id;
    if (!build && !l->got_assign) {
        l->assign_mono = recv_mono;
        l->got_assign = 1;
    }
}

static void lat_acked(void *ctx, uint64_t task_id, int build, uint64_t sent_mono, uint64_t ack_mono)
{
    klat *l = ctx;
    (void)task_id;
    if (!build && !l->got_ack) {
        l->sent_mono = sent_mono;
        l->ack_mono = ack_mono;
        l->got_ack = 1;
    }
}

int kfb_latency(const kfb_opts *o, kf_err *err)
{
    kctl c;
    kfb_fleet *f = NULL;
    klat l = {0};
    double *s2s = calloc(o->iterations, sizeof *s2s), *r2c = calloc(o->iterations, sizeof *r2c);
    kfb_fleet_config base = {0};
    base.prefix = "lat";
    int rc = ctl_open(o->home, &c, err);
    if (rc || (rc = fleet_open(&c, 1, &base, &f, err)))
        goto out;
    double secs;
    /* Warm-up: the agent's build of the kernel, then a few tasks. */
    if ((rc = ctl_prepare_sweep(&c, 1, err)))
        goto out;
    for (int i = 0; i < 5; i++)
        if ((rc = run_sweep(&c, f, 1, 60, &secs, NULL, err)))
            goto out;
    kfb_fleet_hooks hooks = {&l, lat_assigned, lat_acked};
    kfb_fleet_set_hooks(f, &hooks);
    for (unsigned i = 0; i < o->iterations; i++) {
        memset(&l, 0, sizeof l);
        if ((rc = run_sweep(&c, f, 1, 60, &secs, &l.submit_mono, err)))
            goto out;
        if (!l.got_assign || !l.got_ack) {
            rc = kf_err_set(err, KF_EPROTO, "iteration %u: no assignment or no ack seen", i);
            goto out;
        }
        s2s[i] = (double)(l.assign_mono - l.submit_mono) / 1e3;
        r2c[i] = (double)(l.ack_mono - l.sent_mono) / 1e3;
    }
    if ((rc = check_clean(f, err)))
        goto out;
    double s50 = kfb_percentile(s2s, o->iterations, 50),
           s99 = kfb_percentile(s2s, o->iterations, 99);
    double r50 = kfb_percentile(r2c, o->iterations, 50),
           r99 = kfb_percentile(r2c, o->iterations, 99);
    printf("RESULT bench=latency iterations=%u submit_to_start_p50_us=%.0f "
           "submit_to_start_p99_us=%.0f result_to_commit_p50_us=%.0f "
           "result_to_commit_p99_us=%.0f\n",
           o->iterations, s50, s99, r50, r99);
out:
    free(s2s);
    free(r2c);
    kfb_fleet_destroy(&f);
    ctl_close(&c);
    return rc;
}

/* ---- ingest ---- */

int kfb_ingest(const kfb_opts *o, kf_err *err)
{
    kctl c;
    kfb_fleet *f = NULL;
    kfb_fleet_config base = {0};
    base.prefix = "ingest";
    base.samples_per_task = o->samples / o->agents;
    base.batch = o->batch;
    base.window = o->window;
    uint64_t total = base.samples_per_task * o->agents;
    int pid = 0, rc = ctl_open(o->home, &c, err);
    if (rc || (rc = ctl_coordinator_pid(&c, &pid, err)) ||
        (rc = fleet_open(&c, o->agents, &base, &f, err)) ||
        (rc = ctl_prepare_sweep(&c, o->agents, err)))
        goto out;
    double cpu0 = 0, cpu1 = 0, secs;
    kfb_proc_cpu(pid, &cpu0);
    if ((rc = run_sweep(&c, f, o->agents, 600, &secs, NULL, err)))
        goto out;
    kfb_proc_cpu(pid, &cpu1);
    const kfb_fleet_stats *st = kfb_fleet_stats_get(f);
    if (st->samples_acked != total) {
        rc = kf_err_set(err, KF_EPROTO, "%llu samples acked, %llu sent",
                        (unsigned long long)st->samples_acked, (unsigned long long)total);
        goto out;
    }
    if ((rc = check_clean(f, err)))
        goto out;
    double span = (double)(st->last_ack_mono - st->first_sample_mono) / 1e9;
    printf("RESULT bench=ingest agents=%u samples=%llu batch=%u window=%u samples_per_s=%.0f "
           "seconds=%.2f coord_cpu_s_per_million=%.3f\n",
           o->agents, (unsigned long long)total, o->batch, o->window, (double)total / span, span,
           (cpu1 - cpu0) / ((double)total / 1e6));
out:
    kfb_fleet_destroy(&f);
    ctl_close(&c);
    return rc;
}

/* ---- scale ---- */

int kfb_scale(const kfb_opts *o, kf_err *err)
{
    kctl c;
    kfb_fleet *f = NULL;
    kfb_fleet_config base = {0};
    base.prefix = "scale";
    base.cpu_slots = o->slots;
    int pid = 0, rc = ctl_open(o->home, &c, err);
    if (rc || (rc = ctl_coordinator_pid(&c, &pid, err)))
        goto out;
    long rss0 = 0, rss1 = 0, rss2 = 0;
    kfb_proc_rss_kib(pid, &rss0);
    uint64_t t0 = kf_mono_ns();
    if ((rc = fleet_open(&c, o->agents, &base, &f, err)))
        goto out;
    double connect_s = (double)(kf_mono_ns() - t0) / 1e9;
    /* Let the registrations settle, then measure a quiet stretch: nothing
     * but heartbeats. */
    uint64_t settle = kf_mono_ns() + 2000000000ull;
    while (kf_mono_ns() < settle)
        kfb_fleet_step(f, 10);
    double cpu0 = 0, cpu1 = 0;
    uint64_t hb0 = kfb_fleet_stats_get(f)->heartbeats;
    kfb_proc_cpu(pid, &cpu0);
    uint64_t i0 = kf_mono_ns(), iend = i0 + (uint64_t)(o->idle_s * 1e9);
    while (kf_mono_ns() < iend)
        kfb_fleet_step(f, 10);
    kfb_proc_cpu(pid, &cpu1);
    double idle_wall = (double)(kf_mono_ns() - i0) / 1e9;
    uint64_t hbs = kfb_fleet_stats_get(f)->heartbeats - hb0;
    kfb_proc_rss_kib(pid, &rss1);

    /* The sweep: each task "runs" task_s; every agent builds once first. */
    double secs;
    kfb_fleet_set_task_s(f, o->task_ms / 1000.0);
    if ((rc = ctl_prepare_sweep(&c, o->tasks, err)))
        goto out;
    double cpu2 = 0, cpu3 = 0;
    kfb_proc_cpu(pid, &cpu2);
    if ((rc = run_sweep(&c, f, o->tasks, 600, &secs, NULL, err)))
        goto out;
    kfb_proc_cpu(pid, &cpu3);
    kfb_proc_rss_kib(pid, &rss2);
    if ((rc = check_clean(f, err)))
        goto out;
    unsigned slots = o->slots ? o->slots : 1;
    double ideal = ((double)o->tasks + o->agents) * (o->task_ms / 1000.0) / (o->agents * slots);
    printf("RESULT bench=scale agents=%u connect_s=%.2f idle_cpu_pct=%.2f heartbeats_per_s=%.0f "
           "rss_before_kib=%ld rss_idle_kib=%ld rss_after_sweep_kib=%ld tasks=%u task_ms=%u "
           "sweep_s=%.3f ideal_s=%.3f ratio=%.2f sweep_cpu_s=%.2f\n",
           o->agents, connect_s, 100.0 * (cpu1 - cpu0) / idle_wall, (double)hbs / idle_wall, rss0,
           rss1, rss2, o->tasks, o->task_ms, secs, ideal, secs / ideal, cpu3 - cpu2);
out:
    kfb_fleet_destroy(&f);
    ctl_close(&c);
    return rc;
}
