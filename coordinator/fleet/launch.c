/* launch — the per-host flow of `kfleet launch` and `kfleet teardown`.
 *
 * Every host runs in its own thread with its own SSH session and its own
 * control connection to the coordinator daemon; results are handed on
 * (printed, or put in the daemon's launch table) as each host finishes. The remote side is plain
 * POSIX sh fed on stdin (`sh -s -- ARGS`), so nothing but sshd, sh, tar and
 * gzip is needed on the node.
 *
 * All of it runs inside the daemon (kf_launches, coordinator/fleet/launches.c):
 * `kfleet launch` only asks and follows, so a launch outlives the CLI. The
 * launch threads still ask for the tunnel and watch registration through
 * the daemon's control socket, as a client of its loop: loopback ipc, and
 * no coordinator state shared across threads. The launcher checked (and,
 * with --accept-new, recorded) the host key first, and hands the daemon the
 * same known_hosts file, which it reads strictly. */
#include "fleet/launch.h"
#include "fleet/provider.h"
#include "fleet/launch_int.h"
#include "common/xalloc.h"
#include "core/ctlsock.h"

#include "common/keys.h"
#include "common/log.h"
#include "fleet/preflight.h"
#include "fleet/ssh.h"
#include "common/util.h"
#include "common/wire.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static const char *phase_names[KF_PHASE_COUNT] = {"connect", "preflight", "upload", "tunnel",
                                                  "start",   "register",  "stop"};

int kf_launch_sha256_file(const char *path, char out[65], kf_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kf_err_set(err, KF_EIO, "cannot open %s: %s", path, strerror(errno));
    crypto_hash_sha256_state st;
    crypto_hash_sha256_init(&st);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        crypto_hash_sha256_update(&st, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad)
        return kf_err_set(err, KF_EIO, "cannot read %s", path);
    unsigned char h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_final(&st, h);
    sodium_bin2hex(out, 65, h, sizeof h);
    return KF_OK;
}

/* $1 workdir, $2 endpoint, $3 name, $4 server key or "", $5 the price per
 * GPU-hour or "" (passed on when the agent knows --price). Prints
 * "running PID" or "started PID". */
static const char start_script[] =
    "set -u\ncd \"$1\" || exit 3\n"
    "%s"
    "wd=$1 ep=$2 name=$3 skey=$4 price=$5 a=\"$1/bundle/kfleet-agent\"\n"
    "pid=$(cat agent.pid 2>/dev/null || true)\n"
    "if alive \"$pid\"; then\n"
    "  if [ \"$(cat agent.endpoint 2>/dev/null)\" = \"$ep\" ]; then echo running \"$pid\"; exit 0; "
    "fi\n"
    "  stop_agent >/dev/null\n"
    "fi\n"
    "set -- --coordinator \"$ep\" --workdir \"$wd\" --name \"$name\"\n"
    "if [ -n \"$skey\" ] && \"$a\" --help 2>&1 | grep -q -- --server-key; then\n"
    "  set -- \"$@\" --server-key \"$skey\"\nfi\n"
    "if [ -n \"$price\" ] && \"$a\" --help 2>&1 | grep -q -- --price; then\n"
    "  set -- \"$@\" --price \"$price\"\nfi\n"
    "printf '%%s\\n' \"$ep\" > agent.endpoint\n"
    "setsid nohup \"$a\" \"$@\" >>agent.log 2>&1 </dev/null &\n"
    "pid=$!\necho \"$pid\" > agent.pid\n"
    "sleep 0.3\n"
    "if kill -0 \"$pid\" 2>/dev/null; then echo started \"$pid\"; else echo died; tail -n 5 "
    "agent.log >&2; exit 4; fi\n";

/* $1 workdir, $2 "purge" or "". */
static const char teardown_script[] = "set -u\n"
                                      "[ -d \"$1\" ] || { echo no-workdir; exit 0; }\n"
                                      "cd \"$1\"\n"
                                      "%s"
                                      "stop_agent\n"
                                      "if [ \"$2\" = purge ]; then cd / && rm -rf \"$1\" && echo "
                                      "purged; fi\n";

void kf_launch_format(const kf_launch_result *r, kf_buf *b)
{
    kf_buf_addf(b, "%-12s %-6s", r->name, r->rc == KF_OK ? "ok" : "FAILED");
    for (int p = 0; p < KF_PHASE_COUNT; p++)
        if (r->t[p] >= 0)
            kf_buf_addf(b, " %s %.2fs", phase_names[p], r->t[p]);
    if (r->rc == KF_OK)
        kf_buf_addf(b, "  %s", r->msg);
    else
        kf_buf_addf(b, "\n  %s: %s",
                    r->failed_at >= 0 && r->failed_at < KF_PHASE_COUNT ? phase_names[r->failed_at]
                                                                       : "launch",
                    r->msg);
}

static void print_result(job *j)
{
    const kf_launch_opts *o = j->o;
    kf_launch_result *r = j->r;
    if (o->on_done)
        o->on_done(o->on_done_ctx, j->idx, r);
    if (!o->progress)
        return;
    kf_buf b = KF_BUF_INIT;
    kf_launch_format(r, &b);
    pthread_mutex_lock(j->out_mu);
    fprintf(o->progress, "%s\n", b.data);
    fflush(o->progress);
    pthread_mutex_unlock(j->out_mu);
    kf_buf_release(&b);
}

void launch_plain_host(job *j)
{
    const kf_launch_opts *o = j->o;
    kf_launch_result *r = j->r;
    kf_ssh *s = NULL;
    void *cl = NULL;
    kf_err err;
    kf_err_clear(&err);
    kf_buf out = KF_BUF_INIT, script = KF_BUF_INIT;

    int rc = launch_connect_phase(j, &s, &err);
    if (rc)
        goto out;

    uint64_t t = kf_mono_ns();
    rc = launch_preflight(j, s, o->need_gpu, r->summary, sizeof r->summary, &err);
    r->t[KF_PHASE_PREFLIGHT] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_PREFLIGHT, rc, err.msg);
        goto out;
    }
    if (launch_cancelled(o)) {
        kf_launch_fail(r, KF_PHASE_UPLOAD, KF_EUNAVAIL, "the coordinator is shutting down");
        goto out;
    }

    t = kf_mono_ns();
    rc = launch_upload(j, s, &r->uploaded, &r->used_scp, &err);
    if (rc == KF_OK)
        rc = launch_install_key(j, s, "agent.key", j->h->name, &err);
    r->t[KF_PHASE_UPLOAD] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_UPLOAD, rc, err.msg);
        goto out;
    }

    if (!rc && launch_cancelled(o))
        rc = kf_err_set(&err, KF_EUNAVAIL, "the coordinator is shutting down");
    if (rc || (rc = launch_ctl_open(j, &cl, &err))) {
        kf_launch_fail(r, KF_PHASE_TUNNEL, rc, err.msg);
        goto out;
    }
    char ep[300];
    if (o->direct) {
        snprintf(ep, sizeof ep, "%s", o->direct);
    } else {
        t = kf_mono_ns();
        rc = launch_ctl_tunnel(j, cl, &r->remote_port, &err);
        r->t[KF_PHASE_TUNNEL] = launch_since(t);
        if (rc) {
            kf_launch_fail(r, KF_PHASE_TUNNEL, rc, err.msg);
            goto out;
        }
        snprintf(ep, sizeof ep, "tcp://127.0.0.1:%d", r->remote_port);
    }

    t = kf_mono_ns();
    kf_buf_reset(&script);
    kf_buf_addf(&script, start_script, launch_stop_fn);
    kf_buf_reset(&out);
    char price[32] = "";
    if (j->h->price > 0)
        snprintf(price, sizeof price, "%.17g", j->h->price);
    const char *args[] = {ep, j->h->name, j->server_key ? j->server_key : "", price};
    rc = launch_run_checked(j, s, script.data, args, 4, &out, "the agent did not start", &err);
    r->t[KF_PHASE_START] = launch_since(t);
    if (rc == KF_OK) {
        char word[16] = "";
        if (sscanf(out.data, "%15s %ld", word, &r->pid) != 2) {
            launch_trim(out.data);
            rc = kf_err_set(&err, KF_EIO, "unexpected reply from the start script: '%s'", out.data);
        }
        r->already_running = strcmp(word, "running") == 0;
    }
    if (rc) {
        kf_launch_fail(r, KF_PHASE_START, rc, err.msg);
        goto out;
    }

    t = kf_mono_ns();
    rc = launch_ctl_wait_registered(j, cl, r->pid, &err);
    r->t[KF_PHASE_REGISTER] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_REGISTER, rc, err.msg);
        launch_tail(j, s, "agent.log", r->msg, sizeof r->msg);
        goto out;
    }
    char via[160];
    if (o->direct)
        snprintf(via, sizeof via, "direct to %s", o->direct);
    else
        snprintf(via, sizeof via, "tunnel 127.0.0.1:%d on the node", r->remote_port);
    snprintf(r->msg, sizeof r->msg, "agent pid %ld %s, %s, %s, %d connect %s — %s", r->pid,
             r->already_running ? "already running" : "started",
             r->uploaded ? (r->used_scp ? "bundle sent (scp)" : "bundle sent (sftp)")
                         : "bundle unchanged",
             via, r->tries, r->tries == 1 ? "try" : "tries", r->summary);
out:
    launch_ctl_close(&cl);
    kf_ssh_close(&s);
    kf_buf_release(&out);
    kf_buf_release(&script);
}

void launch_plain_teardown(job *j)
{
    kf_ssh *s = NULL;
    kf_err err;
    if (launch_connect_phase(j, &s, &err) == KF_OK) {
        kf_buf script = KF_BUF_INIT;
        kf_buf_addf(&script, teardown_script, launch_stop_fn);
        const char *args[] = {j->o->purge ? "purge" : ""};
        launch_stop_phase(j, s, script.data, args, 1);
        kf_buf_release(&script);
    }
    kf_ssh_close(&s);
}

/* After a host's stop, whether or not the node answered (a node that is
 * gone should not be waited for): its tunnel goes and, with --purge, its
 * agents' keys (one per agent its provider runs there). */
static void teardown_finish(job *j)
{
    const kf_launch_opts *o = j->o;
    kf_launch_result *r = j->r;
    void *cl = NULL;
    kf_err e2;
    if (j->zctx && launch_ctl_open(j, &cl, &e2) == KF_OK) {
        Kfleet__ControlRequest q = KFLEET__CONTROL_REQUEST__INIT;
        q.body_case = KFLEET__CONTROL_REQUEST__BODY_TUNNEL_CLOSE;
        q.tunnel_close = j->h->name;
        Kfleet__ControlReply *rep = NULL;
        /* No tunnel by that name (a --direct launch) is not a failure. */
        if (launch_ctl_call(j, cl, &q, &rep, &e2) == KF_OK)
            kfleet__control_reply__free_unpacked(rep, NULL);
        launch_ctl_close(&cl);
    }
    if (o->purge && r->rc == KF_OK && o->allow_file) {
        int several = j->h->prov->nagents != NULL;
        int n = several ? j->h->prov->nagents(j->h) : 1;
        for (int i = 0; i < n; i++) {
            char name[160];
            if (several)
                snprintf(name, sizeof name, "%s-%d", j->h->name, i);
            else
                snprintf(name, sizeof name, "%s", j->h->name);
            size_t removed = 0;
            if (kf_allow_remove(o->allow_file, name, &removed, &e2) != KF_OK)
                kf_warn("launch.allow_remove", "host=%s error=\"%s\"", name, e2.msg);
        }
    }
}

static void *job_main(void *arg)
{
    job *j = arg;
    if (!j->h->prov) {
        /* A host made by hand, not by the inventory or a request. */
        kf_launch_fail(j->r, KF_PHASE_CONNECT, KF_EINVAL, "the host has no provider");
    } else if (j->teardown) {
        j->h->prov->teardown(j);
        teardown_finish(j);
    } else {
        j->h->prov->launch(j);
    }
    print_result(j);
    return NULL;
}

static void result_init(kf_launch_result *r, const char *name)
{
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name ? name : "");
    r->failed_at = -1;
    for (int p = 0; p < KF_PHASE_COUNT; p++)
        r->t[p] = -1;
}

int kf_launch_here(const kf_fleet_host *h, const kf_launch_opts *o, int teardown,
                   kf_launch_result *r)
{
    result_init(r, h->name);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    job j = {h, o, r, 0, &mu, NULL, NULL, teardown, NULL};
    if (!h->prov)
        kf_launch_fail(r, KF_PHASE_CONNECT, KF_EINVAL, "the host has no provider");
    else if (teardown)
        h->prov->teardown(&j);
    else
        h->prov->launch(&j);
    return r->rc;
}

static int run_all(const kf_fleet *f, const kf_launch_opts *o, int teardown, kf_launch_result **res,
                   kf_err *err)
{
    *res = NULL;
    if (f->nhosts == 0)
        return kf_err_set(err, KF_EINVAL, "the inventory has no hosts");
    int rc = kf_ssh_global_init(err);
    if (rc)
        return rc;
    char sha[65] = "";
    char *server_key = NULL;
    if (!teardown) {
        if ((rc = kf_launch_sha256_file(o->bundle_tar, sha, err)))
            return rc;
        char pub[KF_KEY_Z85 + 1];
        if (o->server_pub_file && kf_keys_read_public(o->server_pub_file, pub, NULL) == KF_OK)
            server_key = strdup(pub);
    }
    void *zctx = o->control_endpoint ? zmq_ctx_new() : NULL;
    kf_launch_result *r = kf_xcalloc(f->nhosts, sizeof *r);
    job *jobs = kf_xcalloc(f->nhosts, sizeof *jobs);
    pthread_t *th = kf_xcalloc(f->nhosts, sizeof *th);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    for (size_t i = 0; i < f->nhosts; i++) {
        result_init(&r[i], f->hosts[i].name);
        jobs[i] = (job){&f->hosts[i], o, &r[i], i, &mu, sha, server_key, teardown, zctx};
        if (pthread_create(&th[i], NULL, job_main, &jobs[i]) != 0) {
            kf_launch_fail(&r[i], KF_PHASE_CONNECT, KF_EIO, "cannot start a thread");
            print_result(&jobs[i]);
            th[i] = 0;
        }
    }
    rc = KF_OK;
    for (size_t i = 0; i < f->nhosts; i++) {
        if (th[i])
            pthread_join(th[i], NULL);
        if (r[i].rc && !rc)
            rc = r[i].rc;
    }
    if (zctx)
        zmq_ctx_term(zctx);
    free(th);
    free(jobs);
    free(server_key);
    *res = r;
    return rc;
}

int kf_launch_run(const kf_fleet *f, const kf_launch_opts *o, kf_launch_result **res, kf_err *err)
{
    if (!o->bundle_tar)
        return kf_err_set(err, KF_EINVAL, "no bundle to launch; run `kfleet bundle` first");
    /* The tunnels and the registration are the daemon's. */
    if (!o->control_endpoint)
        return kf_err_set(err, KF_EUNAVAIL,
                          "launching needs the coordinator daemon; start `kfleet serve`");
    return run_all(f, o, 0, res, err);
}

int kf_launch_teardown(const kf_fleet *f, const kf_launch_opts *o, kf_launch_result **res,
                       kf_err *err)
{
    return run_all(f, o, 1, res, err);
}
