/* cmd_launch — the CLI commands `kfleet launch`, `kfleet teardown` and
 * `kfleet bundle`: flags, the inventory, the bundle tarball; the work itself
 * is launch.c's (per host) and deploy/bundle.sh's (the bundle).
 *
 * Launch and teardown run inside the coordinator daemon: the CLI parses the
 * inventory (so its errors are FILE:LINE:COL, before anything is sent),
 * packs the bundle, sends one `launch` control request and follows the
 * launch with `launch_status`, printing each host's line as it finishes.
 * Interrupted, it leaves the launch running in the daemon. Only a teardown
 * with no daemon running is done from here.
 *
 * The tarball is made here from the bundle directory, reproducibly (sorted
 * names, mtime 0, owner 0, gzip -n), so its sha256 changes only when a file
 * in the bundle does, and nodes that have it are not sent it again. */
#include "cli/cli.h"
#include "common/xalloc.h"
#include "cli/client.h"
#include "cli/options.h"
#include "common/log.h"
#include "common/signals.h"
#include "common/util.h"
#include "fleet/fleet_pb.h"
#include "fleet/launch.h"
#include "fleet/ssh.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int run_cmd(const char *cmd)
{
    int st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

/* The bundle as a tarball: `arg` itself when a file, else a reproducible
 * tar.gz of the directory (arg, this executable's dir when it is a bundle,
 * ./bundle) written into tmpdir. */
static int bundle_tarball(const char *arg, char *tmpdir, char *out, size_t n, char min_glibc[16],
                          kf_err *err)
{
    char dir[PATH_MAX] = "";
    struct stat st;
    if (arg) {
        if (stat(arg, &st) != 0)
            return kf_err_set(err, KF_EINVAL, "--bundle %s: %s", arg, strerror(errno));
        if (S_ISREG(st.st_mode)) {
            snprintf(out, n, "%s", arg);
            return KF_OK;
        }
        snprintf(dir, sizeof dir, "%s", arg);
    } else {
        char exe[PATH_MAX], m[PATH_MAX + 16];
        if (kf_exe_dir(exe, sizeof exe) == 0) {
            snprintf(m, sizeof m, "%s/MANIFEST", exe);
            if (file_exists(m))
                snprintf(dir, sizeof dir, "%s", exe);
        }
        if (!dir[0] && file_exists("bundle/MANIFEST"))
            snprintf(dir, sizeof dir, "bundle");
        if (!dir[0])
            return kf_err_set(err, KF_EINVAL,
                              "no bundle found (not run from one, and no ./bundle); run "
                              "`kfleet bundle` or pass --bundle DIR");
    }
    /* deploy/bundle.sh measured the newest glibc symbol version the bundle
     * needs; preflight refuses nodes older than that. */
    char gp[PATH_MAX + 32];
    snprintf(gp, sizeof gp, "%s/GLIBC_REQUIRED", dir);
    kf_buf g = KF_BUF_INIT;
    if (kf_buf_read_file(&g, gp) == KF_OK && g.len > 6 && strncmp(g.data, "GLIBC_", 6) == 0)
        snprintf(min_glibc, 16, "%.*s", (int)strcspn(g.data + 6, " \r\n"), g.data + 6);
    kf_buf_release(&g);
    char agent[PATH_MAX + 32];
    snprintf(agent, sizeof agent, "%s/kfleet-agent", dir);
    if (access(agent, X_OK) != 0)
        return kf_err_set(err, KF_EINVAL, "%s has no executable kfleet-agent; is it a bundle?",
                          dir);
    if (!mkdtemp(tmpdir))
        return kf_err_set(err, KF_EIO, "mkdtemp %s: %s", tmpdir, strerror(errno));
    snprintf(out, n, "%s/bundle.tar.gz", tmpdir);
    kf_buf cmd = KF_BUF_INIT;
    kf_buf_adds(&cmd, "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C ");
    kf_buf_add_shell_quoted(&cmd, dir);
    kf_buf_adds(&cmd, " -cf - . | gzip -n -1 > ");
    kf_buf_add_shell_quoted(&cmd, out);
    int rc = run_cmd(cmd.data);
    kf_buf_release(&cmd);
    if (rc != 0)
        return kf_err_set(err, KF_EIO, "could not pack the bundle %s (tar exit %d)", dir, rc);
    return KF_OK;
}

static void cleanup_tmp(const char *tmpdir, const char *tar)
{
    if (!tmpdir[0] || strstr(tmpdir, "XXXXXX"))
        return;
    unlink(tar);
    rmdir(tmpdir);
}

static int load_fleet(const char *cmd, const char *path, kf_fleet **f)
{
    kf_err err;
    kf_err_clear(&err);
    int rc = kf_fleet_load(path, f, &err);
    if (rc) {
        fprintf(stderr, "kfleet %s: %s\n", cmd, err.msg);
        /* An inventory that cannot be read is bad input, as a sweep file is. */
        return 2;
    }
    return 0;
}

/* The daemon runs in another directory: every path it is given is made
 * absolute here (realpath when the file exists, else against the cwd). */
static char *abs_path(const char *p)
{
    if (!p || !*p)
        return kf_xstrdup("");
    char buf[PATH_MAX];
    if (realpath(p, buf))
        return kf_xstrdup(buf);
    if (p[0] == '/' || !getcwd(buf, sizeof buf))
        return kf_xstrdup(p);
    size_t n = strlen(buf) + strlen(p) + 2;
    char *out = kf_xmalloc(n);
    snprintf(out, n, "%s/%s", buf, p);
    return out;
}

static volatile sig_atomic_t g_interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

static void print_host(const Kfleet__LaunchHostState *h)
{
    kf_launch_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", h->name ? h->name : "");
    r.rc = h->rc;
    r.failed_at = h->failed_at;
    snprintf(r.msg, sizeof r.msg, "%s", h->msg ? h->msg : "");
    for (int p = 0; p < KF_PHASE_COUNT; p++)
        r.t[p] = (size_t)p < h->n_t ? h->t[p] : -1;
    kf_buf b = KF_BUF_INIT;
    kf_launch_format(&r, &b);
    printf("%s\n", b.data);
    fflush(stdout);
    kf_buf_release(&b);
}

/* Sends the request, then polls the launch's table, printing each host's
 * line as it finishes. 0 all hosts ok, 1 otherwise (or interrupted: the
 * launch goes on in the daemon). */
static int ask_and_follow(const char *cmd, kf_client *cl, Kfleet__LaunchRequest *lr,
                          const char *inventory, const char *what, int *taken)
{
    kf_err err;
    kf_err_clear(&err);
    *taken = 0;
    Kfleet__ControlRequest req = KFLEET__CONTROL_REQUEST__INIT;
    req.body_case = KFLEET__CONTROL_REQUEST__BODY_LAUNCH;
    req.launch = lr;
    Kfleet__ControlReply *rep = NULL;
    if (kf_client_call(cl, &req, 10000, &rep, &err) != KF_OK) {
        fprintf(stderr, "kfleet %s: %s\n", cmd, err.msg);
        return err.code == KF_EINVAL ? 2 : 1;
    }
    if (!rep->launch) {
        kfleet__control_reply__free_unpacked(rep, NULL);
        fprintf(stderr, "kfleet %s: the coordinator's reply has no launch\n", cmd);
        return 1;
    }
    uint32_t id = rep->launch->id;
    size_t nhosts = rep->launch->n_hosts;
    const char *kind = lr->teardown ? "teardown" : "launch";
    if (rep->launch->attached) {
        fprintf(stderr,
                "kfleet %s: %s #%u of these hosts is already running in the coordinator; "
                "following it\n",
                cmd, kind, id);
    } else {
        *taken = 1;
        fprintf(stderr, "kfleet %s: %s #%u (%zu host%s) runs in the coordinator\n", cmd, kind, id,
                nhosts, nhosts == 1 ? "" : "s");
    }
    kfleet__control_reply__free_unpacked(rep, NULL);
    char *printed = kf_xcalloc(nhosts ? nhosts : 1, 1);
    kf_sigsave old;
    g_interrupted = 0;
    kf_signals_catch(on_interrupt, KF_SIGNALS_KEEP_PIPE, &old);
    int exit = 1, done = 0;
    while (!done) {
        if (g_interrupted) {
            fprintf(stderr,
                    "kfleet %s: interrupted; %s %u goes on in the coordinator (`kfleet status` "
                    "shows the agents as they register; `kfleet %s %s` again follows it)\n",
                    cmd, kind, id, cmd, inventory);
            break;
        }
        Kfleet__ControlRequest q = KFLEET__CONTROL_REQUEST__INIT;
        q.body_case = KFLEET__CONTROL_REQUEST__BODY_LAUNCH_STATUS;
        q.launch_status = id;
        if (kf_client_call(cl, &q, 10000, &rep, &err) != KF_OK) {
            if (g_interrupted)
                continue;
            fprintf(stderr, "kfleet %s: lost track of %s %u: %s\n", cmd, kind, id, err.msg);
            break;
        }
        const Kfleet__LaunchState *st = rep->launch;
        size_t ok = 0;
        for (size_t i = 0; st && i < st->n_hosts && i < nhosts; i++) {
            const Kfleet__LaunchHostState *h = st->hosts[i];
            ok += h->done && h->rc == 0;
            if (h->done && !printed[i]) {
                print_host(h);
                printed[i] = 1;
            }
        }
        if (st && st->done) {
            done = 1;
            printf("%zu of %zu hosts %s\n", ok, nhosts, what);
            exit = ok == nhosts ? 0 : 1;
        }
        kfleet__control_reply__free_unpacked(rep, NULL);
        if (!done) {
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, NULL);
        }
    }
    kf_signals_restore(&old);
    free(printed);
    return exit;
}

static void free_hosts(Kfleet__LaunchRequest *lr)
{
    for (size_t i = 0; i < lr->n_hosts; i++) {
        kf_fleet_host_pb_release(lr->hosts[i]);
        free(lr->hosts[i]);
    }
    free(lr->hosts);
    lr->hosts = NULL;
    lr->n_hosts = 0;
}

/* The request's hosts, with identities made absolute (the daemon runs in
 * another directory). */
static void fill_hosts(Kfleet__LaunchRequest *lr, const kf_fleet *f)
{
    lr->hosts = kf_xcalloc(f->nhosts ? f->nhosts : 1, sizeof *lr->hosts);
    for (size_t i = 0; i < f->nhosts; i++) {
        Kfleet__LaunchHost *x = kf_xmalloc(sizeof *x);
        kf_fleet_host_to_pb(&f->hosts[i], x);
        free(x->identity);
        x->identity = abs_path(f->hosts[i].identity);
        lr->hosts[lr->n_hosts++] = x;
    }
}

static int no_daemon(const char *cmd, const kf_err *err)
{
    if (err->code == KF_EUNAVAIL)
        fprintf(stderr,
                "kfleet %s: the coordinator daemon is not running, and the launch runs inside it "
                "(it keeps the SSH tunnels): start it with `kfleet serve` and try again (%s)\n",
                cmd, err->msg);
    else
        fprintf(stderr, "kfleet %s: %s\n", cmd, err->msg);
    return 1;
}

/* What the flags of launch and teardown set: the request's own fields, and
 * what the CLI still reads or sends made absolute (request_fill). */
typedef struct launch_args {
    Kfleet__LaunchRequest lr;
    const char *bundle, *known_hosts, *inventory, *direct;
    int attempts;
    kf_paths paths; /* the home's */
    kf_fleet *f;    /* the inventory, the command's to destroy */
} launch_args;

/* --direct: the endpoint agents connect to, tcp:// only. */
static int tcp_endpoint(void *direct, const char *arg)
{
    if (strncmp(arg, "tcp://", 6) != 0)
        return -1;
    *(const char **)direct = arg;
    return 0;
}

/* The rows of the flags launch and teardown share, into a. */
#define KNOWN_HOSTS_OPT(a) KF_OPT_STRING(0, "known-hosts", &(a)->known_hosts)
#define ATTEMPTS_OPT(a) KF_OPT_INT("attempts", &(a)->attempts, 1, 100, "a number from 1 to 100")

/* The flags of self (opts, into a: launch's or teardown's), then the
 * home's paths and its one INVENTORY into a (checked here, before
 * anything is sent: its errors point at FILE:LINE:COL of the user's file).
 * Returns KF_OPT_GO to go on, else the exit status (--help, a bad flag, a
 * bad inventory). */
static int start_args(const kf_cmd_entry *self, int argc, char **argv, const kf_option *opts,
                      const char *home, launch_args *a)
{
    a->attempts = (int)a->lr.attempts;
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO)
        return rc;
    a->lr.attempts = (uint32_t)a->attempts;
    if (a->direct) /* the request's strings start as protobuf-c's "" */
        a->lr.direct = (char *)a->direct;
    if (optind != argc - 1)
        return kf_opt_error(self, "wants exactly one INVENTORY file");
    a->inventory = argv[optind];
    if (kf_cli_paths(home, 1, &a->paths))
        return 1;
    rc = load_fleet(self->name, a->inventory, &a->f);
    return rc ? rc : KF_OPT_GO;
}

/* The request's part that launch and teardown share: the hosts, and the
 * inventory and known_hosts made absolute; request_release frees it. */
static void request_fill(launch_args *a)
{
    fill_hosts(&a->lr, a->f);
    a->lr.inventory = abs_path(a->inventory);
    a->lr.known_hosts = abs_path(a->known_hosts);
    const char *sock = getenv("SSH_AUTH_SOCK");
    a->lr.ssh_auth_sock = sock ? (char *)sock : (char *)"";
}

static void request_release(launch_args *a)
{
    free_hosts(&a->lr);
    free(a->lr.inventory);
    free(a->lr.known_hosts);
    a->lr.inventory = a->lr.known_hosts = NULL;
}

static int cmd_launch(int argc, char **argv, const char *home)
{
    launch_args a = {.lr = KFLEET__LAUNCH_REQUEST__INIT};
    a.lr.min_free_bytes = 1ull << 30;
    const kf_option opts[] = {
        KNOWN_HOSTS_OPT(&a),
        KF_OPT_FLAG("accept-new", &a.lr.accept_new),
        KF_OPT_CALLBACK("direct", &a.direct, tcp_endpoint, "tcp://HOST:PORT"),
        KF_OPT_STRING(0, "bundle", &a.bundle),
        KF_OPT_SIZE("min-free", &a.lr.min_free_bytes, "a size like 512M or 2G"),
        KF_OPT_FLAG("need-gpu", &a.lr.need_gpu),
        ATTEMPTS_OPT(&a),
        KF_OPT_DURATION("connect-timeout", &a.lr.connect_timeout_s, 0, KF_OPT_ANY, KF_OPT_ABOVE_MIN,
                        "a duration like 10s"),
        KF_OPT_DURATION("register-timeout", &a.lr.register_timeout_s, 0, KF_OPT_ANY,
                        KF_OPT_ABOVE_MIN, "a duration like 60s"),
        KF_OPT_END,
    };
    int rc = start_args(&kf_cmd_launch, argc, argv, opts, home, &a);
    if (rc != KF_OPT_GO)
        return rc;
    if (a.f->nhosts == 0) {
        fprintf(stderr, "kfleet launch: %s: the inventory has no hosts\n", a.inventory);
        kf_fleet_destroy(&a.f);
        return 2;
    }
    kf_err err;
    kf_err_clear(&err);
    kf_client *cl = NULL;
    if (kf_client_open(&a.paths, &cl, &err) != KF_OK) {
        kf_fleet_destroy(&a.f);
        return no_daemon("launch", &err);
    }
    char tmpdir[] = "/tmp/kfleet-bundle.XXXXXX", tar[PATH_MAX], min_glibc[16] = "";
    tar[0] = '\0';
    if ((rc = bundle_tarball(a.bundle, tmpdir, tar, sizeof tar, min_glibc, &err)) != KF_OK) {
        fprintf(stderr, "kfleet launch: %s\n", err.msg);
        cleanup_tmp(tmpdir, tar);
        kf_client_close(&cl);
        kf_fleet_destroy(&a.f);
        return rc == KF_EINVAL ? 2 : 1;
    }
    char *tar_abs = abs_path(tar);
    request_fill(&a);
    a.lr.bundle_tar = tar_abs;
    /* A tarball made here is the daemon's to remove once it is sent. */
    a.lr.bundle_owned = strstr(tmpdir, "XXXXXX") == NULL;
    a.lr.min_glibc = min_glibc;
    int taken = 0;
    int exit = ask_and_follow("launch", cl, &a.lr, a.inventory, "up", &taken);
    if (!taken)
        cleanup_tmp(tmpdir, tar);
    request_release(&a);
    free(tar_abs);
    kf_client_close(&cl);
    kf_fleet_destroy(&a.f);
    return exit;
}

static int cmd_teardown(int argc, char **argv, const char *home)
{
    launch_args a = {.lr = KFLEET__LAUNCH_REQUEST__INIT};
    a.lr.teardown = 1;
    a.lr.attempts = 2;
    const kf_option opts[] = {
        KNOWN_HOSTS_OPT(&a),
        KF_OPT_FLAG("purge", &a.lr.purge),
        ATTEMPTS_OPT(&a),
        KF_OPT_END,
    };
    int rc = start_args(&kf_cmd_teardown, argc, argv, opts, home, &a);
    if (rc != KF_OPT_GO)
        return rc;
    const char *what = a.lr.purge ? "stopped and purged" : "stopped";
    kf_err err;
    kf_err_clear(&err);
    kf_client *cl = NULL;
    if (kf_client_open(&a.paths, &cl, &err) == KF_OK) {
        request_fill(&a);
        int taken = 0;
        int exit = ask_and_follow("teardown", cl, &a.lr, a.inventory, what, &taken);
        request_release(&a);
        kf_client_close(&cl);
        kf_fleet_destroy(&a.f);
        return exit;
    }
    /* No daemon (it crashed, or was stopped first): the agents may still
     * run on paid nodes, so stop them from here; there are no tunnels left
     * to close. */
    fprintf(stderr, "kfleet teardown: no coordinator running; stopping the agents from here\n");
    kf_launch_opts o = {0};
    o.allow_file = a.paths.allow;
    o.known_hosts = a.known_hosts;
    o.purge = a.lr.purge;
    o.attempts = (int)a.lr.attempts;
    o.progress = stdout;
    kf_launch_result *res = NULL;
    kf_err_clear(&err);
    rc = kf_launch_teardown(a.f, &o, &res, &err);
    if (!res) {
        fprintf(stderr, "kfleet teardown: %s\n", err.msg);
        kf_fleet_destroy(&a.f);
        return 1;
    }
    size_t ok = 0;
    for (size_t i = 0; i < a.f->nhosts; i++)
        ok += res[i].rc == KF_OK;
    size_t n = a.f->nhosts;
    printf("%zu of %zu hosts %s\n", ok, n, what);
    free(res);
    kf_fleet_destroy(&a.f);
    return ok == n ? 0 : 1;
}

static int cmd_bundle(int argc, char **argv, const char *home)
{
    (void)home;
    const kf_cmd_entry *self = &kf_cmd_bundle;
    const char *out = "bundle";
    const kf_option opts[] = {
        KF_OPT_STRING(0, "out", &out),
        KF_OPT_END,
    };
    int rc = kf_opt_parse(self, argc, argv, opts);
    if (rc != KF_OPT_GO || (rc = kf_opt_no_args(self, argc, argv)) != KF_OPT_GO)
        return rc;
    /* A build tree links kernels/ to the sources; the script sits beside. */
    char exe[PATH_MAX], k[PATH_MAX + 16], src[PATH_MAX], script[PATH_MAX + 32];
    if (kf_exe_dir(exe, sizeof exe) != 0) {
        fprintf(stderr, "kfleet bundle: cannot find this executable's directory\n");
        return 1;
    }
    snprintf(k, sizeof k, "%s/kernels", exe);
    if (!realpath(k, src)) {
        fprintf(stderr, "kfleet bundle: %s is missing: run this from a build tree\n", k);
        return 1;
    }
    char *slash = strrchr(src, '/');
    if (slash)
        *slash = '\0';
    snprintf(script, sizeof script, "%s/deploy/bundle.sh", src);
    if (!file_exists(script)) {
        fprintf(stderr,
                "kfleet bundle: %s not found: `kfleet bundle` runs from a build tree (a "
                "bundle is already one)\n",
                script);
        return 1;
    }
    kf_buf cmd = KF_BUF_INIT;
    kf_buf_adds(&cmd, "bash ");
    kf_buf_add_shell_quoted(&cmd, script);
    kf_buf_addc(&cmd, ' ');
    kf_buf_add_shell_quoted(&cmd, exe);
    kf_buf_addc(&cmd, ' ');
    kf_buf_add_shell_quoted(&cmd, out);
    rc = run_cmd(cmd.data);
    kf_buf_release(&cmd);
    if (rc != 0) {
        fprintf(stderr, "kfleet bundle: deploy/bundle.sh failed (exit %d)\n", rc);
        return 1;
    }
    printf("bundle in %s\n", out);
    return 0;
}

const kf_cmd_entry kf_cmd_launch = {
    "launch",
    cmd_launch,
    "Brings agents up on the hosts of an inventory.",
    "launch INVENTORY [--known-hosts FILE] [--accept-new] [--direct ENDPOINT]\n"
    "       [--bundle DIR|TARBALL] [--min-free SIZE] [--need-gpu] [--attempts N]\n"
    "       [--connect-timeout DUR] [--register-timeout DUR]",
    "Brings agents up on every host of INVENTORY, in parallel, one line per host\n"
    "with the time of each phase (connect, preflight, upload, tunnel, start,\n"
    "register). The launch runs inside `kfleet serve` (which keeps each node's SSH\n"
    "tunnel) and goes on there if this command is interrupted. A host's provider\n"
    "says how its agents come up: a cluster's login node, for one, submits them as\n"
    "batch jobs, and jobs still pending at --register-timeout are reported with\n"
    "the scheduler's reason (docs/providers.md).\n\n"
    "  --known-hosts FILE     host keys to check against (default ~/.ssh/known_hosts)\n"
    "  --accept-new           record the key of a host seen for the first time\n"
    "  --direct ENDPOINT      agents connect to ENDPOINT (tcp://HOST:PORT), no tunnel\n"
    "  --bundle DIR|TARBALL   what to install (default: this bundle, else ./bundle)\n"
    "  --min-free SIZE        free space the work dir needs (default 1G)\n"
    "  --need-gpu             refuse a node without a working GPU\n"
    "  --attempts N           connection attempts per host (default 6, backoff from 0.5 s)\n"
    "  --connect-timeout DUR  per attempt (default 10s); once connected, a command on\n"
    "                         the node may be quiet for 2 minutes\n"
    "  --register-timeout DUR wait for each agent to register (default 60s)",
};

const kf_cmd_entry kf_cmd_teardown = {
    "teardown",
    cmd_teardown,
    "Stops the agents of an inventory.",
    "teardown INVENTORY [--purge] [--known-hosts FILE] [--attempts N]",
    "Stops the agents of INVENTORY (SIGTERM: they flush their outboxes first) and\n"
    "closes their tunnels. --purge also removes their work dirs and their keys\n"
    "from the coordinator's allow list. A cluster's batch jobs are cancelled (the\n"
    "agents drain on the SIGTERM) and its relay stopped (docs/providers.md).\n"
    "Runs inside `kfleet serve`, or from here when no coordinator runs.",
};

const kf_cmd_entry kf_cmd_bundle = {
    "bundle",
    cmd_bundle,
    "Builds the relocatable bundle that launch installs.",
    "bundle [--out DIR]",
    "Builds the relocatable bundle (binaries + their libraries, deploy/bundle.sh)\n"
    "from this build into DIR (default ./bundle). `kfleet launch` installs it.",
};
