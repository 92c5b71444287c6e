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

void kf_launch_shell_path(kf_buf *b, const char *wd)
{
    if (strcmp(wd, "~") == 0) {
        kf_buf_adds(b, "\"$HOME\"");
    } else if (strncmp(wd, "~/", 2) == 0) {
        kf_buf_adds(b, "\"$HOME\"/");
        kf_ssh_quote(b, wd + 2);
    } else {
        kf_ssh_quote(b, wd);
    }
}

/* Stops the agent of the work dir in $1: SIGTERM (it flushes its outbox),
 * up to 15 s, then SIGKILL. A pid is ours only when its command line names
 * kfleet-agent: pids are reused, and a zombie has an empty one. */
static const char stop_fn[] =
    "alive() { [ -n \"$1\" ] && kill -0 \"$1\" 2>/dev/null && "
    "tr '\\0' ' ' </proc/\"$1\"/cmdline 2>/dev/null | grep -q kfleet-agent; }\n"
    "stop_agent() {\n"
    "  pid=$(cat agent.pid 2>/dev/null || true)\n"
    "  if ! alive \"$pid\"; then rm -f agent.pid; echo not-running; return 0; fi\n"
    "  kill -TERM \"$pid\"; i=0\n"
    "  while alive \"$pid\" && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done\n"
    "  if alive \"$pid\"; then kill -KILL \"$pid\"; echo killed \"$pid\"; else echo stopped "
    "\"$pid\"; fi\n"
    "  rm -f agent.pid\n"
    "}\n";

/* $1 workdir, $2 sha256: unpacks bundle.tar.gz.part into bundle/ (stopping
 * a running agent first: it runs from there). */
static const char unpack_script[] =
    "set -eu\ncd \"$1\"\n"
    "%s"
    "stop_agent >/dev/null\n"
    "rm -rf bundle.new && mkdir bundle.new\n"
    "tar -xzf bundle.tar.gz.part -C bundle.new\n"
    "rm -rf bundle && mv bundle.new bundle && mv bundle.tar.gz.part bundle.tar.gz\n"
    "printf '%%s\\n' \"$2\" > bundle.sha256\n";

/* $1 workdir, $2 endpoint, $3 name, $4 server key or "". Prints
 * "running PID" or "started PID". */
static const char start_script[] =
    "set -u\ncd \"$1\" || exit 3\n"
    "%s"
    "wd=$1 ep=$2 name=$3 skey=$4 a=\"$1/bundle/kfleet-agent\"\n"
    "pid=$(cat agent.pid 2>/dev/null || true)\n"
    "if alive \"$pid\"; then\n"
    "  if [ \"$(cat agent.endpoint 2>/dev/null)\" = \"$ep\" ]; then echo running \"$pid\"; exit 0; "
    "fi\n"
    "  stop_agent >/dev/null\n"
    "fi\n"
    "set -- --coordinator \"$ep\" --workdir \"$wd\" --name \"$name\"\n"
    "if [ -n \"$skey\" ] && \"$a\" --help 2>&1 | grep -q -- --server-key; then\n"
    "  set -- \"$@\" --server-key \"$skey\"\nfi\n"
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

int kf_launch_fail(kf_launch_result *r, int phase, int rc, const char *msg)
{
    r->rc = rc ? rc : KF_EIO;
    r->failed_at = phase;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    return r->rc;
}

/* Runs a script on the node with sh -s; args are quoted here. */
static int run_script(kf_ssh *s, const char *script, const char *const *args, size_t nargs,
                      const char *wd, kf_buf *out, kf_buf *errout, int *status, kf_err *err)
{
    kf_buf cmd = KF_BUF_INIT;
    kf_buf_adds(&cmd, "sh -s --");
    if (wd) {
        kf_buf_addc(&cmd, ' ');
        kf_launch_shell_path(&cmd, wd);
    }
    for (size_t i = 0; i < nargs; i++) {
        kf_buf_addc(&cmd, ' ');
        kf_ssh_quote(&cmd, args[i]);
    }
    int rc = kf_ssh_exec(s, cmd.data, script, strlen(script), out, errout, status, err);
    kf_buf_release(&cmd);
    return rc;
}

static void connect_opts(const job *j, kf_ssh_opts *so)
{
    memset(so, 0, sizeof *so);
    so->name = j->h->name;
    so->host = j->h->host;
    so->port = j->h->port;
    so->user = j->h->user;
    so->identity = j->h->identity;
    so->known_hosts = j->o->known_hosts;
    so->accept_new = j->o->accept_new;
    so->attempts = j->o->attempts > 0 ? j->o->attempts : 6;
    so->backoff_s = j->o->backoff_s > 0 ? j->o->backoff_s : 0.5;
    so->timeout_s = j->o->connect_timeout_s > 0 ? j->o->connect_timeout_s : 10;
    so->agent_sock = j->o->agent_sock;
}

/* kf_ssh_connect's retries, one attempt per call, so that a cancel (the
 * daemon shutting down) ends the backoff at once instead of after minutes
 * of it. A failure is worth another attempt when the host could not be
 * reached (KF_EUNAVAIL: refused, timed out, handshake cut short), as there. */
static int connect_host(const job *j, kf_ssh **s, int *tries, kf_err *err)
{
    kf_ssh_opts so;
    connect_opts(j, &so);
    int attempts = so.attempts;
    double wait = so.backoff_s;
    so.attempts = 1;
    int rc = KF_EUNAVAIL, i;
    for (i = 0; i < attempts; i++) {
        *tries = i + 1;
        rc = kf_ssh_connect(&so, s, NULL, err);
        if (rc != KF_EUNAVAIL || i + 1 == attempts)
            break;
        kf_debug("ssh.retry", "host=%s attempt=%d wait_s=%.2f error=\"%s\"", j->h->name, i + 1,
                 wait, err->msg);
        uint64_t t0 = kf_mono_ns();
        while (launch_since(t0) < wait && !launch_cancelled(j->o)) {
            struct timespec ts = {0, 50000000};
            nanosleep(&ts, NULL);
        }
        if (launch_cancelled(j->o))
            return kf_err_set(err, KF_EUNAVAIL, "%s: the coordinator is shutting down", j->h->name);
        wait = wait * 2 > 8 ? 8 : wait * 2;
    }
    if (rc != KF_OK && attempts > 1 && i + 1 == attempts) {
        char m[sizeof err->msg];
        snprintf(m, sizeof m, "%s (gave up after %d attempts)", err->msg, attempts);
        snprintf(err->msg, sizeof err->msg, "%s", m);
    }
    return rc;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

/* The agent's key pair: the one already on the node, else a new one written
 * there (0600). Its public key goes into the coordinator's allow list. */
static int install_key(job *j, kf_ssh *s, kf_err *err)
{
    const char *allow = j->o->allow_file;
    kf_buf cmd = KF_BUF_INIT, out = KF_BUF_INIT;
    kf_buf_adds(&cmd, "head -n 1 ");
    kf_launch_shell_path(&cmd, j->h->workdir);
    kf_buf_adds(&cmd, "/agent.key 2>/dev/null");
    int st = 0;
    int rc = kf_ssh_exec(s, cmd.data, NULL, 0, &out, NULL, &st, err);
    kf_buf_release(&cmd);
    if (rc)
        goto out;
    char pub[KF_KEY_Z85 + 1] = "";
    trim(out.data);
    if (st == 0 && kf_key_valid(out.data)) {
        snprintf(pub, sizeof pub, "%s", out.data);
    } else {
        char tmpl[] = "/tmp/kfleet-key.XXXXXX";
        if (!mkdtemp(tmpl)) {
            rc = kf_err_set(err, KF_EIO, "mkdtemp: %s", strerror(errno));
            goto out;
        }
        char kp_path[64];
        snprintf(kp_path, sizeof kp_path, "%s/agent.key", tmpl);
        kf_keypair kp;
        kf_buf file = KF_BUF_INIT;
        rc = kf_keys_load(kp_path, 1, &kp, err);
        if (rc == KF_OK && kf_buf_read_file(&file, kp_path) != KF_OK)
            rc = kf_err_set(err, KF_EIO, "cannot read back %s", kp_path);
        unlink(kp_path);
        rmdir(tmpl);
        if (rc == KF_OK) {
            kf_buf remote = KF_BUF_INIT;
            /* SFTP does not expand "~": a relative path is the login dir. */
            const char *wd = j->h->workdir;
            kf_buf_adds(&remote, strncmp(wd, "~/", 2) == 0 ? wd + 2 : wd);
            kf_buf_adds(&remote, "/agent.key");
            rc = kf_ssh_write(s, file.data, file.len, remote.data, 0600, NULL, err);
            kf_buf_release(&remote);
        }
        sodium_memzero(file.data, file.len);
        sodium_memzero(&kp.sec, sizeof kp.sec);
        kf_buf_release(&file);
        if (rc)
            goto out;
        snprintf(pub, sizeof pub, "%s", kp.pub);
    }
    if (!allow) {
        rc = kf_err_set(err, KF_EINVAL, "no allow list to add the agent's key to");
        goto out;
    }
    char keys_dir[PATH_MAX];
    snprintf(keys_dir, sizeof keys_dir, "%s", allow);
    char *slash = strrchr(keys_dir, '/');
    if (slash && slash != keys_dir) {
        *slash = '\0';
        if ((rc = kf_mkdirs(keys_dir, 0700, err)))
            goto out;
    }
    rc = kf_allow_add(allow, pub, j->h->name, err);
    if (rc == KF_EEXIST) {
        /* The node's work dir was purged and a new key made: replace. */
        size_t removed = 0;
        if ((rc = kf_allow_remove(allow, j->h->name, &removed, err)) == KF_OK)
            rc = kf_allow_add(allow, pub, j->h->name, err);
    }
out:
    kf_buf_release(&out);
    return rc;
}

static void tail_log(job *j, kf_ssh *s, char *msg, size_t n)
{
    kf_buf cmd = KF_BUF_INIT, out = KF_BUF_INIT;
    kf_buf_adds(&cmd, "tail -n 3 ");
    kf_launch_shell_path(&cmd, j->h->workdir);
    kf_buf_adds(&cmd, "/agent.log 2>/dev/null");
    int st;
    kf_err e;
    if (kf_ssh_exec(s, cmd.data, NULL, 0, &out, NULL, &st, &e) == KF_OK && out.len) {
        trim(out.data);
        size_t l = strlen(msg);
        snprintf(msg + l, n - l, "; the agent's log ends: %s", out.data);
    }
    kf_buf_release(&cmd);
    kf_buf_release(&out);
}

static void launch_host(job *j)
{
    const kf_launch_opts *o = j->o;
    kf_launch_result *r = j->r;
    kf_ssh *s = NULL;
    void *cl = NULL;
    kf_err err;
    kf_err_clear(&err);
    kf_buf out = KF_BUF_INIT, eout = KF_BUF_INIT, script = KF_BUF_INIT;
    int st = 0;

    uint64_t t = kf_mono_ns();
    int rc = connect_host(j, &s, &r->tries, &err);
    r->t[KF_PHASE_CONNECT] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_CONNECT, rc, err.msg);
        goto out;
    }

    t = kf_mono_ns();
    rc = run_script(s, kf_preflight_script(), NULL, 0, j->h->workdir, &out, &eout, &st, &err);
    if (rc == KF_OK) {
        kf_preflight pf;
        memset(&pf, 0, sizeof pf);
        rc = kf_preflight_parse(out.data, out.len, &pf, &err);
        if (rc == KF_OK) {
            kf_preflight_summary(&pf, r->summary, sizeof r->summary);
            rc = kf_preflight_check(&pf, o->min_free_bytes, o->need_gpu, &err);
            if (rc == KF_OK && o->min_glibc[0] && pf.glibc &&
                kf_version_cmp(pf.glibc, o->min_glibc) < 0)
                rc = kf_err_set(&err, KF_EINVAL,
                                "glibc %s on the node, the bundle needs %s or newer (the glibc of "
                                "the machine it was built on): build the bundle on an older "
                                "distribution, or use a newer image",
                                pf.glibc, o->min_glibc);
        }
        kf_preflight_free(&pf);
    }
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
    kf_buf_reset(&out);
    kf_buf_reset(&eout);
    kf_buf_adds(&script, "mkdir -p ");
    kf_launch_shell_path(&script, j->h->workdir);
    kf_buf_adds(&script, " && cat ");
    kf_launch_shell_path(&script, j->h->workdir);
    kf_buf_adds(&script, "/bundle.sha256 2>/dev/null; true");
    rc = kf_ssh_exec(s, script.data, NULL, 0, &out, &eout, &st, &err);
    if (rc == KF_OK && st != 0)
        rc =
            kf_err_set(&err, KF_EIO, "cannot create the work dir %s: %s", j->h->workdir, eout.data);
    if (rc == KF_OK) {
        trim(out.data);
        if (strcmp(out.data, j->bundle_sha) != 0) {
            kf_buf remote = KF_BUF_INIT;
            const char *wd = j->h->workdir;
            kf_buf_adds(&remote, strncmp(wd, "~/", 2) == 0 ? wd + 2 : wd);
            kf_buf_adds(&remote, "/bundle.tar.gz.part");
            rc = kf_ssh_upload(s, o->bundle_tar, remote.data, 0644, &r->used_scp, &err);
            kf_buf_release(&remote);
            if (rc == KF_OK) {
                kf_buf_reset(&script);
                kf_buf_addf(&script, unpack_script, stop_fn);
                const char *args[] = {j->bundle_sha};
                kf_buf_reset(&eout);
                rc = run_script(s, script.data, args, 1, j->h->workdir, NULL, &eout, &st, &err);
                if (rc == KF_OK && st != 0)
                    rc = kf_err_set(&err, KF_EIO, "unpacking the bundle failed: %s", eout.data);
            }
            r->uploaded = 1;
        }
    }
    if (rc == KF_OK)
        rc = install_key(j, s, &err);
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
    kf_buf_addf(&script, start_script, stop_fn);
    kf_buf_reset(&out);
    kf_buf_reset(&eout);
    const char *args[] = {ep, j->h->name, j->server_key ? j->server_key : ""};
    rc = run_script(s, script.data, args, 3, j->h->workdir, &out, &eout, &st, &err);
    r->t[KF_PHASE_START] = launch_since(t);
    if (rc == KF_OK && st != 0) {
        trim(eout.data);
        rc = kf_err_set(&err, KF_EIO, "the agent did not start (exit %d): %s", st, eout.data);
    }
    if (rc == KF_OK) {
        char word[16] = "";
        if (sscanf(out.data, "%15s %ld", word, &r->pid) != 2) {
            trim(out.data);
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
        tail_log(j, s, r->msg, sizeof r->msg);
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
    kf_buf_release(&eout);
    kf_buf_release(&script);
    print_result(j);
}

static void teardown_host(job *j)
{
    const kf_launch_opts *o = j->o;
    kf_launch_result *r = j->r;
    kf_ssh *s = NULL;
    kf_err err;
    kf_err_clear(&err);
    kf_buf out = KF_BUF_INIT, eout = KF_BUF_INIT, script = KF_BUF_INIT;
    int st = 0;
    uint64_t t = kf_mono_ns();
    int rc = connect_host(j, &s, &r->tries, &err);
    r->t[KF_PHASE_CONNECT] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_CONNECT, rc, err.msg);
        goto out;
    }
    t = kf_mono_ns();
    kf_buf_addf(&script, teardown_script, stop_fn);
    const char *args[] = {o->purge ? "purge" : ""};
    rc = run_script(s, script.data, args, 1, j->h->workdir, &out, &eout, &st, &err);
    r->t[KF_PHASE_STOP] = launch_since(t);
    if (rc == KF_OK && st != 0) {
        trim(eout.data);
        rc = kf_err_set(&err, KF_EIO, "the stop script failed (exit %d): %s", st, eout.data);
    }
    if (rc) {
        kf_launch_fail(r, KF_PHASE_STOP, rc, err.msg);
        goto out;
    }
    for (char *p = out.data; *p; p++)
        if (*p == '\n')
            *p = ' ';
    trim(out.data);
    snprintf(r->msg, sizeof r->msg, "%s", out.data);
out:
    kf_ssh_close(&s);
    /* The tunnel and, with --purge, the key go whether or not the node
     * answered: a node that is gone should not be waited for. */
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
        size_t removed = 0;
        if (kf_allow_remove(o->allow_file, j->h->name, &removed, &e2) != KF_OK)
            kf_warn("launch.allow_remove", "host=%s error=\"%s\"", j->h->name, e2.msg);
    }
    kf_buf_release(&out);
    kf_buf_release(&eout);
    kf_buf_release(&script);
    print_result(j);
}

static void *job_main(void *arg)
{
    job *j = arg;
    if (j->teardown)
        teardown_host(j);
    else
        launch_host(j);
    return NULL;
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
        snprintf(r[i].name, sizeof r[i].name, "%s", f->hosts[i].name);
        r[i].failed_at = -1;
        for (int p = 0; p < KF_PHASE_COUNT; p++)
            r[i].t[p] = -1;
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
