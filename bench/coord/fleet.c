/* fleet — emulated agents for the coordinator benchmarks; see fleet.h.
 *
 * Every agent is a struct with its DEALER, its key pair, its outbox (the
 * unacked Results and SampleBatches, each kept packed so a resend is the
 * same bytes) and the attempts it "runs". Frames are decoded and dispatched
 * by common/wire.c, as in the real agent. */
#include "fleet.h"
#include "common/buf.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define REGISTER_RETRY_NS 2000000000ull
#define RESEND_CHECK_NS 100000000ull

typedef struct kmsg {
    uint64_t oseq;
    uint64_t task_id;
    uint32_t attempt;
    int is_result, build;
    uint32_t nsamples;
    uint64_t first_sent_mono, sent_mono; /* sent_mono 0: due now */
    kf_buf data;
} kmsg;

typedef struct krun {
    uint64_t task_id;
    uint32_t attempt;
    int build;
    char hash[65];
    uint64_t due_mono;
    uint64_t next_seq, total; /* samples to stream; total 0: none */
    uint32_t inflight;        /* sample batches unacked */
} krun;

typedef struct kagent {
    char id[64];
    kf_keypair kp;
    void *sock;
    int welcomed;
    uint64_t next_register_mono, next_hb_mono, hb_interval_ns;
    uint64_t next_oseq;
    kmsg *out;
    size_t nout, capout;
    krun *runs;
    size_t nruns, capruns;
} kagent;

struct kfb_fleet {
    kfb_fleet_config cfg;
    void *zctx;
    kagent *agents;
    zmq_pollitem_t *items;
    kfb_fleet_stats st;
    kfb_fleet_hooks hooks;
    uint64_t last_resend_check;
    kf_buf scratch;
    Kfleet__Sample *samples; /* one batch, reused */
    Kfleet__Sample **sample_ptrs;
};

/* The handler context: which agent of which fleet a frame came to. */
typedef struct kctx {
    kfb_fleet *f;
    kagent *a;
    uint64_t now;
} kctx;

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p)
        abort();
    return p;
}

/* ---- sending ---- */

static void send_direct(kagent *a, Kfleet__Envelope *env, kf_buf *scratch)
{
    kf_wire_pack(env, scratch);
    zmq_send(a->sock, scratch->data, scratch->len, ZMQ_DONTWAIT);
}

static void send_register(kfb_fleet *f, kagent *a, uint64_t now)
{
    Kfleet__AgentInfo info = KFLEET__AGENT_INFO__INIT;
    info.agent_id = a->id;
    info.hostname = (char *)"kfbench";
    info.version = (char *)KF_VERSION;
    info.cpu_count = 1;
    info.cpu_model = (char *)"emulated";
    info.arch = (char *)"x86_64";
    info.cpu_slots = f->cfg.cpu_slots;
    info.workdir = (char *)"/nonexistent";
    Kfleet__Register reg = KFLEET__REGISTER__INIT;
    reg.info = &info;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &reg;
    send_direct(a, &env, &f->scratch);
    a->next_register_mono = now + REGISTER_RETRY_NS;
}

static void send_heartbeat(kfb_fleet *f, kagent *a, uint64_t now)
{
    size_t cap = a->nruns + a->nout + 1;
    Kfleet__AttemptRef *refs = calloc(cap, sizeof *refs);
    Kfleet__AttemptRef **ptrs = calloc(cap, sizeof *ptrs);
    if (!refs || !ptrs)
        abort();
    size_t n = 0;
    for (size_t i = 0; i < a->nruns; i++) {
        kfleet__attempt_ref__init(&refs[n]);
        refs[n].task_id = a->runs[i].task_id;
        refs[n].attempt = a->runs[i].attempt;
        ptrs[n] = &refs[n];
        n++;
    }
    for (size_t i = 0; i < a->nout; i++) {
        if (!a->out[i].is_result)
            continue;
        kfleet__attempt_ref__init(&refs[n]);
        refs[n].task_id = a->out[i].task_id;
        refs[n].attempt = a->out[i].attempt;
        ptrs[n] = &refs[n];
        n++;
    }
    Kfleet__Heartbeat hb = KFLEET__HEARTBEAT__INIT;
    hb.n_active = n;
    hb.active = ptrs;
    hb.free_cpu_slots = f->cfg.cpu_slots > a->nruns ? f->cfg.cpu_slots - (uint32_t)a->nruns : 0;
    hb.workdir_free_bytes = 1ull << 40;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    send_direct(a, &env, &f->scratch);
    free(refs);
    free(ptrs);
    f->st.heartbeats++;
    a->next_hb_mono = now + a->hb_interval_ns;
}

/* Stamps the next oseq, keeps the packed envelope in the outbox, sends it. */
static void emit(kfb_fleet *f, kagent *a, Kfleet__Envelope *env, const krun *r, int is_result,
                 uint32_t nsamples, uint64_t now)
{
    if (a->nout == a->capout) {
        a->capout = a->capout ? a->capout * 2 : 8;
        a->out = xrealloc(a->out, a->capout * sizeof *a->out);
    }
    kmsg *m = &a->out[a->nout++];
    memset(m, 0, sizeof *m);
    env->oseq = ++a->next_oseq;
    m->oseq = env->oseq;
    m->task_id = r->task_id;
    m->attempt = r->attempt;
    m->is_result = is_result;
    m->build = r->build;
    m->nsamples = nsamples;
    kf_buf_init(&m->data);
    kf_wire_pack(env, &m->data);
    m->first_sent_mono = now;
    if (a->welcomed && zmq_send(a->sock, m->data.data, m->data.len, ZMQ_DONTWAIT) >= 0)
        m->sent_mono = now;
}

static void send_result(kfb_fleet *f, kagent *a, const krun *r, uint64_t now)
{
    Kfleet__Result res = KFLEET__RESULT__INIT;
    Kfleet__BuildInfo bi = KFLEET__BUILD_INFO__INIT;
    Kfleet__ValidateTrial trial = KFLEET__VALIDATE_TRIAL__INIT;
    Kfleet__ValidateTrial *trials[1] = {&trial};
    res.task_id = r->task_id;
    res.attempt = r->attempt;
    res.state = KFLEET__TASK_STATE__SUCCEEDED;
    res.agent_id = a->id;
    res.elapsed_s = f->cfg.task_s;
    res.finished_ns = kf_now_ns();
    res.sample_count = (uint32_t)r->total;
    if (r->build) {
        /* What a cached build of kfleet-agent reports: the artifact hash is
         * what later validate tasks would load. */
        bi.artifact_hash = (char *)r->hash;
        bi.cached = 1;
        bi.compiler = (char *)"kfbench (no compiler run)";
        res.build = &bi;
    } else {
        trial.seed = 1;
        trial.passed = 1;
        res.n_trials = 1;
        res.trials = trials;
        res.deterministic = 1;
    }
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &res;
    emit(f, a, &env, r, 1, 0, now);
}

static void send_samples(kfb_fleet *f, kagent *a, krun *r, uint64_t now)
{
    uint32_t n = f->cfg.batch;
    if (r->total - r->next_seq < n)
        n = (uint32_t)(r->total - r->next_seq);
    uint64_t t_ns = kf_now_ns();
    for (uint32_t i = 0; i < n; i++) {
        f->samples[i].seq = (uint32_t)(r->next_seq + i);
        f->samples[i].seconds = 1e-3 + (double)i * 1e-9;
        f->samples[i].t_ns = t_ns + i;
    }
    Kfleet__SampleBatch sb = KFLEET__SAMPLE_BATCH__INIT;
    sb.task_id = r->task_id;
    sb.attempt = r->attempt;
    sb.n_samples = n;
    sb.samples = f->sample_ptrs;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_SAMPLES;
    env.samples = &sb;
    emit(f, a, &env, r, 0, n, now);
    if (!f->st.first_sample_mono)
        f->st.first_sample_mono = now;
    r->next_seq += n;
    r->inflight++;
    f->st.samples_sent += n;
}

/* ---- handlers for what the coordinator sends ---- */

static int on_welcome(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kctx *k = ctx;
    (void)peer;
    kagent *a = k->a;
    if (env->welcome->heartbeat_interval_ms)
        a->hb_interval_ns = (uint64_t)env->welcome->heartbeat_interval_ms * 1000000ull;
    /* As the real agent: whatever the coordinator had of us may be gone. */
    for (size_t i = 0; i < a->nout; i++)
        a->out[i].sent_mono = 0;
    if (env->welcome->reregister) {
        if (a->welcomed)
            k->f->st.welcomed--;
        a->welcomed = 0;
        send_register(k->f, a, k->now);
        return KF_OK;
    }
    if (!a->welcomed) {
        a->welcomed = 1;
        k->f->st.welcomed++;
        /* Spread the heartbeats of many agents over the interval. */
        a->next_hb_mono = k->now + (uint64_t)(rand() % 1000) * (a->hb_interval_ns / 1000);
    }
    return KF_OK;
}

static int on_assign(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kctx *k = ctx;
    (void)peer;
    kfb_fleet *f = k->f;
    kagent *a = k->a;
    const Kfleet__TaskAssign *ta = env->assign;
    if (!ta->spec)
        return KF_EPROTO;
    for (size_t i = 0; i < a->nruns; i++)
        if (a->runs[i].task_id == ta->task_id && a->runs[i].attempt == ta->attempt)
            return KF_OK; /* a repeated assignment */
    for (size_t i = 0; i < a->nout; i++)
        if (a->out[i].is_result && a->out[i].task_id == ta->task_id &&
            a->out[i].attempt == ta->attempt)
            return KF_OK; /* done, its result on the way */
    int build = ta->spec->kind == KFLEET__TASK_KIND__BUILD;
    f->st.assigns++;
    if (f->hooks.assigned)
        f->hooks.assigned(f->hooks.ctx, ta->task_id, build, k->now);

    Kfleet__Progress p = KFLEET__PROGRESS__INIT;
    p.task_id = ta->task_id;
    p.attempt = ta->attempt;
    p.state = KFLEET__TASK_STATE__RUNNING;
    Kfleet__Envelope out = KFLEET__ENVELOPE__INIT;
    out.body_case = KFLEET__ENVELOPE__BODY_PROGRESS;
    out.progress = &p;
    send_direct(a, &out, &f->scratch);

    krun r = {0};
    r.task_id = ta->task_id;
    r.attempt = ta->attempt;
    r.build = build;
    snprintf(r.hash, sizeof r.hash, "%s", ta->spec->kernel_hash ? ta->spec->kernel_hash : "");
    r.due_mono = k->now + (uint64_t)(f->cfg.task_s * 1e9);
    if (!build)
        r.total = f->cfg.samples_per_task;
    if (f->cfg.task_s <= 0 && r.total == 0) {
        send_result(f, a, &r, k->now); /* answered at once: no run kept */
        return KF_OK;
    }
    if (a->nruns == a->capruns) {
        a->capruns = a->capruns ? a->capruns * 2 : 4;
        a->runs = xrealloc(a->runs, a->capruns * sizeof *a->runs);
    }
    a->runs[a->nruns++] = r;
    return KF_OK;
}

static int on_ack(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kctx *k = ctx;
    (void)peer;
    kfb_fleet *f = k->f;
    kagent *a = k->a;
    const Kfleet__Ack *ack = env->ack;
    f->st.last_ack_mono = k->now;
    for (size_t i = 0; i < ack->n_oseq; i++) {
        for (size_t j = 0; j < a->nout; j++) {
            kmsg *m = &a->out[j];
            if (m->oseq != ack->oseq[i])
                continue;
            if (m->is_result) {
                if (m->build)
                    f->st.builds_acked++;
                else
                    f->st.results_acked++;
                if (f->hooks.result_acked)
                    f->hooks.result_acked(f->hooks.ctx, m->task_id, m->build, m->first_sent_mono,
                                          k->now);
            } else {
                f->st.samples_acked += m->nsamples;
                for (size_t r = 0; r < a->nruns; r++)
                    if (a->runs[r].task_id == m->task_id && a->runs[r].attempt == m->attempt &&
                        a->runs[r].inflight > 0)
                        a->runs[r].inflight--;
            }
            kf_buf_release(&m->data);
            a->out[j] = a->out[--a->nout];
            break;
        }
    }
    return KF_OK;
}

static int on_cancel(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kctx *k = ctx;
    (void)peer;
    kagent *a = k->a;
    k->f->st.cancels++;
    for (size_t i = 0; i < a->nruns; i++) {
        if (a->runs[i].task_id == env->cancel->task_id &&
            a->runs[i].attempt == env->cancel->attempt) {
            a->runs[i] = a->runs[--a->nruns];
            break;
        }
    }
    return KF_OK;
}

static int on_reject(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kctx *k = ctx;
    (void)peer;
    if (k->f->st.rejects++ == 0)
        kf_error("bench.rejected", "agent=%s reason=\"%s\"", k->a->id,
                 env->reject && env->reject->reason ? env->reject->reason : "");
    return KF_OK;
}

static const kf_wire_handler fleet_handlers[KF_WIRE_BODY_MAX] = {
    [KFLEET__ENVELOPE__BODY_WELCOME] = on_welcome, [KFLEET__ENVELOPE__BODY_ASSIGN] = on_assign,
    [KFLEET__ENVELOPE__BODY_ACK] = on_ack,         [KFLEET__ENVELOPE__BODY_CANCEL] = on_cancel,
    [KFLEET__ENVELOPE__BODY_REJECT] = on_reject,
};

/* ---- life cycle ---- */

int kfb_fleet_new(const kfb_fleet_config *cfg, kfb_fleet **out, kf_err *err)
{
    if (!cfg->nagents || !cfg->endpoint || !cfg->server_pub || !cfg->allow_file)
        return kf_err_set(err, KF_EINVAL,
                          "fleet: needs agents, an endpoint, a key and an allow list");
    kfb_fleet *f = calloc(1, sizeof *f);
    if (!f)
        return kf_err_set(err, KF_ENOMEM, "out of memory");
    f->cfg = *cfg;
    if (!f->cfg.cpu_slots)
        f->cfg.cpu_slots = 1;
    if (f->cfg.resend_s <= 0)
        f->cfg.resend_s = 5.0;
    if (!f->cfg.batch)
        f->cfg.batch = 1000;
    if (!f->cfg.window)
        f->cfg.window = 4;
    if (!f->cfg.prefix)
        f->cfg.prefix = "bench";
    kf_buf_init(&f->scratch);
    f->samples = calloc(f->cfg.batch, sizeof *f->samples);
    f->sample_ptrs = calloc(f->cfg.batch, sizeof *f->sample_ptrs);
    f->agents = calloc(cfg->nagents, sizeof *f->agents);
    f->items = calloc(cfg->nagents, sizeof *f->items);
    if (!f->samples || !f->sample_ptrs || !f->agents || !f->items) {
        kfb_fleet_destroy(&f);
        return kf_err_set(err, KF_ENOMEM, "out of memory");
    }
    for (uint32_t i = 0; i < f->cfg.batch; i++) {
        kfleet__sample__init(&f->samples[i]);
        f->sample_ptrs[i] = &f->samples[i];
    }
    f->zctx = zmq_ctx_new();
    zmq_ctx_set(f->zctx, ZMQ_MAX_SOCKETS, (int)cfg->nagents + 64);
    int rc = KF_OK;
    uint64_t now = kf_mono_ns();
    for (unsigned i = 0; i < cfg->nagents; i++) {
        kagent *a = &f->agents[i];
        snprintf(a->id, sizeof a->id, "%s-%04u", f->cfg.prefix, i);
        a->hb_interval_ns = 1000000000ull;
        if (zmq_curve_keypair(a->kp.pub, a->kp.sec) != 0) {
            rc = kf_err_set(err, KF_EIO, "zmq_curve_keypair: %s (libzmq without CURVE?)",
                            zmq_strerror(errno));
            goto fail;
        }
        if ((rc = kf_allow_enroll(cfg->allow_file, a->kp.pub, a->id, err)))
            goto fail;
    }
    for (unsigned i = 0; i < cfg->nagents; i++) {
        kagent *a = &f->agents[i];
        a->sock = zmq_socket(f->zctx, ZMQ_DEALER);
        if (!a->sock) {
            rc = kf_err_set(err, KF_EIO, "agent %u: zmq_socket: %s", i, zmq_strerror(errno));
            goto fail;
        }
        int zero = 0, hwm = 100000;
        zmq_setsockopt(a->sock, ZMQ_LINGER, &zero, sizeof zero);
        zmq_setsockopt(a->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
        zmq_setsockopt(a->sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
        zmq_setsockopt(a->sock, ZMQ_CURVE_SERVERKEY, cfg->server_pub, KF_KEY_Z85 + 1);
        zmq_setsockopt(a->sock, ZMQ_CURVE_PUBLICKEY, a->kp.pub, KF_KEY_Z85 + 1);
        zmq_setsockopt(a->sock, ZMQ_CURVE_SECRETKEY, a->kp.sec, KF_KEY_Z85 + 1);
        if (zmq_connect(a->sock, cfg->endpoint) != 0) {
            rc = kf_err_set(err, KF_EIO, "cannot connect to %s: %s", cfg->endpoint,
                            zmq_strerror(errno));
            goto fail;
        }
        f->items[i] = (zmq_pollitem_t){a->sock, 0, ZMQ_POLLIN, 0};
        send_register(f, a, now);
    }
    *out = f;
    return KF_OK;
fail:
    kfb_fleet_destroy(&f);
    return rc;
}

void kfb_fleet_destroy(kfb_fleet **self)
{
    kfb_fleet *f = *self;
    if (!f)
        return;
    for (unsigned i = 0; f->agents && i < f->cfg.nagents; i++) {
        kagent *a = &f->agents[i];
        if (a->sock)
            zmq_close(a->sock);
        for (size_t j = 0; j < a->nout; j++)
            kf_buf_release(&a->out[j].data);
        free(a->out);
        free(a->runs);
        memset(&a->kp, 0, sizeof a->kp);
    }
    if (f->zctx)
        zmq_ctx_term(f->zctx);
    free(f->agents);
    free(f->items);
    free(f->samples);
    free(f->sample_ptrs);
    kf_buf_release(&f->scratch);
    free(f);
    *self = NULL;
}

void kfb_fleet_set_hooks(kfb_fleet *self, const kfb_fleet_hooks *hooks)
{
    self->hooks = *hooks;
}

void kfb_fleet_set_task_s(kfb_fleet *self, double task_s)
{
    self->cfg.task_s = task_s;
}

const kfb_fleet_stats *kfb_fleet_stats_get(const kfb_fleet *self)
{
    return &self->st;
}

/* ---- the turn ---- */

static void drain(kfb_fleet *f, kagent *a)
{
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    kctx k = {f, a, kf_mono_ns()};
    kf_peer p = {NULL, 0, NULL};
    while (zmq_msg_recv(&msg, a->sock, ZMQ_DONTWAIT) >= 0) {
        kf_err err;
        if (kf_wire_dispatch(fleet_handlers, &k, &p, zmq_msg_data(&msg), zmq_msg_size(&msg),
                             &err) == KF_EPROTO)
            kf_error("bench.bad_frame", "agent=%s error=\"%s\"", a->id, err.msg);
    }
    zmq_msg_close(&msg);
}

/* What is due on one agent: registration retries, heartbeats, results of
 * finished runs, sample batches the window allows, resends. */
static void due(kfb_fleet *f, kagent *a, uint64_t now, int resend_check)
{
    if (!a->welcomed) {
        if (now >= a->next_register_mono)
            send_register(f, a, now);
        return;
    }
    if (now >= a->next_hb_mono)
        send_heartbeat(f, a, now);
    for (size_t i = 0; i < a->nruns;) {
        krun *r = &a->runs[i];
        while (r->next_seq < r->total && r->inflight < f->cfg.window)
            send_samples(f, a, r, now);
        if (r->next_seq >= r->total && now >= r->due_mono) {
            krun done = *r;
            a->runs[i] = a->runs[--a->nruns];
            send_result(f, a, &done, now);
            continue;
        }
        i++;
    }
    if (!resend_check)
        return;
    uint64_t after = (uint64_t)(f->cfg.resend_s * 1e9);
    for (size_t i = 0; i < a->nout; i++) {
        kmsg *m = &a->out[i];
        if (m->sent_mono && now - m->sent_mono < after)
            continue;
        if (zmq_send(a->sock, m->data.data, m->data.len, ZMQ_DONTWAIT) < 0)
            break; /* HWM: the next check tries again */
        if (m->sent_mono)
            f->st.resends++;
        m->sent_mono = now;
    }
}

int kfb_fleet_step(kfb_fleet *f, int timeout_ms)
{
    int n = zmq_poll(f->items, (int)f->cfg.nagents, timeout_ms);
    if (n < 0 && errno != EINTR)
        return KF_EIO;
    for (unsigned i = 0; n > 0 && i < f->cfg.nagents; i++)
        if (f->items[i].revents & ZMQ_POLLIN)
            drain(f, &f->agents[i]);
    uint64_t now = kf_mono_ns();
    int resend_check = now - f->last_resend_check >= RESEND_CHECK_NS;
    if (resend_check)
        f->last_resend_check = now;
    for (unsigned i = 0; i < f->cfg.nagents; i++)
        due(f, &f->agents[i], now, resend_check);
    return KF_OK;
}
