/* sched_fixture — the coordinator with no sockets that test_sched and
 * test_sched_problem drive (as the fuzz targets do): agent frames through
 * kf_wire_dispatch into the real handler table, sweeps through
 * control_handle, the dispatcher as the loop runs it, and what the
 * coordinator would send read back from its queue. Static helpers for
 * one test executable each. */
#ifndef KF_TEST_SCHED_FIXTURE_H
#define KF_TEST_SCHED_FIXTURE_H

static char dir[64];

static inline int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* A coordinator with no sockets on the store in dir (as it is: a test
 * that reopens it restarts the coordinator). */
static inline kf_coord *coord_open(void)
{
    kf_coord *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->cfg.store_dir = dir;
    c->cfg.heartbeat_interval_s = 1.0;
    c->cfg.heartbeat_timeout_s = 10.0;
    c->cfg.assign_grace_s = 5.0;
    c->started_ns = kf_now_ns();
    kf_buf_init(&c->scratch);
    /* Agents on the coordinator's machine, as `kfleet run` has them:
     * trusted to build for each other (sched_share.c). */
    snprintf(c->agent_endpoint, sizeof c->agent_endpoint, "ipc://%s/agents.sock", dir);
    kf_err err;
    assert_int_equal(kf_store_open(dir, 0, &c->store, &err), KF_OK);
    return c;
}

/* A coordinator with a new store and no sockets. */
static inline kf_coord *coord(void)
{
    snprintf(dir, sizeof dir, "/tmp/kf-test-sched.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return coord_open();
}

/* A coordinator on the same store, its state loaded from it (a restart). */
static inline kf_coord *reopen(kf_coord *c)
{
    kf_coord_destroy(&c);
    c = coord_open();
    kf_err err;
    assert_int_equal(sched_load(c, &err), KF_OK);
    return c;
}

static inline void done(kf_coord **c)
{
    kf_coord_destroy(c);
    nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* One turn's end: dispatch as the loop does, then commit. */
static inline void turn(kf_coord *c)
{
    kf_err err;
    if (c->dispatch_needed) {
        c->dispatch_needed = 0;
        sched_dispatch(c);
    }
    if (c->txn)
        assert_int_equal(kf_store_commit(&c->txn, &err), KF_OK);
}

static inline void frame(kf_coord *c, const char *id, Kfleet__Envelope *env)
{
    kf_buf b = KF_BUF_INIT;
    kf_wire_pack(env, &b);
    char key[41];
    snprintf(key, sizeof key, "key-of-%-33s", id); /* one key per agent */
    kf_peer p = {id, strlen(id), key};
    kf_err err;
    assert_int_equal(kf_wire_dispatch(kf_sched_handlers, c, &p, b.data, b.len, &err), KF_OK);
    kf_buf_release(&b);
    turn(c);
}

static inline void reg_cc(kf_coord *c, const char *id, uint32_t cpu, uint32_t gpu, const char *cc)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Register r = KFLEET__REGISTER__INIT;
    Kfleet__AgentInfo info = KFLEET__AGENT_INFO__INIT;
    info.agent_id = (char *)id;
    info.hostname = (char *)id;
    info.pid = 1;
    info.cpu_slots = cpu;
    info.gpu_slots = gpu;
    info.cc_version = (char *)cc;
    r.info = &info;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &r;
    frame(c, id, &env);
}

/* An agent whose Python has numpy (Python kernels that need it run there). */
static inline void reg_numpy(kf_coord *c, const char *id, uint32_t cpu)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Register r = KFLEET__REGISTER__INIT;
    Kfleet__AgentInfo info = KFLEET__AGENT_INFO__INIT;
    Kfleet__PythonFacts py = KFLEET__PYTHON_FACTS__INIT;
    py.version = "3.11.2";
    py.executable = "/usr/bin/python3";
    py.numpy = "1.26.4";
    info.agent_id = (char *)id;
    info.hostname = (char *)id;
    info.pid = 1;
    info.cpu_slots = cpu;
    info.cc_version = "cc (Debian 12.2.0-14) 12.2.0";
    info.python = &py;
    r.info = &info;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &r;
    frame(c, id, &env);
}

static inline void reg(kf_coord *c, const char *id, uint32_t cpu, uint32_t gpu)
{
    reg_cc(c, id, cpu, gpu, "cc (Debian 12.2.0-14) 12.2.0");
}

static inline void result(kf_coord *c, const char *id, uint64_t task, uint32_t attempt, int state)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = task;
    r.attempt = attempt;
    r.state = (Kfleet__TaskState)state;
    r.error = state == KFLEET__TASK_STATE__SUCCEEDED ? "" : (char *)"compile failed: x.c:1: oops";
    r.finished_ns = kf_now_ns();
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &r;
    frame(c, id, &env);
}

/* Submits the sweep file at path; returns the newest sweep's id. */
/* Submits the sweep file at path, its request changed by edit first when
 * not NULL; returns the newest sweep's id, 0 when the coordinator added
 * none (it refused the request). */
static inline uint32_t submit_edited(kf_coord *c, const char *path,
                                     void (*edit)(Kfleet__SubmitRequest *))
{
    char kdir[256];
    snprintf(kdir, sizeof kdir, "%s/kernels", KF_SOURCE_DIR);
    kf_err err;
    kf_sweep_spec *spec = NULL;
    if (kf_sweep_parse_file(path, kdir, &spec, &err) != KF_OK)
        fail_msg("%s", err.msg);
    Kfleet__SubmitRequest *sub = NULL;
    assert_int_equal(kf_client_build_submit(spec, kdir, &sub, &err), KF_OK);
    if (edit)
        edit(sub);
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
    req.submit = sub;
    kf_buf b = KF_BUF_INIT;
    kf_ctl_pack_request(&req, &b);
    size_t before = c->nsweeps;
    control_handle(c, "cli", 3, b.data, b.len);
    kf_buf_release(&b);
    kf_client_free_submit(&sub);
    kf_sweep_destroy(&spec);
    c->dispatch_needed = 1;
    turn(c);
    return c->nsweeps > before ? c->sweeps[c->nsweeps - 1]->rec->sweep_id : 0;
}

/* Submits the sweep file at path; returns the newest sweep's id. */
static inline uint32_t submit_path(kf_coord *c, const char *path)
{
    uint32_t id = submit_edited(c, path, NULL);
    assert_int_not_equal(id, 0);
    return id;
}

/* Submits the sweep in yaml (host kernels of the source tree), whatever
 * else is open. */
static inline uint32_t submit_yaml(kf_coord *c, const char *yaml)
{
    char path[128];
    snprintf(path, sizeof path, "%s/sweep.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(yaml, f);
    fclose(f);
    return submit_path(c, path);
}

/* Submits the sweep in yaml, the only one open then. */
static inline uint32_t submit(kf_coord *c, const char *yaml)
{
    uint32_t id = submit_yaml(c, yaml);
    assert_int_equal(c->nsweeps, 1);
    return id;
}

/* The assignments queued since the last call (then dropped), by agent. */
typedef struct sent {
    char agent[16];
    uint64_t task;
    uint32_t attempt;
    int kind, cancel;
    int want_artifact;   /* a build asked to send its artifact back */
    size_t artifact_len; /* a build that brings another agent's artifact */
    char built_by[16];
    int own_build;          /* a build that must not take an installed artifact */
    char artifact_hash[65]; /* a validate's: the agent's build as recorded */
    size_t nseeds;          /* TaskSpec.seeds, the first 8 */
    size_t nrefs;           /* TaskSpec.references */
    char problem_hash[65];
    uint64_t seeds[8];
} sent;

static inline size_t drain(kf_coord *c, sent *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->nout; i++) {
        koutmsg *m = &c->out[i];
        if (!m->to_control) {
            kf_err err;
            Kfleet__Envelope *e = kf_wire_unpack(m->payload.data, m->payload.len, &err);
            assert_non_null(e);
            if (n < max && (e->body_case == KFLEET__ENVELOPE__BODY_ASSIGN ||
                            e->body_case == KFLEET__ENVELOPE__BODY_CANCEL)) {
                sent *s = &out[n++];
                memset(s, 0, sizeof *s);
                snprintf(s->agent, sizeof s->agent, "%.*s", (int)m->peer_len, m->peer);
                s->cancel = e->body_case == KFLEET__ENVELOPE__BODY_CANCEL;
                s->task = s->cancel ? e->cancel->task_id : e->assign->task_id;
                s->attempt = s->cancel ? e->cancel->attempt : e->assign->attempt;
                s->kind = s->cancel ? 0 : (int)e->assign->spec->kind;
                if (!s->cancel) {
                    const Kfleet__TaskSpec *sp = e->assign->spec;
                    s->want_artifact = sp->want_artifact;
                    s->artifact_len = sp->artifact.len;
                    snprintf(s->built_by, sizeof s->built_by, "%s",
                             sp->artifact_built_by ? sp->artifact_built_by : "");
                    s->own_build = sp->own_build;
                    snprintf(s->artifact_hash, sizeof s->artifact_hash, "%s",
                             sp->artifact_hash ? sp->artifact_hash : "");
                    s->nseeds = sp->n_seeds;
                    s->nrefs = sp->n_references;
                    snprintf(s->problem_hash, sizeof s->problem_hash, "%s",
                             sp->problem_hash ? sp->problem_hash : "");
                    for (size_t k = 0; k < sp->n_seeds && k < 8; k++)
                        s->seeds[k] = sp->seeds[k];
                }
            }
            kf_wire_free(e);
        }
        free(m->peer);
        kf_buf_release(&m->payload);
    }
    c->nout = 0;
    return n;
}

#endif
