/* gen_corpus — writes the seed corpora of fuzz_wire, fuzz_control and
 * fuzz_sched from real messages: the SubmitRequests the CLI builds from the
 * repo's sweep files (kf_client_build_submit), and conversations played
 * against a live (socket-less) coordinator, whose assignments decide which
 * task ids and attempts the agents' progress, samples and results name.
 * Usage: gen_corpus OUTDIR   (run by `tests/fuzz/run.sh --gen-corpus`). */
#include "cli/client.h"
#include "coord_fixture.h"
#include "core/sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *outdir;

static void write_seed(const char *target, const char *name, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", outdir, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "gen_corpus: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
}

static void seed_env(const char *name, Kfleet__Envelope *env)
{
    kf_buf b = KF_BUF_INIT;
    kf_wire_pack(env, &b);
    write_seed("wire", name, b.data, b.len);
    kf_buf_release(&b);
}

static void seed_ctl(const char *name, Kfleet__ControlRequest *req)
{
    kf_buf b = KF_BUF_INIT;
    kf_ctl_pack_request(req, &b);
    write_seed("control", name, b.data, b.len);
    kf_buf_release(&b);
}

/* ---- the messages ---- */

static char *labels[] = {"h100", "spot"};

static void fill_info(Kfleet__AgentInfo *info, Kfleet__GpuInfo *gpu, Kfleet__GpuInfo **gpus,
                      const char *id, uint32_t gpu_slots, uint32_t cpu_slots)
{
    kfleet__agent_info__init(info);
    kfleet__gpu_info__init(gpu);
    gpu->name = "NVIDIA H100 80GB HBM3";
    gpu->uuid = "GPU-8c4e5ff2-0000-0000-0000-000000000000";
    gpu->cc_major = 9;
    gpu->memory_bytes = 85ull << 30;
    gpu->sm_count = 132;
    gpus[0] = gpu;
    info->agent_id = (char *)id;
    info->hostname = "pod-1";
    info->pid = 4242;
    info->version = "0.1.0";
    info->cpu_count = 16;
    info->cpu_model = "AMD EPYC";
    info->arch = "x86_64";
    info->memory_bytes = 128ull << 30;
    info->workdir = "/tmp/kf";
    info->workdir_free_bytes = 10ull << 30;
    info->n_gpus = gpu_slots ? 1 : 0;
    info->gpus = gpus;
    info->driver_version = "580.65.06";
    info->cuda_driver_version = 13000;
    info->nvcc_version = "13.0, V13.0.88";
    info->cc_version = "gcc 12.2.0";
    info->gpu_slots = gpu_slots;
    info->cpu_slots = cpu_slots;
    info->n_labels = 2;
    info->labels = labels;
    info->ceiling_copy_gbps = 2900.5;
    info->ceiling_bf16_tflops = 700.25;
}

/* ---- conversations against a live coordinator ---- */

typedef struct conv {
    kf_buf file;
    kf_coord *c;
    size_t seen; /* c->out entries already looked at */
    uint64_t oseq;
} conv;

static void rec(conv *v, uint8_t head, const kf_buf *b)
{
    uint8_t h[3] = {head, (uint8_t)(b->len & 0xff), (uint8_t)(b->len >> 8)};
    if (b->len > 0xffff)
        abort();
    kf_buf_add(&v->file, h, 3);
    kf_buf_add(&v->file, b->data, b->len);
}

static void agent_say(conv *v, int agent, Kfleet__Envelope *env)
{
    kf_buf b = KF_BUF_INIT;
    kf_wire_pack(env, &b);
    rec(v, (uint8_t)agent, &b);
    char id[3] = {'a', (char)('0' + agent), 0};
    kf_peer peer = {.id = id, .id_len = 2};
    kf_err err;
    kf_wire_dispatch(kf_sched_handlers, v->c, &peer, b.data, b.len, &err);
    kf_fuzz_coord_turn(v->c);
    kf_buf_release(&b);
}

static void cli_say(conv *v, Kfleet__ControlRequest *req)
{
    kf_buf b = KF_BUF_INIT;
    kf_ctl_pack_request(req, &b);
    rec(v, 0x80, &b);
    control_handle(v->c, "cli", 3, b.data, b.len);
    kf_fuzz_coord_turn(v->c);
    kf_buf_release(&b);
}

static void tick(conv *v)
{
    kf_buf b = KF_BUF_INIT;
    rec(v, 0x7f, &b);
    double t = v->c->cfg.heartbeat_timeout_s, g = v->c->cfg.assign_grace_s;
    v->c->cfg.heartbeat_timeout_s = v->c->cfg.assign_grace_s = 0;
    sched_check_agents(v->c);
    v->c->cfg.heartbeat_timeout_s = t;
    v->c->cfg.assign_grace_s = g;
    v->c->dispatch_needed = 1;
    kf_fuzz_coord_turn(v->c);
}

static void do_register(conv *v, int agent, uint32_t gpus, uint32_t cpus)
{
    char id[3] = {'a', (char)('0' + agent), 0};
    Kfleet__AgentInfo info;
    Kfleet__GpuInfo gpu, *gp[1];
    fill_info(&info, &gpu, gp, id, gpus, cpus);
    Kfleet__Register r = KFLEET__REGISTER__INIT;
    r.info = &info;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &r;
    agent_say(v, agent, &env);
}

/* The next assignment queued for agent, or NULL. */
static Kfleet__TaskAssign *next_assign(conv *v, int agent)
{
    char id[3] = {'a', (char)('0' + agent), 0};
    for (; v->seen < v->c->nout; v->seen++) {
        koutmsg *m = &v->c->out[v->seen];
        if (m->to_control || m->peer_len != 2 || memcmp(m->peer, id, 2) != 0)
            continue;
        kf_err err;
        Kfleet__Envelope *e = kf_wire_unpack(m->payload.data, m->payload.len, &err);
        if (e && e->body_case == KFLEET__ENVELOPE__BODY_ASSIGN) {
            Kfleet__TaskAssign *a = e->assign;
            e->assign = NULL;
            e->body_case = KFLEET__ENVELOPE__BODY__NOT_SET;
            kf_wire_free(e);
            v->seen++;
            return a;
        }
        kf_wire_free(e);
    }
    return NULL;
}

enum { RUN_OK, RUN_FAIL, RUN_DUP };

/* The agent's side of one assignment: running, samples, then the result. */
static void play(conv *v, int agent, const Kfleet__TaskAssign *as, int how)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Progress pr = KFLEET__PROGRESS__INIT;
    pr.task_id = as->task_id;
    pr.attempt = as->attempt;
    pr.state = KFLEET__TASK_STATE__RUNNING;
    pr.message = "running";
    env.body_case = KFLEET__ENVELOPE__BODY_PROGRESS;
    env.progress = &pr;
    env.oseq = ++v->oseq;
    agent_say(v, agent, &env);

    Kfleet__AttemptRef ref = KFLEET__ATTEMPT_REF__INIT, *refs[1] = {&ref};
    ref.task_id = as->task_id;
    ref.attempt = as->attempt;
    Kfleet__Heartbeat hb = KFLEET__HEARTBEAT__INIT;
    hb.n_active = 1;
    hb.active = refs;
    hb.free_cpu_slots = 1;
    Kfleet__Envelope henv = KFLEET__ENVELOPE__INIT;
    henv.body_case = KFLEET__ENVELOPE__BODY_HEARTBEAT;
    henv.heartbeat = &hb;
    agent_say(v, agent, &henv);

    int profile = as->spec && as->spec->kind == KFLEET__TASK_KIND__PROFILE;
    Kfleet__Sample s[3], *sp[3];
    Kfleet__Telemetry tm = KFLEET__TELEMETRY__INIT, *tp[1] = {&tm};
    if (profile) {
        for (int i = 0; i < 3; i++) {
            kfleet__sample__init(&s[i]);
            s[i].seq = (uint32_t)i;
            s[i].seconds = 1e-3 * (1 + i);
            s[i].t_ns = 1700000000000000000ull + (uint64_t)i;
            sp[i] = &s[i];
        }
        tm.sm_clock_mhz = 1980;
        tm.power_mw = 350000;
        tm.temp_c = 60;
        Kfleet__SampleBatch sb = KFLEET__SAMPLE_BATCH__INIT;
        sb.task_id = as->task_id;
        sb.attempt = as->attempt;
        sb.n_samples = 3;
        sb.samples = sp;
        sb.n_telemetry = 1;
        sb.telemetry = tp;
        Kfleet__Envelope senv = KFLEET__ENVELOPE__INIT;
        senv.body_case = KFLEET__ENVELOPE__BODY_SAMPLES;
        senv.samples = &sb;
        senv.oseq = ++v->oseq;
        agent_say(v, agent, &senv);
    }

    Kfleet__Result r = KFLEET__RESULT__INIT;
    Kfleet__BuildInfo bi = KFLEET__BUILD_INFO__INIT;
    Kfleet__ProfileStats ps = KFLEET__PROFILE_STATS__INIT;
    Kfleet__ValidateTrial tr = KFLEET__VALIDATE_TRIAL__INIT, *trs[1] = {&tr};
    char agent_id[3] = {'a', (char)('0' + agent), 0};
    r.task_id = as->task_id;
    r.attempt = as->attempt;
    r.state = how == RUN_FAIL ? KFLEET__TASK_STATE__FAILED : KFLEET__TASK_STATE__SUCCEEDED;
    r.error = how == RUN_FAIL ? "triad.c:3:1: error: expected ';'\nmore" : "";
    r.elapsed_s = 0.5;
    r.agent_id = agent_id;
    if (as->spec && as->spec->kind == KFLEET__TASK_KIND__BUILD) {
        bi.artifact_hash = "0123456789abcdef";
        bi.compile_s = 0.25;
        bi.compiler = "cc";
        bi.registers = 32;
        r.build = &bi;
    } else if (profile) {
        ps.samples = 3;
        ps.median_s = 2e-3;
        ps.mean_s = 2e-3;
        ps.min_s = 1e-3;
        ps.max_s = 3e-3;
        ps.bytes = 1 << 20;
        r.profile = &ps;
        r.sample_count = 3;
    } else {
        tr.seed = 1;
        tr.max_abs_err = 1e-7;
        tr.passed = 1;
        r.n_trials = 1;
        r.trials = trs;
        r.deterministic = 1;
    }
    Kfleet__Envelope renv = KFLEET__ENVELOPE__INIT;
    renv.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    renv.result = &r;
    renv.oseq = ++v->oseq;
    agent_say(v, agent, &renv);
    if (how == RUN_DUP)
        agent_say(v, agent, &renv);
}

static void conv_begin(conv *v)
{
    kf_buf_init(&v->file);
    v->c = kf_fuzz_coord_new();
    v->seen = 0;
    v->oseq = 0;
}

static void conv_end(conv *v, const char *name)
{
    write_seed("sched", name, v->file.data, v->file.len);
    kf_fuzz_coord_destroy(&v->c);
    kf_buf_release(&v->file);
}

/* Plays every assignment agent gets until none comes, `how` for each. */
static void serve(conv *v, int agent, int how, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        Kfleet__TaskAssign *as = next_assign(v, agent);
        if (!as)
            return;
        play(v, agent, as, how);
        kfleet__task_assign__free_unpacked(as, NULL);
    }
}

static Kfleet__SubmitRequest *load_submit(const char *sweep, const char *kernels)
{
    kf_sweep_spec *spec = NULL;
    Kfleet__SubmitRequest *req = NULL;
    kf_err err;
    if (kf_sweep_parse_file(sweep, kernels, &spec, &err) ||
        kf_client_build_submit(spec, kernels, &req, &err)) {
        fprintf(stderr, "gen_corpus: %s: %s\n", sweep, err.msg);
        exit(1);
    }
    kf_sweep_destroy(&spec);
    /* Seeds stay small: the sources' bytes matter less than their shape. */
    for (size_t k = 0; k < req->sweep->n_kernels; k++)
        for (size_t s = 0; s < req->sweep->kernels[k]->n_sources; s++)
            if (req->sweep->kernels[k]->sources[s]->content.len > 48)
                req->sweep->kernels[k]->sources[s]->content.len = 48;
    return req;
}

static void submit(conv *v, Kfleet__SubmitRequest *sub)
{
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
    req.submit = sub;
    cli_say(v, &req);
}

static void ask(conv *v, int body_case, uint32_t arg)
{
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = (Kfleet__ControlRequest__BodyCase)body_case;
    req.status = 1;
    req.shutdown = 1;
    req.progress = arg;
    req.cancel = arg;
    cli_say(v, &req);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_corpus OUTDIR\n");
        return 2;
    }
    outdir = argv[1];
    mkdir(outdir, 0755);
    const char *src = KF_SOURCE_DIR;
    char kernels[4096], quick[4096], fail[4096], minimal[4096];
    snprintf(kernels, sizeof kernels, "%s/kernels", src);
    snprintf(quick, sizeof quick, "%s/examples/quickstart.yaml", src);
    snprintf(fail, sizeof fail, "%s/tests/data/sweeps/failures.yaml", src);
    snprintf(minimal, sizeof minimal, "%s/tests/data/sweeps/slow60.yaml", src);
    Kfleet__SubmitRequest *sub_quick = load_submit(quick, kernels);
    Kfleet__SubmitRequest *sub_fail = load_submit(fail, kernels);
    Kfleet__SubmitRequest *sub_small = load_submit(minimal, kernels);

    /* ---- fuzz_control: one request each ---- */
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
    req.submit = sub_quick;
    seed_ctl("submit-quickstart", &req);
    req.submit = sub_fail;
    seed_ctl("submit-failures", &req);
    req.submit = sub_small;
    sub_small->sweep->nodes_all = 1;
    seed_ctl("submit-nodes-all", &req);
    sub_small->sweep->nodes_all = 0;
    uint32_t saved = sub_small->tasks[0]->kernel_index;
    sub_small->tasks[0]->kernel_index = 7;
    seed_ctl("bad-submit-kernel-index", &req);
    sub_small->tasks[0]->kernel_index = saved;
    req.submit = sub_small;
    seed_ctl("submit-small", &req);
    Kfleet__ControlRequest simple = KFLEET__CONTROL_REQUEST__INIT;
    simple.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
    simple.status = 1;
    seed_ctl("status", &simple);
    simple.body_case = KFLEET__CONTROL_REQUEST__BODY_PROGRESS;
    simple.progress = 1;
    seed_ctl("progress", &simple);
    simple.body_case = KFLEET__CONTROL_REQUEST__BODY_CANCEL;
    simple.cancel = 1;
    seed_ctl("cancel", &simple);
    simple.body_case = KFLEET__CONTROL_REQUEST__BODY_SHUTDOWN;
    simple.shutdown = 1;
    seed_ctl("shutdown", &simple);
    simple.body_case = KFLEET__CONTROL_REQUEST__BODY__NOT_SET;
    seed_ctl("bad-empty", &simple);
    {
        kf_buf b = KF_BUF_INIT;
        simple.body_case = KFLEET__CONTROL_REQUEST__BODY_STATUS;
        simple.version = 9;
        size_t n = kfleet__control_request__get_packed_size(&simple);
        kf_buf_grow(&b, n);
        kfleet__control_request__pack(&simple, (uint8_t *)b.data);
        write_seed("control", "bad-version", b.data, n);
        kf_buf_release(&b);
    }
    {
        /* A reply, as the CLI would read it. */
        Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
        Kfleet__StatusReply st = KFLEET__STATUS_REPLY__INIT;
        Kfleet__AgentInfo info, *ip[1] = {&info};
        Kfleet__GpuInfo gpu, *gp[1];
        fill_info(&info, &gpu, gp, "a0", 1, 2);
        Kfleet__SweepProgress sp = KFLEET__SWEEP_PROGRESS__INIT, *spp[1] = {&sp};
        sp.sweep_id = 3;
        sp.name = "quickstart";
        sp.total = 18;
        sp.succeeded = 12;
        st.n_agents = 1;
        st.agents = ip;
        st.n_sweeps = 1;
        st.sweeps = spp;
        st.agent_endpoint = "tcp://127.0.0.1:5555";
        st.version = "0.1.0";
        rep.status = &st;
        kf_buf b = KF_BUF_INIT;
        kf_ctl_pack_reply(&rep, &b);
        write_seed("control", "reply-status", b.data, b.len);
        kf_buf_release(&b);
    }

    /* ---- fuzz_wire: one envelope per body case, then bad ones ---- */
    Kfleet__AgentInfo info;
    Kfleet__GpuInfo gpu, *gp[1];
    fill_info(&info, &gpu, gp, "a0", 1, 2);
    Kfleet__Register reg = KFLEET__REGISTER__INIT;
    reg.info = &info;
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &reg;
    seed_env("register", &env);

    /* The rest come from a conversation: what the coordinator sends
     * (welcome, assign, cancel) and what an agent answers. */
    conv v;
    conv_begin(&v);
    do_register(&v, 0, 1, 2);
    submit(&v, sub_quick);
    serve(&v, 0, RUN_OK, 64);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_STATUS, 0);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_PROGRESS, 1);
    for (size_t i = 0; i < v.c->nout; i++) {
        koutmsg *m = &v.c->out[i];
        kf_err err;
        Kfleet__Envelope *e =
            m->to_control ? NULL : kf_wire_unpack(m->payload.data, m->payload.len, &err);
        if (e) {
            char name[64];
            snprintf(name, sizeof name, "coord-%s-%zu", kf_wire_body_name((int)e->body_case), i);
            if (i < 8 || e->body_case != KFLEET__ENVELOPE__BODY_ASSIGN)
                write_seed("wire", name, m->payload.data, m->payload.len);
            kf_wire_free(e);
        }
    }
    /* The agent's frames of the same conversation, one seed each. */
    size_t pos = 0, nrec = 0;
    while (pos + 3 <= v.file.len) {
        const uint8_t *p = (const uint8_t *)v.file.data + pos;
        size_t len = (size_t)p[1] | (size_t)p[2] << 8;
        if (p[0] < 0x7f && nrec < 24) {
            char name[64];
            snprintf(name, sizeof name, "agent-%02zu", nrec++);
            write_seed("wire", name, p + 3, len);
        }
        pos += 3 + len;
    }
    conv_end(&v, "quickstart-all-succeed");

    {
        Kfleet__Ack ack = KFLEET__ACK__INIT;
        uint64_t seqs[3] = {1, 2, 0xffffffffffffffffull};
        ack.n_oseq = 3;
        ack.oseq = seqs;
        Kfleet__Envelope e = KFLEET__ENVELOPE__INIT;
        e.body_case = KFLEET__ENVELOPE__BODY_ACK;
        e.ack = &ack;
        seed_env("ack", &e);
        Kfleet__Cancel cn = KFLEET__CANCEL__INIT;
        cn.task_id = 1ull << 32;
        cn.attempt = 1;
        e.body_case = KFLEET__ENVELOPE__BODY_CANCEL;
        e.cancel = &cn;
        seed_env("cancel", &e);
        e.body_case = KFLEET__ENVELOPE__BODY__NOT_SET;
        seed_env("bad-no-body", &e);
        kf_buf b = KF_BUF_INIT;
        e.body_case = KFLEET__ENVELOPE__BODY_CANCEL;
        e.version = 2;
        size_t n = kfleet__envelope__get_packed_size(&e);
        kf_buf_grow(&b, n);
        kfleet__envelope__pack(&e, (uint8_t *)b.data);
        write_seed("wire", "bad-version", b.data, n);
        write_seed("wire", "bad-truncated", b.data, n - 1);
        kf_buf_release(&b);
        static const uint8_t junk[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
        write_seed("wire", "bad-junk", junk, sizeof junk);
    }

    /* ---- fuzz_sched: more conversations ---- */
    conv_begin(&v);
    do_register(&v, 0, 0, 1);
    submit(&v, sub_fail);
    serve(&v, 0, RUN_FAIL, 16);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_PROGRESS, 1);
    conv_end(&v, "failures-all-fail");

    conv_begin(&v);
    do_register(&v, 0, 1, 1);
    do_register(&v, 1, 1, 1);
    sub_small->sweep->nodes_all = 1;
    submit(&v, sub_small);
    sub_small->sweep->nodes_all = 0;
    serve(&v, 0, RUN_OK, 3);
    serve(&v, 1, RUN_DUP, 3);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_STATUS, 0);
    conv_end(&v, "nodes-all-two-agents-dup");

    conv_begin(&v);
    do_register(&v, 0, 1, 2);
    submit(&v, sub_small);
    serve(&v, 0, RUN_OK, 1);
    tick(&v); /* a0 lost: its attempts go back to pending */
    do_register(&v, 2, 1, 2);
    serve(&v, 2, RUN_OK, 8);
    serve(&v, 0, RUN_OK, 2); /* late results from the lost agent */
    conv_end(&v, "agent-lost-requeue");

    conv_begin(&v);
    do_register(&v, 0, 2, 4);
    submit(&v, sub_quick);
    serve(&v, 0, RUN_OK, 2);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_CANCEL, 1);
    serve(&v, 0, RUN_OK, 2);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_PROGRESS, 1);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_SHUTDOWN, 0);
    conv_end(&v, "cancel-midway");

    conv_begin(&v);
    submit(&v, sub_small);
    do_register(&v, 3, 0, 1);
    serve(&v, 3, RUN_OK, 16);
    ask(&v, KFLEET__CONTROL_REQUEST__BODY_STATUS, 0);
    conv_end(&v, "submit-before-register");

    kf_client_free_submit(&sub_quick);
    kf_client_free_submit(&sub_fail);
    kf_client_free_submit(&sub_small);
    return 0;
}
