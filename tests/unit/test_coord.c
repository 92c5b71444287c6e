/* coord: the Curve gate of the agent socket, driven by raw ZeroMQ clients
 * against a real coordinator (its loop in a thread, a real LMDB store).
 * A plaintext client, a CURVE client whose key is not accepted, and an
 * accepted one each send a valid Register; only the accepted one is
 * welcomed, and only it reaches the store. */
#include "cli/client.h"
#include "daemon/coord.h"
#include "common/paths.h"
#include "core/sweep.h"
#include "common/keys.h"
#include "core/store.h"
#include "common/util.h"
#include "common/wire.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

struct fixture {
    char dir[64], store[128], key[128], pub[128], allow[128], control[160];
    kf_coord *c;
    double hb_timeout_s; /* 0: 2 s */
    volatile sig_atomic_t stop;
    pthread_t th;
    int rc;
};

static void *loop(void *arg)
{
    struct fixture *f = arg;
    kf_err err;
    f->rc = kf_coord_run(f->c, &f->stop, &err);
    return NULL;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/kf-test-coord.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->store, sizeof f->store, "%s/store", f->dir);
    snprintf(f->key, sizeof f->key, "%s/coordinator.key", f->dir);
    snprintf(f->pub, sizeof f->pub, "%s/coordinator.pub", f->dir);
    snprintf(f->allow, sizeof f->allow, "%s/agents.allow", f->dir);
    snprintf(f->control, sizeof f->control, "ipc://%s/control.sock", f->dir);
    kf_err err;
    assert_int_equal(kf_mkdirs(f->store, 0700, &err), KF_OK);
    *state = f;
    return 0;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    nftw(f->dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static void start(struct fixture *f)
{
    kf_coord_config cfg = {0};
    cfg.store_dir = f->store;
    cfg.agent_bind = "tcp://127.0.0.1:*";
    cfg.control_endpoint = f->control;
    cfg.key_file = f->key;
    cfg.pub_file = f->pub;
    cfg.allow_file = f->allow;
    cfg.heartbeat_interval_s = 0.2;
    cfg.heartbeat_timeout_s = f->hb_timeout_s > 0 ? f->hb_timeout_s : 2;
    kf_err err;
    int rc = kf_coord_new(&cfg, &f->c, &err);
    if (rc)
        fail_msg("kf_coord_new: %s", err.msg);
    assert_int_equal(pthread_create(&f->th, NULL, loop, f), 0);
}

static void stop(struct fixture *f)
{
    f->stop = 1;
    pthread_join(f->th, NULL);
    assert_int_equal(f->rc, KF_OK);
}

/* A DEALER (named id when id is not NULL); with client keys (kp) it speaks CURVE to server_pub. */
static void *client(void *ctx, const char *id, const kf_keypair *kp, const char *server_pub,
                    const char *endpoint)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    if (id) /* agents set none; a client that does picks its connection's name */
        zmq_setsockopt(s, ZMQ_ROUTING_ID, id, strlen(id));
    if (kp) {
        zmq_setsockopt(s, ZMQ_CURVE_SERVERKEY, server_pub, KF_KEY_Z85 + 1);
        zmq_setsockopt(s, ZMQ_CURVE_PUBLICKEY, kp->pub, KF_KEY_Z85 + 1);
        zmq_setsockopt(s, ZMQ_CURVE_SECRETKEY, kp->sec, KF_KEY_Z85 + 1);
    }
    assert_int_equal(zmq_connect(s, endpoint), 0);
    return s;
}

static void send_register(void *s, const char *id)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Register reg = KFLEET__REGISTER__INIT;
    Kfleet__AgentInfo info = KFLEET__AGENT_INFO__INIT;
    info.agent_id = (char *)id;
    info.hostname = (char *)"test";
    info.cpu_slots = 1;
    reg.info = &info;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &reg;
    kf_peer p = {NULL, 0, NULL};
    assert_int_equal(kf_wire_send(s, &p, &env, ZMQ_DONTWAIT), KF_OK);
}

/* Whether s receives a Welcome within ms. */
static int welcomed(void *s, int ms)
{
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, ms) <= 0)
        return 0;
    char buf[4096];
    int n = zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT);
    if (n <= 0)
        return 0;
    Kfleet__Envelope *env = kf_wire_unpack(buf, (size_t)n, NULL);
    int ok = env && env->body_case == KFLEET__ENVELOPE__BODY_WELCOME;
    if (env)
        kfleet__envelope__free_unpacked(env, NULL);
    return ok;
}

static int count_agent(void *ctx, const Kfleet__AgentInfo *a)
{
    char *names = ctx;
    strncat(names, a->agent_id, 200 - strlen(names) - 2);
    strcat(names, " ");
    return 0;
}

static void test_only_accepted_keys_get_in(void **state)
{
    struct fixture *f = *state;
    kf_err err;
    kf_keypair good, stranger;
    char p1[160], p2[160];
    snprintf(p1, sizeof p1, "%s/good.key", f->dir);
    snprintf(p2, sizeof p2, "%s/stranger.key", f->dir);
    assert_int_equal(kf_keys_load(p1, 1, &good, &err), KF_OK);
    assert_int_equal(kf_keys_load(p2, 1, &stranger, &err), KF_OK);
    assert_int_equal(kf_allow_add(f->allow, good.pub, "good", &err), KF_OK);
    start(f);
    char server[KF_KEY_Z85 + 1];
    assert_int_equal(kf_keys_read_public(f->pub, server, &err), KF_OK);
    const char *ep = kf_coord_agent_endpoint(f->c);

    void *ctx = zmq_ctx_new();
    void *plain = client(ctx, "plain", NULL, NULL, ep);
    void *bad = client(ctx, "stranger", &stranger, server, ep);
    void *ok = client(ctx, "good", &good, server, ep);
    send_register(plain, "plain");
    send_register(bad, "stranger");
    send_register(ok, "good");
    assert_true(welcomed(ok, 3000));
    assert_false(welcomed(bad, 300));
    assert_false(welcomed(plain, 300));

    /* A frame that does not decode: counted, and the authenticated peer is
     * told why. */
    assert_int_equal(zmq_send(ok, "\xff\xff garbage", 10, 0), 10);
    zmq_pollitem_t it = {ok, 0, ZMQ_POLLIN, 0};
    assert_int_equal(zmq_poll(&it, 1, 3000), 1);
    char buf[4096];
    int n = zmq_recv(ok, buf, sizeof buf, 0);
    assert_true(n > 0);
    Kfleet__Envelope *rej = kf_wire_unpack(buf, (size_t)n, NULL);
    assert_non_null(rej);
    assert_int_equal(rej->body_case, KFLEET__ENVELOPE__BODY_REJECT);
    assert_int_equal(rej->reject->frame_bytes, 10);
    assert_non_null(strstr(rej->reject->reason, "does not decode"));
    kfleet__envelope__free_unpacked(rej, NULL);

    /* Above ZMQ_MAXMSGSIZE: ZeroMQ drops the frame (and the connection)
     * before anything parses it; the coordinator serves on. */
    size_t big = (size_t)KF_MAX_FRAME + 1024;
    char *huge = calloc(1, big);
    assert_non_null(huge);
    void *hog = client(ctx, "hog", &good, server, ep);
    assert_int_equal(zmq_send(hog, huge, big, 0), (int)big);
    free(huge);
    /* Had it been parsed, a Reject would come back ("does not decode"). */
    zmq_pollitem_t hit = {hog, 0, ZMQ_POLLIN, 0};
    assert_int_equal(zmq_poll(&hit, 1, 700), 0);
    zmq_close(hog);
    send_register(ok, "good");
    assert_true(welcomed(ok, 3000));

    /* Revoked: the next frames of the open connection are dropped. */
    size_t removed = 0;
    assert_int_equal(kf_allow_remove(f->allow, "good", &removed, &err), KF_OK);
    assert_int_equal(removed, 1);
    usleep(400000); /* one periodic check (200 ms) re-reads the list */
    send_register(ok, "good");
    assert_false(welcomed(ok, 500));

    zmq_close(plain);
    zmq_close(bad);
    zmq_close(ok);
    zmq_ctx_term(ctx);
    stop(f);
    kf_coord_destroy(&f->c);

    kf_store *s = NULL;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_open(f->store, 1, &s, &err), KF_OK);
    assert_int_equal(kf_store_begin(s, 1, &t, &err), KF_OK);
    char names[200] = "";
    assert_int_equal(kf_store_foreach_agent(t, count_agent, names), KF_OK);
    kf_store_abort(&t);
    kf_store_close(&s);
    assert_string_equal(names, "good ");
}

static void test_missing_key_paths_refused(void **state)
{
    struct fixture *f = *state;
    kf_coord_config cfg = {0};
    cfg.store_dir = f->store;
    cfg.agent_bind = "tcp://127.0.0.1:*";
    cfg.control_endpoint = f->control;
    kf_err err;
    kf_coord *c = NULL;
    assert_int_equal(kf_coord_new(&cfg, &c, &err), KF_EINVAL);
    assert_null(c);
}

static void test_world_readable_key_refused(void **state)
{
    struct fixture *f = *state;
    kf_err err;
    kf_keypair kp;
    assert_int_equal(kf_keys_load(f->key, 1, &kp, &err), KF_OK);
    assert_int_equal(chmod(f->key, 0644), 0);
    kf_coord_config cfg = {0};
    cfg.store_dir = f->store;
    cfg.agent_bind = "tcp://127.0.0.1:*";
    cfg.control_endpoint = f->control;
    cfg.key_file = f->key;
    cfg.pub_file = f->pub;
    cfg.allow_file = f->allow;
    kf_coord *c = NULL;
    assert_int_equal(kf_coord_new(&cfg, &c, &err), KF_EINVAL);
    assert_non_null(strstr(err.msg, "readable by others"));
}

/* The next envelope on s within ms, or NULL. */
static Kfleet__Envelope *next_env(void *s, int ms)
{
    zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, ms) <= 0)
        return NULL;
    char buf[1 << 16];
    int n = zmq_recv(s, buf, sizeof buf, ZMQ_DONTWAIT);
    return n > 0 && (size_t)n <= sizeof buf ? kf_wire_unpack(buf, (size_t)n, NULL) : NULL;
}

/* The next TaskAssign within ms (other messages skipped), or NULL. */
static Kfleet__Envelope *next_assign(void *s, int ms)
{
    uint64_t end = kf_mono_ns() + (uint64_t)ms * 1000000ull;
    while (kf_mono_ns() < end) {
        Kfleet__Envelope *e = next_env(s, 100);
        if (e && e->body_case == KFLEET__ENVELOPE__BODY_ASSIGN)
            return e;
        if (e)
            kfleet__envelope__free_unpacked(e, NULL);
    }
    return NULL;
}

static void send_progress_and_result(void *s, const Kfleet__TaskAssign *as, uint64_t oseq)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Progress pr = KFLEET__PROGRESS__INIT;
    pr.task_id = as->task_id;
    pr.attempt = as->attempt;
    pr.state = KFLEET__TASK_STATE__RUNNING;
    env.body_case = KFLEET__ENVELOPE__BODY_PROGRESS;
    env.progress = &pr;
    kf_peer p = {NULL, 0, NULL};
    assert_int_equal(kf_wire_send(s, &p, &env, 0), KF_OK);
    Kfleet__Envelope renv = KFLEET__ENVELOPE__INIT;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = as->task_id;
    r.attempt = as->attempt;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    renv.oseq = oseq;
    renv.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    renv.result = &r;
    assert_int_equal(kf_wire_send(s, &p, &renv, 0), KF_OK);
}

/* While an agent's GPU runs a task of kernel A, the build of kernel B
 * (whose tasks come next) is assigned to its free CPU slot, so the GPU does
 * not wait for nvcc when it reaches B. */
static void test_builds_overlap_gpu_work(void **state)
{
    struct fixture *f = *state;
    kf_err err;
    kf_keypair kp;
    char kpath[160], sweep[160];
    snprintf(kpath, sizeof kpath, "%s/gpu.key", f->dir);
    assert_int_equal(kf_keys_load(kpath, 1, &kp, &err), KF_OK);
    assert_int_equal(kf_allow_add(f->allow, kp.pub, "gpu1", &err), KF_OK);
    snprintf(sweep, sizeof sweep, "%s/two.yaml", f->dir);
    FILE *y = fopen(sweep, "w");
    assert_non_null(y);
    fprintf(y,
            "name: two\nkernels:\n  - path: %s/kernels/cuda/copy.cu\n    params: {bytes: [1M]}\n"
            "  - path: %s/kernels/cuda/voxelize.cu\n    params: {points: [1M], grid: [128]}\n"
            "tasks: [build, validate]\nnodes: any\n",
            KF_SOURCE_DIR, KF_SOURCE_DIR);
    fclose(y);
    start(f);
    char server[KF_KEY_Z85 + 1];
    assert_int_equal(kf_keys_read_public(f->pub, server, &err), KF_OK);
    void *ctx = zmq_ctx_new();
    void *s = client(ctx, "gpu1", &kp, server, kf_coord_agent_endpoint(f->c));
    {
        Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
        Kfleet__Register reg = KFLEET__REGISTER__INIT;
        Kfleet__AgentInfo info = KFLEET__AGENT_INFO__INIT;
        info.agent_id = "gpu1";
        info.hostname = "test";
        info.cpu_slots = 1;
        info.gpu_slots = 1;
        reg.info = &info;
        env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
        env.register_ = &reg;
        kf_peer p = {NULL, 0, NULL};
        assert_int_equal(kf_wire_send(s, &p, &env, 0), KF_OK);
        assert_true(welcomed(s, 3000));
    }

    kf_sweep_spec *spec = NULL;
    char kdir[256];
    snprintf(kdir, sizeof kdir, "%s/kernels", KF_SOURCE_DIR);
    if (kf_sweep_parse_file(sweep, kdir, &spec, &err) != KF_OK)
        fail_msg("%s", err.msg);
    Kfleet__SubmitRequest *sub = NULL;
    assert_int_equal(kf_client_build_submit(spec, kdir, &sub, &err), KF_OK);
    kf_paths paths;
    memset(&paths, 0, sizeof paths);
    snprintf(paths.control_endpoint, sizeof paths.control_endpoint, "%s", f->control);
    /* The client looks for a running coordinator by its lock, as kfleet serve holds it. */
    snprintf(paths.lock, sizeof paths.lock, "%s/coordinator.lock", f->dir);
    snprintf(paths.state, sizeof paths.state, "%s", f->dir);
    int lock = kf_lock_file(paths.lock, &err);
    assert_true(lock >= 0);
    kf_client *cl = NULL;
    assert_int_equal(kf_client_open(&paths, &cl, &err), KF_OK);
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
    req.submit = sub;
    Kfleet__ControlReply *rep = NULL;
    assert_int_equal(kf_client_call(cl, &req, 5000, &rep, &err), KF_OK);
    assert_int_equal(rep->code, 0);
    kfleet__control_reply__free_unpacked(rep, NULL);

    /* First the build of copy (nothing is built yet). */
    Kfleet__Envelope *a1 = next_assign(s, 3000);
    assert_non_null(a1);
    assert_int_equal(a1->assign->spec->kind, KFLEET__TASK_KIND__BUILD);
    send_progress_and_result(s, a1->assign, 1);
    /* Then copy's validate on the GPU and, at once, voxelize's build on the
     * CPU slot, while the validate is still running. */
    Kfleet__Envelope *a2 = next_assign(s, 3000), *a3 = next_assign(s, 3000);
    assert_non_null(a2);
    assert_non_null(a3);
    int kinds = (1 << a2->assign->spec->kind) | (1 << a3->assign->spec->kind);
    assert_int_equal(kinds, (1 << KFLEET__TASK_KIND__VALIDATE) | (1 << KFLEET__TASK_KIND__BUILD));
    assert_int_not_equal(a1->assign->task_id, a3->assign->task_id);
    kfleet__envelope__free_unpacked(a1, NULL);
    kfleet__envelope__free_unpacked(a2, NULL);
    kfleet__envelope__free_unpacked(a3, NULL);

    kf_client_close(&cl);
    close(lock);
    kf_client_free_submit(&sub);
    kf_sweep_destroy(&spec);
    zmq_close(s);
    zmq_ctx_term(ctx);
    stop(f);
    kf_coord_destroy(&f->c);
}

/* ---- identity and the right to write ---- */

static void register_as(void *s, const char *id, const char *host, uint32_t pid)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Register reg = KFLEET__REGISTER__INIT;
    Kfleet__AgentInfo info = KFLEET__AGENT_INFO__INIT;
    info.agent_id = (char *)id;
    info.hostname = (char *)host;
    info.pid = pid;
    info.cpu_slots = 1;
    /* A key field sent by an agent is never believed. */
    info.key = (char *)"forged-key-field";
    reg.info = &info;
    env.body_case = KFLEET__ENVELOPE__BODY_REGISTER;
    env.register_ = &reg;
    kf_peer p = {NULL, 0, NULL};
    assert_int_equal(kf_wire_send(s, &p, &env, 0), KF_OK);
}

static void send_result(void *s, uint64_t task, uint32_t attempt, uint64_t oseq)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__Result r = KFLEET__RESULT__INIT;
    r.task_id = task;
    r.attempt = attempt;
    r.state = KFLEET__TASK_STATE__SUCCEEDED;
    r.finished_ns = kf_now_ns();
    env.oseq = oseq;
    env.body_case = KFLEET__ENVELOPE__BODY_RESULT;
    env.result = &r;
    kf_peer p = {NULL, 0, NULL};
    assert_int_equal(kf_wire_send(s, &p, &env, 0), KF_OK);
}

static void send_samples(void *s, uint64_t task, uint32_t attempt, uint32_t n, uint64_t oseq)
{
    Kfleet__Envelope env = KFLEET__ENVELOPE__INIT;
    Kfleet__SampleBatch sb = KFLEET__SAMPLE_BATCH__INIT;
    Kfleet__Sample smp[64], *ptr[64];
    assert_true(n <= 64);
    for (uint32_t i = 0; i < n; i++) {
        kfleet__sample__init(&smp[i]);
        smp[i].seq = i;
        smp[i].seconds = 1e-6; /* a forged, impossibly fast time */
        ptr[i] = &smp[i];
    }
    sb.task_id = task;
    sb.attempt = attempt;
    sb.n_samples = n;
    sb.samples = ptr;
    env.oseq = oseq;
    env.body_case = KFLEET__ENVELOPE__BODY_SAMPLES;
    env.samples = &sb;
    kf_peer p = {NULL, 0, NULL};
    assert_int_equal(kf_wire_send(s, &p, &env, 0), KF_OK);
}

/* What a raw client heard within ms: whether an Ack named oseq, how many
 * TaskAssigns and Welcomes came, and the last Reject (caller frees). */
struct heard {
    int acked, assigns, welcomes;
    Kfleet__Envelope *reject;
};

static void listen_for(void *s, uint64_t oseq, int ms, struct heard *h)
{
    uint64_t end = kf_mono_ns() + (uint64_t)ms * 1000000ull;
    while (kf_mono_ns() < end && !(oseq && h->acked) && !(!oseq && h->reject)) {
        Kfleet__Envelope *e = next_env(s, 50);
        if (!e)
            continue;
        if (e->body_case == KFLEET__ENVELOPE__BODY_ACK)
            for (size_t i = 0; i < e->ack->n_oseq; i++)
                h->acked |= e->ack->oseq[i] == oseq;
        h->assigns += e->body_case == KFLEET__ENVELOPE__BODY_ASSIGN;
        h->welcomes += e->body_case == KFLEET__ENVELOPE__BODY_WELCOME;
        if (e->body_case == KFLEET__ENVELOPE__BODY_REJECT) {
            if (h->reject)
                kfleet__envelope__free_unpacked(h->reject, NULL);
            h->reject = e;
            continue;
        }
        kfleet__envelope__free_unpacked(e, NULL);
    }
}

/* Submits yaml_path; the coordinator's reply code is want, and when it
 * refuses, its message contains why. */
static void submit_file_expect(struct fixture *f, const char *yaml_path, int want, const char *why)
{
    kf_err err;
    kf_sweep_spec *spec = NULL;
    char kdir[256];
    snprintf(kdir, sizeof kdir, "%s/kernels", KF_SOURCE_DIR);
    if (kf_sweep_parse_file(yaml_path, kdir, &spec, &err) != KF_OK)
        fail_msg("%s", err.msg);
    Kfleet__SubmitRequest *sub = NULL;
    assert_int_equal(kf_client_build_submit(spec, kdir, &sub, &err), KF_OK);
    kf_paths paths;
    memset(&paths, 0, sizeof paths);
    snprintf(paths.control_endpoint, sizeof paths.control_endpoint, "%s", f->control);
    snprintf(paths.lock, sizeof paths.lock, "%s/coordinator.lock", f->dir);
    snprintf(paths.state, sizeof paths.state, "%s", f->dir);
    int lock = kf_lock_file(paths.lock, &err);
    assert_true(lock >= 0);
    kf_client *cl = NULL;
    assert_int_equal(kf_client_open(&paths, &cl, &err), KF_OK);
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_SUBMIT;
    req.submit = sub;
    Kfleet__ControlReply *rep = NULL;
    kf_err_clear(&err);
    assert_int_equal(kf_client_call(cl, &req, 5000, &rep, &err), want);
    if (want == KF_OK) {
        assert_int_equal(rep->code, 0);
        kfleet__control_reply__free_unpacked(rep, NULL);
    } else if (why && !strstr(err.msg, why)) {
        fail_msg("refused with '%s', not '%s'", err.msg, why);
    }
    kf_client_close(&cl);
    close(lock);
    kf_client_free_submit(&sub);
    kf_sweep_destroy(&spec);
}

static void submit_file(struct fixture *f, const char *yaml_path)
{
    submit_file_expect(f, yaml_path, KF_OK, NULL);
}

/* A problem sweep reaches the coordinator as its candidates and the
 * problem (kf_client_build_submit); until reference tasks and the
 * runner's candidate path exist, the coordinator refuses it rather than
 * run candidates as kernels that judge themselves. */
static int count_late(void *ctx, const Kfleet__Result *r)
{
    (void)r;
    (*(int *)ctx)++;
    return 0;
}

/* An allowed key posing as another agent, and writing into attempts it
 * never held and into a finished sweep: the agent id is bound to the key
 * it registered with, the impostor is refused and hears no TaskAssign, and
 * nothing it sends reaches the store — while it is acked, so it learns
 * nothing from the answer. */
static void test_impostor_and_foreign_frames_refused(void **state)
{
    struct fixture *f = *state;
    /* The raw clients send no heartbeats: none may be lost meanwhile. */
    f->hb_timeout_s = 60;
    kf_err err;
    kf_keypair k1, k2;
    char p1[160], p2[160], sweep[160];
    snprintf(p1, sizeof p1, "%s/v1.key", f->dir);
    snprintf(p2, sizeof p2, "%s/evil.key", f->dir);
    assert_int_equal(kf_keys_load(p1, 1, &k1, &err), KF_OK);
    assert_int_equal(kf_keys_load(p2, 1, &k2, &err), KF_OK);
    assert_int_equal(kf_allow_add(f->allow, k1.pub, "v1", &err), KF_OK);
    assert_int_equal(kf_allow_add(f->allow, k2.pub, "evil", &err), KF_OK);
    snprintf(sweep, sizeof sweep, "%s/triad.yaml", f->dir);
    FILE *y = fopen(sweep, "w");
    assert_non_null(y);
    fprintf(y,
            "name: triad\nkernels:\n  - path: %s/kernels/host/triad.c\n    params: {n: [1024]}\n"
            "tasks: [validate]\nnodes: any\n",
            KF_SOURCE_DIR);
    fclose(y);
    start(f);
    char server[KF_KEY_Z85 + 1];
    assert_int_equal(kf_keys_read_public(f->pub, server, &err), KF_OK);
    const char *ep = kf_coord_agent_endpoint(f->c);
    void *ctx = zmq_ctx_new();

    /* Named connections, as agents before this check had: the old rules
     * would have let every attack below through. */
    void *v1 = client(ctx, "v1", &k1, server, ep);
    register_as(v1, "v1", "goodhost", 100);
    assert_true(welcomed(v1, 3000));
    submit_file(f, sweep);
    Kfleet__Envelope *build = next_assign(v1, 3000);
    assert_non_null(build);
    assert_int_equal(build->assign->spec->kind, KFLEET__TASK_KIND__BUILD);
    send_result(v1, build->assign->task_id, build->assign->attempt, 1);
    Kfleet__Envelope *val = next_assign(v1, 3000);
    assert_non_null(val);
    uint64_t task = val->assign->task_id;
    uint32_t attempt = val->assign->attempt;

    /* Impostor 1 names its connection "v1" itself: it is not given that
     * name's traffic (no handover), so it hears nothing at all. */
    void *named = client(ctx, "v1", &k2, server, ep);
    register_as(named, "v1", "evilhost", 666);
    struct heard hn = {0};
    listen_for(named, 0, 600, &hn);
    assert_int_equal(hn.assigns, 0);
    assert_int_equal(hn.welcomes, 0);

    /* Impostor 2, on its own connection, asks for v1's id with its own
     * allowed key: refused for good, naming the conflict. */
    void *evil = client(ctx, "evil", &k2, server, ep);
    register_as(evil, "v1", "evilhost", 667);
    struct heard he = {0};
    listen_for(evil, 0, 1500, &he);
    assert_non_null(he.reject);
    assert_int_equal(he.reject->reject->kind, KFLEET__REJECT_KIND__REJECT_IDENTITY);
    assert_non_null(strstr(he.reject->reject->reason, "bound to another key"));
    assert_non_null(strstr(he.reject->reject->reason, k1.pub));
    kfleet__envelope__free_unpacked(he.reject, NULL);
    assert_int_equal(he.assigns, 0);

    /* Registered under its own name, it writes v1's running attempt, an
     * attempt that was never made, and a result for attempt 9. */
    register_as(evil, "evil", "evilhost", 667);
    assert_true(welcomed(evil, 3000));
    send_samples(evil, task, attempt, 50, 101);
    send_samples(evil, task, 5, 50, 102);
    send_result(evil, task, 9, 103);
    send_result(evil, task, attempt, 104);
    struct heard ha = {0};
    listen_for(evil, 104, 3000, &ha);
    assert_true(ha.acked);

    /* v1 is untouched: it finishes its attempt with its own 3 samples. */
    send_samples(v1, task, attempt, 3, 2);
    send_result(v1, task, attempt, 3);
    struct heard hv = {0};
    listen_for(v1, 3, 3000, &hv);
    assert_true(hv.acked);

    /* The sweep is finished now: nothing more goes into it, from anyone. */
    send_samples(evil, task, 1, 50, 105);
    send_result(evil, task, 1, 106);
    send_samples(v1, task, attempt, 10, 4);
    struct heard hf = {0};
    listen_for(evil, 106, 3000, &hf);
    assert_true(hf.acked);
    struct heard hf1 = {0};
    listen_for(v1, 4, 3000, &hf1);
    assert_true(hf1.acked);

    kfleet__envelope__free_unpacked(build, NULL);
    kfleet__envelope__free_unpacked(val, NULL);
    zmq_close(v1);
    zmq_close(named);
    zmq_close(evil);
    zmq_ctx_term(ctx);
    stop(f);
    kf_coord_destroy(&f->c);

    kf_store *st = NULL;
    kf_txn *t = NULL;
    assert_int_equal(kf_store_open(f->store, 1, &st, &err), KF_OK);
    assert_int_equal(kf_store_begin(st, 1, &t, &err), KF_OK);
    Kfleet__Result *r = NULL;
    assert_int_equal(kf_store_get_result(t, task, &r), KF_OK);
    assert_string_equal(r->agent_id, "v1");
    assert_int_equal(r->attempt, attempt);
    kfleet__result__free_unpacked(r, NULL);
    uint32_t n = 0;
    assert_int_equal(kf_store_count_samples(t, task, attempt, &n), KF_OK);
    assert_int_equal(n, 3);
    assert_int_equal(kf_store_count_samples(t, task, 5, &n), KF_OK);
    assert_int_equal(n, 0);
    int late = 0;
    assert_int_equal(kf_store_foreach_late(t, task, count_late, &late), KF_OK);
    assert_int_equal(late, 0);
    Kfleet__AgentInfo *ai = NULL;
    assert_int_equal(kf_store_get_agent(t, "v1", &ai), KF_OK);
    assert_string_equal(ai->key, k1.pub);
    assert_string_equal(ai->hostname, "goodhost");
    kfleet__agent_info__free_unpacked(ai, NULL);
    kf_store_abort(&t);
    kf_store_close(&st);
}

/* A second process with the same id and key (the same work dir copied, or
 * a restart before the first is lost) waits; once its key is revoked, the
 * id may be taken by another key. */
static void test_one_process_per_id_and_rebind_after_revoke(void **state)
{
    struct fixture *f = *state;
    f->hb_timeout_s = 60;
    kf_err err;
    kf_keypair k1, k2;
    char p1[160], p2[160];
    snprintf(p1, sizeof p1, "%s/a.key", f->dir);
    snprintf(p2, sizeof p2, "%s/b.key", f->dir);
    assert_int_equal(kf_keys_load(p1, 1, &k1, &err), KF_OK);
    assert_int_equal(kf_keys_load(p2, 1, &k2, &err), KF_OK);
    assert_int_equal(kf_allow_add(f->allow, k1.pub, "vm-0", &err), KF_OK);
    assert_int_equal(kf_allow_add(f->allow, k2.pub, "vm-0b", &err), KF_OK);
    start(f);
    char server[KF_KEY_Z85 + 1];
    assert_int_equal(kf_keys_read_public(f->pub, server, &err), KF_OK);
    const char *ep = kf_coord_agent_endpoint(f->c);
    void *ctx = zmq_ctx_new();
    void *first = client(ctx, NULL, &k1, server, ep);
    register_as(first, "vm-0", "host", 10);
    assert_true(welcomed(first, 3000));

    void *second = client(ctx, NULL, &k1, server, ep);
    register_as(second, "vm-0", "host", 11);
    struct heard h = {0};
    listen_for(second, 0, 1500, &h);
    assert_non_null(h.reject);
    assert_int_equal(h.reject->reject->kind, KFLEET__REJECT_KIND__REJECT_NAME_IN_USE);
    assert_non_null(strstr(h.reject->reject->reason, "already connected"));
    kfleet__envelope__free_unpacked(h.reject, NULL);
    assert_int_equal(h.welcomes, 0);

    /* The same process reconnecting (same host and pid) takes its id back. */
    void *again = client(ctx, NULL, &k1, server, ep);
    register_as(again, "vm-0", "host", 10);
    assert_true(welcomed(again, 3000));

    /* Another key for vm-0: refused while vm-0's key is allowed... */
    void *other = client(ctx, NULL, &k2, server, ep);
    register_as(other, "vm-0", "host2", 12);
    struct heard ho = {0};
    listen_for(other, 0, 1500, &ho);
    assert_non_null(ho.reject);
    assert_int_equal(ho.reject->reject->kind, KFLEET__REJECT_KIND__REJECT_IDENTITY);
    kfleet__envelope__free_unpacked(ho.reject, NULL);
    /* ...and accepted once it was revoked. */
    size_t removed = 0;
    assert_int_equal(kf_allow_remove(f->allow, "vm-0", &removed, &err), KF_OK);
    assert_int_equal(removed, 1);
    usleep(400000); /* one periodic check re-reads the list */
    register_as(other, "vm-0", "host2", 12);
    assert_true(welcomed(other, 3000));

    zmq_close(first);
    zmq_close(second);
    zmq_close(again);
    zmq_close(other);
    zmq_ctx_term(ctx);
    stop(f);
    kf_coord_destroy(&f->c);
}

/* A killed agent restarted at once: the new process (same id and key,
 * another pid) is refused while the old one could still be alive, and takes
 * the id once the old one has been silent for 3 heartbeat intervals (2 s at
 * least), long before the heartbeat timeout (60 s here). */
static void test_restarted_process_replaces_a_silent_one(void **state)
{
    struct fixture *f = *state;
    f->hb_timeout_s = 60;
    kf_err err;
    kf_keypair k1;
    char p1[160];
    snprintf(p1, sizeof p1, "%s/a.key", f->dir);
    assert_int_equal(kf_keys_load(p1, 1, &k1, &err), KF_OK);
    assert_int_equal(kf_allow_add(f->allow, k1.pub, "vm-0", &err), KF_OK);
    start(f);
    char server[KF_KEY_Z85 + 1];
    assert_int_equal(kf_keys_read_public(f->pub, server, &err), KF_OK);
    const char *ep = kf_coord_agent_endpoint(f->c);
    void *ctx = zmq_ctx_new();
    void *old = client(ctx, NULL, &k1, server, ep);
    register_as(old, "vm-0", "host", 10);
    assert_true(welcomed(old, 3000));

    void *fresh = client(ctx, NULL, &k1, server, ep);
    register_as(fresh, "vm-0", "host", 11);
    struct heard h = {0};
    listen_for(fresh, 0, 500, &h);
    assert_non_null(h.reject);
    assert_int_equal(h.reject->reject->kind, KFLEET__REJECT_KIND__REJECT_NAME_IN_USE);
    kfleet__envelope__free_unpacked(h.reject, NULL);
    assert_int_equal(h.welcomes, 0);

    /* The old process sends nothing from here on (it was killed). */
    usleep(2200000);
    register_as(fresh, "vm-0", "host", 11);
    assert_true(welcomed(fresh, 3000));

    zmq_close(old);
    zmq_close(fresh);
    zmq_ctx_term(ctx);
    stop(f);
    kf_coord_destroy(&f->c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_only_accepted_keys_get_in, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_key_paths_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_world_readable_key_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builds_overlap_gpu_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_impostor_and_foreign_frames_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_process_per_id_and_rebind_after_revoke, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_restarted_process_replaces_a_silent_one, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
