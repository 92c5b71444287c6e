/* agent — the kfleet-agent daemon: its life cycle, its loop and the
 * handlers of what the coordinator sends; see agent.h. The coordinator link
 * (outbox, registration, heartbeats, the monitor) is link.c, the runner
 * processes runners.c (agent_int.h).
 *
 * State machine toward the coordinator: unregistered → (Register, every
 * second until a Welcome) → registered. A Welcome with `reregister` (the
 * coordinator restarted or thought us lost) sends us back to unregistered.
 * On every Welcome all unacked outbox entries are due for resending.
 */
#include "runner/cubins.h"
#include "runner/doctor.h"
#include "common/json.h"
#include "common/xalloc.h"
#include "agent/agent.h"
#include "common/buf.h"
#include "runner/harness.h"
#include "runner/pyenv.h"
#include "runner/build.h"
#include "runner/compat.h"
#include "runner/proc.h"
#include "common/inventory.h"
#include "common/log.h"
#include "runner/sandbox.h"
#include "agent/outbox.h"
#include "common/util.h"
#include "common/wire.h"
#include "agent/agent_int.h"
#include "agent/childenv.h"
#include "agent/refstore.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

/* ---- outbox bookkeeping ---- */

/* ---- messages to the coordinator ---- */

/* ---- runners ---- */

/* ---- handlers for coordinator messages ---- */

static int on_welcome(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    if (env->welcome->heartbeat_interval_ms)
        a->hb_interval_s = env->welcome->heartbeat_interval_ms / 1000.0;
    /* Whatever the coordinator had of us may be gone: resend everything. */
    for (size_t i = 0; i < a->npending; i++)
        a->pending[i].sent_mono = 0;
    if (env->welcome->reregister) {
        if (a->welcomed)
            kf_info("agent.reregister", "coordinator=%s", a->cfg.coordinator);
        a->welcomed = 0;
        if (kf_mono_ns() - a->last_register_mono > 200000000ull)
            link_send_register(a);
        return KF_OK;
    }
    if (!a->welcomed)
        kf_info("agent.registered", "coordinator=%s heartbeat_s=%.2f outbox=%zu",
                a->cfg.coordinator, a->hb_interval_s, a->npending);
    a->welcomed = 1;
    return KF_OK;
}

static int on_assign(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    const Kfleet__TaskAssign *ta = env->assign;
    if (!ta->spec)
        return KF_EPROTO;
    if (runners_find(a, ta->task_id, ta->attempt))
        return KF_OK; /* a repeated assignment */
    if (a->stopping)
        return KF_OK; /* unconfirmed: the coordinator requeues it */
    for (size_t i = 0; i < a->npending; i++)
        if (a->pending[i].is_result && a->pending[i].task_id == ta->task_id &&
            a->pending[i].attempt == ta->attempt)
            return KF_OK; /* already done, result on its way */
    if (!runners_room(a)) {
        runners_fail_assignment(a, ta, "agent has no free runner slot");
        return KF_OK;
    }
    kf_err err;
    if (runners_start(a, ta, &err) != KF_OK) {
        kf_error("runner.start", "task=0x%llx error=\"%s\"", (unsigned long long)ta->task_id,
                 err.msg);
        runners_fail_assignment(a, ta, err.msg);
        return KF_OK;
    }
    Kfleet__Progress p = KFLEET__PROGRESS__INIT;
    p.task_id = ta->task_id;
    p.attempt = ta->attempt;
    p.state = KFLEET__TASK_STATE__RUNNING;
    Kfleet__Envelope out = KFLEET__ENVELOPE__INIT;
    out.body_case = KFLEET__ENVELOPE__BODY_PROGRESS;
    out.progress = &p;
    link_send_direct(a, &out);
    return KF_OK;
}

static int on_ack(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    const Kfleet__Ack *ack = env->ack;
    kf_err err;
    if (kf_outbox_ack(a->outbox, ack->oseq, ack->n_oseq, &err) != KF_OK)
        kf_error("outbox.ack", "error=\"%s\"", err.msg);
    for (size_t i = 0; i < ack->n_oseq; i++) {
        for (size_t k = 0; k < a->npending; k++) {
            if (a->pending[k].oseq == ack->oseq[i]) {
                a->pending[k] = a->pending[--a->npending];
                break;
            }
        }
    }
    return KF_OK;
}

static int on_cancel(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    kf_agent *a = ctx;
    (void)peer;
    krunner *r = runners_find(a, env->cancel->task_id, env->cancel->attempt);
    if (r && !r->exited && !r->cancelled && !r->idle) {
        kf_info("runner.cancel", "task=0x%llx attempt=%u", (unsigned long long)r->task_id,
                r->attempt);
        r->cancelled = 1;
        kill(-r->pid, SIGKILL);
    }
    return KF_OK;
}

static int on_reject(void *ctx, const kf_peer *peer, const Kfleet__Envelope *env)
{
    (void)peer;
    kf_agent *a = ctx;
    const Kfleet__Reject *r = env->reject;
    const char *reason = r && r->reason ? r->reason : "";
    if (r && r->kind == KFLEET__REJECT_KIND__REJECT_IDENTITY) {
        /* Our id is bound to another key: nothing we send will be taken. */
        snprintf(a->refused, sizeof a->refused, "%s", reason);
        return KF_OK;
    }
    if (r && r->kind == KFLEET__REJECT_KIND__REJECT_NAME_IN_USE) {
        /* Another process holds our id; Register is retried each second
         * until that one is lost. Said once, not every second. */
        if (strcmp(a->last_reject, reason) != 0)
            kf_warn("agent.name_in_use", "coordinator=%s reason=\"%s\"", a->cfg.coordinator,
                    reason);
        snprintf(a->last_reject, sizeof a->last_reject, "%s", reason);
        return KF_OK;
    }
    kf_error("agent.rejected",
             "coordinator=%s reason=\"%s\" bytes=%u coordinator_protocol=%u agent_protocol=%d",
             a->cfg.coordinator, r && r->reason ? r->reason : "", r ? r->frame_bytes : 0,
             r ? r->coordinator_protocol : 0, KF_PROTOCOL_VERSION);
    return KF_OK;
}

static const kf_wire_handler agent_handlers[KF_WIRE_BODY_MAX] = {
    [KFLEET__ENVELOPE__BODY_WELCOME] = on_welcome, [KFLEET__ENVELOPE__BODY_ASSIGN] = on_assign,
    [KFLEET__ENVELOPE__BODY_ACK] = on_ack,         [KFLEET__ENVELOPE__BODY_CANCEL] = on_cancel,
    [KFLEET__ENVELOPE__BODY_REJECT] = on_reject,
};

/* ---- life cycle ---- */

/* The doctor's ceilings, once per start (registration), in a child so that
 * a broken driver cannot take the agent down. A failure is recorded in
 * the inventory and the agent still registers: reports then show no
 * percentage rather than a made-up one. The child measures while the
 * agent gathers Python's facts (ceilings_start, then ceilings_finish):
 * on a cold 4 x H200 node, one after the other took 8.1-9.0 s before the
 * agent registered, side by side 6.8-7.3 s. */
static void ceilings_start(kf_agent *a, kf_doctor_child *c, kf_doctor *d)
{
    char dev[128];
    kf_err err;
    childenv_visible_device(0, dev, sizeof dev);
    int gpu = a->info->n_gpus > 0;
    memset(d, 0, sizeof *d);
    char cubins[PATH_MAX];
    kf_cubins_path(cubins, sizeof cubins, a->workdir);
    if (kf_doctor_start_cubins(a->runner_exe, gpu, gpu ? dev : NULL, cubins, c, &err) != KF_OK)
        snprintf(d->error, sizeof d->error, "%s", err.msg); /* c->pid stays -1 */
}

static void ceilings_finish(kf_agent *a, kf_doctor_child *c, kf_doctor *d)
{
    kf_err err;
    if (c->pid >= 0)
        kf_doctor_finish(c, 120, d, &err);
    a->info->ceiling_copy_gbps = d->copy_gbps;
    a->info->ceiling_bf16_tflops = d->bf16_tflops;
    a->info->ceiling_host_copy_gbps = d->host_copy_gbps;
    a->info->ceiling_f32_tflops = d->f32_tflops;
    a->info->ceiling_tf32_tflops = d->tf32_tflops;
    a->info->ceiling_f64_tflops = d->f64_tflops;
    a->info->ceiling_host_gflops = d->host_gflops;
    snprintf(a->doctor_error, sizeof a->doctor_error, "%s", d->error);
    a->info->doctor_error = a->doctor_error;
    kf_info("agent.doctor",
            "copy_gbps=%.1f bf16_tflops=%.1f f32_tflops=%.1f tf32_tflops=%.1f f64_tflops=%.1f "
            "host_gflops=%.1f error=\"%s\"",
            d->copy_gbps, d->bf16_tflops, d->f32_tflops, d->tf32_tflops, d->f64_tflops,
            d->host_gflops, d->error);
}

/* Imports torch once, as a kernel would, and asks what it sees: a CPU-only
 * wheel on a GPU node, or a torch built for a CUDA the driver does not run,
 * imports fine and then sees no GPU (torch says why in a warning). */
static const char torch_probe_src[] =
    "import json, warnings\n"
    "with warnings.catch_warnings(record=True) as w:\n"
    "    warnings.simplefilter('always')\n"
    "    import torch\n"
    "    ok = torch.cuda.is_available()\n"
    "    n = torch.cuda.device_count() if ok else 0\n"
    "print(json.dumps({'gpus': n, 'warning': ' '.join(str(x.message) for x in w)}))\n";

/* What decides what torch sees: the interpreter, torch's build, the driver
 * and the GPUs. The answer is kept in the work dir under that key, so only
 * an agent's first start on a node (or one after any of them changed) pays
 * for importing torch: 4 to 8 s on the H100. */
static void torch_key(const kf_agent *a, const kf_pyenv *py, kf_buf *key)
{
    kf_buf_addf(key, "%s|%s|%s|%s", py->executable, py->torch, py->torch_cuda,
                a->info->driver_version ? a->info->driver_version : "");
    for (size_t g = 0; g < a->info->n_gpus; g++)
        kf_buf_addf(key, "|%s", a->info->gpus[g]->uuid ? a->info->gpus[g]->uuid : "?");
}

/* The probe's answer ({"gpus": N, "warning": "..."}) for key, from the
 * cache, or by running it (and caching a clean answer); NULL with *failed
 * set to why when it did not run. */
static json_t *torch_answer(kf_agent *a, const kf_pyenv *py, const char *key, char *failed,
                            size_t flen)
{
    char path[PATH_MAX + 32], why[256];
    snprintf(path, sizeof path, "%s/torch-facts.json", a->workdir);
    kf_buf buf = KF_BUF_INIT;
    json_t *j = NULL;
    if (kf_buf_read_file_max(&buf, path, 1 << 16, why, sizeof why) == KF_OK && buf.data)
        j = json_loads(buf.data, 0, NULL);
    kf_buf_release(&buf);
    const char *k = j ? json_string_value(json_object_get(j, "key")) : NULL;
    if (k && strcmp(k, key) == 0)
        return j;
    json_decref(j);
    char *argv[] = {(char *)py->executable, "-c", (char *)torch_probe_src, NULL};
    kf_buf out = KF_BUF_INIT;
    int st = kf_proc_capture_limit(argv, &out, 1 << 16, 120.0);
    const char *text = out.data ? out.data : "";
    const char *last = strrchr(text, '{');
    j = st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && last ? json_loads(last, 0, NULL) : NULL;
    if (!j) {
        const char *tail = text + strlen(text);
        while (tail > text && (tail[-1] == '\n' || tail[-1] == ' '))
            tail--;
        const char *line = tail;
        while (line > text && line[-1] != '\n')
            line--;
        snprintf(failed, flen, "import torch %s%.*s",
                 st == -2 ? "took more than 120 s" : "failed: ", st == -2 ? 0 : (int)(tail - line),
                 line);
    } else {
        json_object_set_new(j, "key", kf_json_str(key));
        char *dump = kf_json_dumps(j, JSON_COMPACT);
        kf_err err;
        if (dump && kf_write_file(path, dump, strlen(dump), 0600, &err) != KF_OK)
            kf_warn("agent.torch_cache", "error=\"%s\"", err.msg);
        free(dump);
    }
    kf_buf_release(&out);
    return j;
}

static void torch_gpus(kf_agent *a, const kf_pyenv *py)
{
    size_t node = a->info->n_gpus;
    a->torch_note[0] = '\0';
    a->python.torch_note = a->torch_note;
    a->python.torch_gpus = 0;
    if (!py->torch[0] || node == 0)
        return;
    kf_buf key = KF_BUF_INIT;
    torch_key(a, py, &key);
    json_t *j = torch_answer(a, py, key.data, a->torch_note, sizeof a->torch_note);
    kf_buf_release(&key);
    if (j) {
        a->python.torch_gpus = (int32_t)json_integer_value(json_object_get(j, "gpus"));
        const char *warn = json_string_value(json_object_get(j, "warning"));
        if ((size_t)a->python.torch_gpus < node)
            snprintf(a->torch_note, sizeof a->torch_note,
                     "torch %s sees %d of the node's %zu GPUs%s%.300s", py->torch,
                     a->python.torch_gpus, node,
                     !py->torch_cuda[0] ? " (a CPU-only build: install torch built for CUDA)"
                     : warn && *warn    ? ": "
                                        : "",
                     py->torch_cuda[0] && warn ? warn : "");
        json_decref(j);
    }
    kf_info("agent.torch", "gpus=%d node_gpus=%zu note=\"%s\"", a->python.torch_gpus, node,
            a->torch_note);
}

/* The node's Python as its runners will find it (the same $KF_PYTHON),
 * probed once per start: the coordinator sends a Python kernel only to an
 * agent whose interpreter has the packages the kernel imports. The strings
 * point into the process's pyenv memo, which lives as long as the agent.
 * Returns that memo, or NULL when there is no usable Python. */
static const kf_pyenv *python_facts(kf_agent *a)
{
    const kf_pyenv *py = NULL;
    kf_err err;
    kfleet__python_facts__init(&a->python);
    int rc = kf_pyenv_get(&py, &err);
    a->python_error[0] = '\0';
    if (rc != KF_OK)
        snprintf(a->python_error, sizeof a->python_error, "%s", err.msg);
    a->python.error = a->python_error;
    a->python.version = rc == KF_OK ? (char *)py->version : "";
    a->python.executable = rc == KF_OK ? (char *)py->executable : "";
    a->python.numpy = rc == KF_OK ? (char *)py->numpy : "";
    a->python.torch = rc == KF_OK ? (char *)py->torch : "";
    a->python.torch_cuda = rc == KF_OK ? (char *)py->torch_cuda : "";
    a->python.triton = rc == KF_OK ? (char *)py->triton : "";
    a->python.cupy = rc == KF_OK ? (char *)py->cupy : "";
    a->info->python = &a->python;
    kf_info("agent.python",
            "version=%s numpy=%s torch=%s torch_cuda=%s triton=%s cupy=%s error=\"%s\"",
            a->python.version, a->python.numpy, a->python.torch, a->python.torch_cuda,
            a->python.triton, a->python.cupy, a->python.error);
    return rc == KF_OK ? py : NULL;
}

/* Whether the toolkit that builds can run on this node's driver, decided
 * once per start (runner/compat.h): the runners it starts load the
 * forward-compat libraries when those bridge the gap, and the coordinator
 * shows the gap when nothing does (each CUDA build then fails naming it). */
static void cuda_compat(kf_agent *a)
{
    char tk[PATH_MAX], cuda[16] = "", driver[16];
    a->compat_dir[0] = a->compat_error[0] = '\0';
    a->info->cuda_compat = a->compat_dir;
    a->info->cuda_compat_error = a->compat_error;
    if (kf_build_toolkit(tk, sizeof tk, cuda, sizeof cuda) != KF_OK)
        return;
    kf_compat_driver_cuda(a->info->cuda_driver_version, driver, sizeof driver);
    kf_err err;
    if (kf_compat_check(tk, cuda, driver, a->info->driver_version, a->compat_dir,
                        sizeof a->compat_dir, &err) != KF_OK) {
        snprintf(a->compat_error, sizeof a->compat_error, "%s", err.msg);
        kf_warn("agent.cuda_too_new", "toolkit=%s driver=%s error=\"%s\"", cuda, driver, err.msg);
    } else if (a->compat_dir[0]) {
        kf_info("agent.cuda_compat", "toolkit=%s driver=%s dir=%s", cuda, driver, a->compat_dir);
    }
}

int kf_agent_new(const kf_agent_config *cfg, kf_agent **out, kf_err *err)
{
    kf_agent *a = kf_xcalloc(1, sizeof *a);
    a->cfg = *cfg;
    if (a->cfg.resend_s <= 0)
        a->cfg.resend_s = 5.0;
    if (a->cfg.default_limit_s <= 0)
        a->cfg.default_limit_s = 300.0;
    a->hb_interval_s = 1.0;
    kf_buf_init(&a->scratch);
    snprintf(a->workdir, sizeof a->workdir, "%s", cfg->workdir);
    if (cfg->runner_exe)
        snprintf(a->runner_exe, sizeof a->runner_exe, "%s", cfg->runner_exe);
    else if (readlink("/proc/self/exe", a->runner_exe, sizeof a->runner_exe - 1) <= 0)
        snprintf(a->runner_exe, sizeof a->runner_exe, "kfleet-agent");
    char dir[PATH_MAX + 16];
    int rc;
    /* Before any thread or child: it may take a mount namespace and move
     * into a control group of its own (contain.h). */
    if ((rc = contain_init(a, err)))
        goto fail;
    snprintf(dir, sizeof dir, "%s/outbox", a->workdir);
    if ((rc = kf_mkdirs(dir, 0700, err)) || (rc = kf_outbox_open(dir, &a->outbox, err)))
        goto fail;
    snprintf(dir, sizeof dir, "%s/cache", a->workdir);
    if ((rc = kf_mkdirs(dir, 0700, err)))
        goto fail;
    snprintf(dir, sizeof dir, "%s/tmp", a->workdir);
    if ((rc = kf_mkdirs(dir, 0700, err)))
        goto fail;
    /* One host profile at a time on this machine, whichever of its agents
     * runs it (runner/harness.h): KF_HOST_LOCK names the lock, "none"
     * turns it off. */
    const char *lock = getenv("KF_HOST_LOCK");
    if (lock && strcmp(lock, "none") == 0)
        a->host_lock[0] = '\0';
    else if (lock && *lock)
        snprintf(a->host_lock, sizeof a->host_lock, "%s", lock);
    else
        snprintf(a->host_lock, sizeof a->host_lock, "/tmp/kfleet-host-%u.lock", (unsigned)getuid());
    if (!(a->refs = kf_refstore_open(a->workdir, err))) {
        rc = err->code;
        goto fail;
    }
    if ((rc = kf_inventory_collect(cfg->agent_id, a->workdir, &a->info, err)))
        goto fail;
    if (cfg->cpu_slots)
        a->info->cpu_slots = cfg->cpu_slots;
    a->info->price_per_gpu_hour = cfg->price;
    /* The doctor measures while Python is probed (ceilings_start), and
     * the warm runners import while torch is (warmup_at_start: they take
     * the runners' environment, so after cuda_compat and contain_ready). */
    uint64_t t0 = kf_mono_ns();
    kf_doctor_child doc;
    kf_doctor found;
    ceilings_start(a, &doc, &found);
    cuda_compat(a);
    const kf_pyenv *py = python_facts(a);
    /* Said once at start, and in every registration (`kfleet status`). */
    kf_sandbox_probe(a->sandbox_missing, sizeof a->sandbox_missing);
    a->info->sandbox_missing = a->sandbox_missing;
    if (a->sandbox_missing[0])
        kf_warn("agent.sandbox", "missing=\"%s\"", a->sandbox_missing);
    else
        kf_info("agent.sandbox", "enforced=\"Landlock files, TCP and signals; own network; "
                                 "seccomp, Unix sockets refused; no_new_privs\"");
    contain_ready(a);
    warmup_at_start(a, a->python.torch);
    if (py)
        torch_gpus(a, py);
    uint64_t t1 = kf_mono_ns();
    ceilings_finish(a, &doc, &found);
    kf_info("agent.facts", "python_s=%.2f with_doctor_s=%.2f", (double)(t1 - t0) / 1e9,
            (double)(kf_mono_ns() - t0) / 1e9);
    kf_outbox_foreach(a->outbox, link_load_pending_cb, a);

    a->zctx = zmq_ctx_new();
    a->sock = zmq_socket(a->zctx, ZMQ_DEALER);
    /* No routing id: the coordinator's ROUTER names the connection, and the
     * coordinator binds our id to our key when we register. */
    int linger = 1000, ivl = 100, ivl_max = 2000, hwm = 100000;
    int64_t maxmsg = KF_MAX_FRAME;
    zmq_setsockopt(a->sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(a->sock, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(a->sock, ZMQ_RECONNECT_IVL_MAX, &ivl_max, sizeof ivl_max);
    zmq_setsockopt(a->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(a->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    /* ZMTP pings: a connection that died somewhere on the way (a relay, a
     * tunnel, a NAT that forgot it) without a FIN would otherwise look alive
     * to the DEALER forever, and it would never reconnect. */
    int hb_ivl = 2000, hb_timeout = 15000;
    zmq_setsockopt(a->sock, ZMQ_HEARTBEAT_IVL, &hb_ivl, sizeof hb_ivl);
    zmq_setsockopt(a->sock, ZMQ_HEARTBEAT_TIMEOUT, &hb_timeout, sizeof hb_timeout);
    if (!cfg->server_key || !cfg->public_key || !cfg->secret_key) {
        rc = kf_err_set(err, KF_EINVAL,
                        "the agent link is CurveZMQ: the coordinator's public "
                        "key and the agent's key pair are needed");
        goto fail;
    }
    if (zmq_setsockopt(a->sock, ZMQ_CURVE_SERVERKEY, cfg->server_key,
                       strlen(cfg->server_key) + 1) ||
        zmq_setsockopt(a->sock, ZMQ_CURVE_PUBLICKEY, cfg->public_key,
                       strlen(cfg->public_key) + 1) ||
        zmq_setsockopt(a->sock, ZMQ_CURVE_SECRETKEY, cfg->secret_key,
                       strlen(cfg->secret_key) + 1)) {
        rc = kf_err_set(err, KF_EINVAL, "cannot set the Curve keys: %s", zmq_strerror(errno));
        goto fail;
    }
    /* A refused key is otherwise silent: the DEALER just reconnects. */
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://agent-monitor-%p", (void *)a);
    if (zmq_socket_monitor(a->sock, mon,
                           ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                               ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                               ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) == 0) {
        a->monitor = zmq_socket(a->zctx, ZMQ_PAIR);
        if (zmq_connect(a->monitor, mon) != 0) {
            zmq_close(a->monitor);
            a->monitor = NULL;
        }
    }
    if (zmq_connect(a->sock, cfg->coordinator) != 0) {
        rc = kf_err_set(err, KF_EINVAL, "cannot connect to %s: %s", cfg->coordinator,
                        zmq_strerror(errno));
        goto fail;
    }
    *out = a;
    return KF_OK;
fail:
    kf_agent_destroy(&a);
    return rc;
}

void kf_agent_destroy(kf_agent **self)
{
    kf_agent *a = *self;
    if (!a)
        return;
    runners_stop_all(a);
    contain_fini(a);
    if (a->monitor)
        zmq_close(a->monitor);
    if (a->sock)
        zmq_close(a->sock);
    if (a->zctx)
        zmq_ctx_term(a->zctx);
    kf_outbox_close(&a->outbox);
    kf_refstore_close(&a->refs);
    kf_inventory_free(&a->info);
    free(a->pending);
    kf_buf_release(&a->scratch);
    free(a);
    *self = NULL;
}

/* Handles what the coordinator sent (at most 1000 frames a turn). */
static void pump_socket(kf_agent *a)
{
    for (int k = 0; k < 1000; k++) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, a->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&msg);
            break;
        }
        kf_err derr;
        kf_peer peer = {NULL, 0, NULL};
        if (kf_wire_dispatch(agent_handlers, a, &peer, zmq_msg_data(&msg), zmq_msg_size(&msg),
                             &derr) == KF_EPROTO)
            kf_warn("agent.bad_frame", "bytes=%zu error=\"%s\"", zmq_msg_size(&msg), derr.msg);
        zmq_msg_close(&msg);
    }
}

/* On the way out (SIGTERM from `kfleet teardown`), the outbox is sent once
 * more and given up to flush_s to be acked, so a node that is torn down
 * leaves no result only on its disk. New assignments are not started;
 * the coordinator requeues them. Whatever stays unacked is kept in the
 * outbox for the next start. */
static void flush_outbox(kf_agent *a, double flush_s)
{
    if (!a->welcomed || a->npending == 0)
        return;
    a->stopping = 1;
    for (size_t i = 0; i < a->npending; i++)
        a->pending[i].sent_mono = 0;
    size_t before = a->npending;
    uint64_t deadline = kf_mono_ns() + (uint64_t)(flush_s * 1e9);
    link_resend_due(a);
    while (a->npending > 0 && kf_mono_ns() < deadline) {
        zmq_pollitem_t it = {a->sock, 0, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 50);
        pump_socket(a);
    }
    kf_info("agent.flush", "sent=%zu acked=%zu left=%zu", before, before - a->npending,
            a->npending);
}

int kf_agent_run(kf_agent *a, volatile sig_atomic_t *stop, kf_err *err)
{
    kf_info("agent.start",
            "agent=%s coordinator=%s workdir=%s gpus=%zu cpu_slots=%u outbox=%zu key=%s",
            a->info->agent_id, a->cfg.coordinator, a->workdir, a->info->n_gpus, a->info->cpu_slots,
            a->npending, a->cfg.public_key);
    if (a->cfg.stop_mono) {
        uint64_t now = kf_mono_ns();
        kf_info("agent.stop_after", "agent=%s in_s=%.1f", a->info->agent_id,
                a->cfg.stop_mono > now ? (double)(a->cfg.stop_mono - now) / 1e9 : 0.0);
    }
    link_send_register(a);
    a->link_down_mono = kf_mono_ns();
    /* A batch job's own deadline: a batch scheduler's warning signal is
     * sent by a periodic check, and lost when it comes before the job's
     * step runs. */
    while (!(stop && *stop) && !a->refused[0]) {
        if (a->cfg.stop_mono && kf_mono_ns() >= a->cfg.stop_mono) {
            kf_info("agent.deadline", "agent=%s reason=\"--stop-after passed\"", a->info->agent_id);
            break;
        }
        zmq_pollitem_t items[2 + 3 * MAX_RUNNERS];
        size_t n = 0;
        items[n++] = (zmq_pollitem_t){a->sock, 0, ZMQ_POLLIN, 0};
        if (a->monitor)
            items[n++] = (zmq_pollitem_t){a->monitor, 0, ZMQ_POLLIN, 0};
        for (size_t i = 0; i < a->nrunners; i++) {
            if (a->runners[i]->out_fd >= 0)
                items[n++] = (zmq_pollitem_t){NULL, a->runners[i]->out_fd, ZMQ_POLLIN, 0};
            if (a->runners[i]->kout_fd >= 0)
                items[n++] = (zmq_pollitem_t){NULL, a->runners[i]->kout_fd, ZMQ_POLLIN, 0};
            if (a->runners[i]->retiring) /* its pidfd: readable once it is gone */
                items[n++] = (zmq_pollitem_t){NULL, a->runners[i]->pidfd, ZMQ_POLLIN, 0};
        }
        if (zmq_poll(items, (int)n, 50) < 0 && errno != EINTR)
            return kf_err_set(err, KF_EIO, "poll: %s", zmq_strerror(errno));
        pump_socket(a);
        if (a->monitor)
            link_drain_monitor(a);
        if (a->reconnect_mono && kf_mono_ns() > a->reconnect_mono) {
            a->reconnect_mono = 0;
            zmq_disconnect(a->sock, a->cfg.coordinator);
            if (zmq_connect(a->sock, a->cfg.coordinator) != 0)
                kf_warn("agent.reconnect", "coordinator=%s error=\"%s\"", a->cfg.coordinator,
                        zmq_strerror(errno));
        }
        for (size_t i = 0; i < a->nrunners; i++)
            if (a->runners[i]->out_fd >= 0 || a->runners[i]->kout_fd >= 0)
                runners_drain(a, a->runners[i]);
        runners_reap(a);
        uint64_t now = kf_mono_ns();
        /* No coordinator for a while (never reached, or gone): said, then
         * again each minute, so an agent log never just goes quiet. */
        if (!a->link_up && !a->last_auth_log_mono && a->link_down_mono &&
            now - a->link_down_mono > 10000000000ull &&
            (!a->waiting_log_mono || now - a->waiting_log_mono > 60000000000ull)) {
            a->waiting_log_mono = now;
            a->said_lost = 1;
            kf_warn("agent.no_coordinator",
                    "coordinator=%s unreachable_s=%.0f outbox=%zu hint=\"is it running, and is "
                    "--coordinator its agent endpoint (kfleet serve prints it)?\"",
                    a->cfg.coordinator, (double)(now - a->link_down_mono) / 1e9, a->npending);
        }
        if (!a->welcomed && now - a->last_register_mono > 1000000000ull)
            link_send_register(a);
        if (a->welcomed && now - a->last_hb_mono > (uint64_t)(a->hb_interval_s * 1e9))
            link_send_heartbeat(a);
        link_resend_due(a);
    }
    if (a->refused[0]) {
        kf_error("agent.refused", "coordinator=%s reason=\"%s\"", a->cfg.coordinator, a->refused);
        return kf_err_set(err, KF_EINVAL, "the coordinator %s refused this agent: %s",
                          a->cfg.coordinator, a->refused);
    }
    flush_outbox(a, 5.0);
    if (a->welcomed)
        link_send_goodbye(a, runners_busy(a) ? "stopped with tasks running: they are requeued"
                                             : "stopped");
    kf_info("agent.stop", "agent=%s running=%zu outbox=%zu", a->info->agent_id, runners_busy(a),
            a->npending);
    return KF_OK;
}
