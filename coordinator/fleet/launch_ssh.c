/* launch_ssh — the steps of a launch that talk to one host over SSH and
 * that every flow shares: the plain host's (launch.c) and a provider's own
 * (a cluster login node's, say: its row's launch). Connecting with
 * retries, running a script with sh -s, preflight, the bundle's upload, an
 * agent's key pair. */
#include "fleet/launch.h"
#include "fleet/launch_int.h"

#include "common/keys.h"
#include "common/log.h"
#include "common/util.h"
#include "fleet/preflight.h"
#include "fleet/ssh.h"

#include <errno.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Stops the agent of the work dir in $1: SIGTERM (it flushes its outbox),
 * up to 15 s, then SIGKILL. A pid is ours only when its command line names
 * kfleet-agent: pids are reused, and a zombie has an empty one. */
const char launch_stop_fn[] =
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

void kf_launch_shell_path(kf_buf *b, const char *wd)
{
    if (strcmp(wd, "~") == 0) {
        kf_buf_adds(b, "\"$HOME\"");
    } else if (strncmp(wd, "~/", 2) == 0) {
        kf_buf_adds(b, "\"$HOME\"/");
        kf_buf_add_shell_quoted(b, wd + 2);
    } else {
        kf_buf_add_shell_quoted(b, wd);
    }
}

int kf_launch_fail(kf_launch_result *r, int phase, int rc, const char *msg)
{
    r->rc = rc ? rc : KF_EIO;
    r->failed_at = phase;
    snprintf(r->msg, sizeof r->msg, "%s", msg);
    return r->rc;
}

/* Runs a script on the node with sh -s; args are quoted here. */
int launch_run_script(kf_ssh *s, const char *script, const char *const *args, size_t nargs,
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
        kf_buf_add_shell_quoted(&cmd, args[i]);
    }
    int rc = kf_ssh_exec(s, cmd.data, script, strlen(script), out, errout, status, err);
    kf_buf_release(&cmd);
    return rc;
}

int launch_run_checked(const job *j, kf_ssh *s, const char *script, const char *const *args,
                       size_t nargs, kf_buf *out, const char *what, kf_err *err)
{
    kf_buf eout = KF_BUF_INIT;
    int st = 0;
    int rc = launch_run_script(s, script, args, nargs, j->h->workdir, out, &eout, &st, err);
    if (rc == KF_OK && st != 0) {
        launch_trim(eout.data);
        rc = kf_err_set(err, KF_EIO, "%s (exit %d): %s", what, st, eout.data);
    }
    kf_buf_release(&eout);
    return rc;
}

void launch_stop_phase(job *j, kf_ssh *s, const char *script, const char *const *args, size_t nargs)
{
    kf_launch_result *r = j->r;
    kf_buf out = KF_BUF_INIT;
    kf_err err;
    uint64_t t = kf_mono_ns();
    int rc = launch_run_checked(j, s, script, args, nargs, &out, "the stop script failed", &err);
    r->t[KF_PHASE_STOP] = launch_since(t);
    if (rc) {
        kf_launch_fail(r, KF_PHASE_STOP, rc, err.msg);
    } else {
        for (char *p = out.data; *p; p++)
            if (*p == '\n')
                *p = ' ';
        launch_trim(out.data);
        snprintf(r->msg, sizeof r->msg, "%s", out.data);
    }
    kf_buf_release(&out);
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
    /* Preflight's slowest steps (nvidia-smi on a booting pod, python's
     * imports on a cold disk) are each cut at 30 s on the node; a node quiet
     * for four times that is hung, not slow. */
    so->call_timeout_s = so->timeout_s > 120 ? so->timeout_s : 120;
    so->cancel = j->o->cancel;
    so->agent_sock = j->o->agent_sock;
}

/* kf_ssh_connect's retries, one attempt per call, so that a cancel (the
 * daemon shutting down) ends the backoff at once instead of after minutes
 * of it. A failure is worth another attempt when the host could not be
 * reached (KF_EUNAVAIL: refused, timed out, handshake cut short), as there. */
int launch_connect(const job *j, kf_ssh **s, int *tries, kf_err *err)
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

int launch_connect_phase(job *j, kf_ssh **s, kf_err *err)
{
    uint64_t t = kf_mono_ns();
    int rc = launch_connect(j, s, &j->r->tries, err);
    j->r->t[KF_PHASE_CONNECT] = launch_since(t);
    if (rc)
        kf_launch_fail(j->r, KF_PHASE_CONNECT, rc, err->msg);
    return rc;
}

void launch_trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
}

/* The agent's key pair: the one already on the node, else a new one written
 * there (0600). Its public key goes into the coordinator's allow list. */
int launch_install_key(job *j, kf_ssh *s, const char *key_rel, const char *agent_name, kf_err *err)
{
    const char *allow = j->o->allow_file;
    kf_buf cmd = KF_BUF_INIT, out = KF_BUF_INIT;
    kf_buf_adds(&cmd, "head -n 1 ");
    kf_launch_shell_path(&cmd, j->h->workdir);
    kf_buf_adds(&cmd, "/");
    kf_buf_add_shell_quoted(&cmd, key_rel);
    kf_buf_adds(&cmd, " 2>/dev/null");
    int st = 0;
    int rc = kf_ssh_exec(s, cmd.data, NULL, 0, &out, NULL, &st, err);
    kf_buf_release(&cmd);
    if (rc)
        goto out;
    char pub[KF_KEY_Z85 + 1] = "";
    launch_trim(out.data);
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
            kf_buf_adds(&remote, "/");
            kf_buf_adds(&remote, key_rel);
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
    rc = kf_allow_add(allow, pub, agent_name, err);
    if (rc == KF_EEXIST) {
        /* The node's work dir was purged and a new key made: replace. */
        size_t removed = 0;
        if ((rc = kf_allow_remove(allow, agent_name, &removed, err)) == KF_OK)
            rc = kf_allow_add(allow, pub, agent_name, err);
    }
out:
    kf_buf_release(&out);
    return rc;
}

void launch_tail(job *j, kf_ssh *s, const char *file_rel, char *msg, size_t n)
{
    kf_buf cmd = KF_BUF_INIT, out = KF_BUF_INIT;
    kf_buf_adds(&cmd, "tail -n 3 ");
    kf_launch_shell_path(&cmd, j->h->workdir);
    kf_buf_adds(&cmd, "/");
    kf_buf_add_shell_quoted(&cmd, file_rel);
    kf_buf_adds(&cmd, " 2>/dev/null");
    int st;
    kf_err e;
    if (kf_ssh_exec(s, cmd.data, NULL, 0, &out, NULL, &st, &e) == KF_OK && out.len) {
        launch_trim(out.data);
        size_t l = strlen(msg);
        snprintf(msg + l, n - l, "; %s ends: %s", file_rel, out.data);
    }
    kf_buf_release(&cmd);
    kf_buf_release(&out);
}

/* Runs the preflight script in the work dir and checks what it found; the
 * summary line goes to summary either way. */
int launch_preflight(job *j, kf_ssh *s, int need_gpu, char *summary, size_t summary_len,
                     kf_err *err)
{
    const kf_launch_opts *o = j->o;
    kf_buf out = KF_BUF_INIT, eout = KF_BUF_INIT;
    int st = 0;
    int rc =
        launch_run_script(s, kf_preflight_script(), NULL, 0, j->h->workdir, &out, &eout, &st, err);
    if (rc == KF_OK) {
        kf_preflight pf;
        memset(&pf, 0, sizeof pf);
        rc = kf_preflight_parse(out.data, out.len, &pf, err);
        if (rc == KF_OK) {
            kf_preflight_summary(&pf, summary, summary_len);
            rc = kf_preflight_check(&pf, o->min_free_bytes, need_gpu, err);
            if (rc == KF_OK && o->min_glibc[0] && pf.glibc &&
                kf_version_cmp(pf.glibc, o->min_glibc) < 0)
                rc = kf_err_set(err, KF_EINVAL,
                                "glibc %s on the node, the bundle needs %s or newer (the glibc of "
                                "the machine it was built on): build the bundle on an older "
                                "distribution, or use a newer image",
                                pf.glibc, o->min_glibc);
        }
        kf_preflight_free(&pf);
    }
    kf_buf_release(&out);
    kf_buf_release(&eout);
    return rc;
}

/* Makes the work dir and sends the bundle unless the node already has this
 * one (by sha256), unpacking it into bundle/. */
int launch_upload(job *j, kf_ssh *s, int *uploaded, int *used_scp, kf_err *err)
{
    const kf_launch_opts *o = j->o;
    kf_buf out = KF_BUF_INIT, eout = KF_BUF_INIT, script = KF_BUF_INIT;
    int st = 0;
    kf_buf_adds(&script, "mkdir -p ");
    kf_launch_shell_path(&script, j->h->workdir);
    kf_buf_adds(&script, " && cat ");
    kf_launch_shell_path(&script, j->h->workdir);
    kf_buf_adds(&script, "/bundle.sha256 2>/dev/null; true");
    int rc = kf_ssh_exec(s, script.data, NULL, 0, &out, &eout, &st, err);
    if (rc == KF_OK && st != 0)
        rc = kf_err_set(err, KF_EIO, "cannot create the work dir %s: %s", j->h->workdir, eout.data);
    if (rc == KF_OK) {
        launch_trim(out.data);
        if (strcmp(out.data, j->bundle_sha) != 0) {
            kf_buf remote = KF_BUF_INIT;
            const char *wd = j->h->workdir;
            kf_buf_adds(&remote, strncmp(wd, "~/", 2) == 0 ? wd + 2 : wd);
            kf_buf_adds(&remote, "/bundle.tar.gz.part");
            rc = kf_ssh_upload(s, o->bundle_tar, remote.data, 0644, used_scp, err);
            kf_buf_release(&remote);
            if (rc == KF_OK) {
                kf_buf_reset(&script);
                kf_buf_addf(&script, unpack_script, launch_stop_fn);
                const char *args[] = {j->bundle_sha};
                rc = launch_run_checked(j, s, script.data, args, 1, NULL,
                                        "unpacking the bundle failed", err);
            }
            *uploaded = 1;
        }
    }
    kf_buf_release(&out);
    kf_buf_release(&eout);
    kf_buf_release(&script);
    return rc;
}
