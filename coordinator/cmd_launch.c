/* cmd_launch — the CLI commands `kfleet launch`, `kfleet teardown` and
 * `kfleet bundle`: flags, the inventory, the bundle tarball; the work itself
 * is launch.c's (per host) and deploy/bundle.sh's (the bundle).
 *
 * The tarball is made here from the bundle directory, reproducibly (sorted
 * names, mtime 0, owner 0, gzip -n), so its sha256 changes only when a file
 * in the bundle does, and nodes that have it are not sent it again. */
#include "launch.h"

#include "log.h"
#include "ssh.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char kf_cmd_launch_usage[] =
    "launch INVENTORY [--known-hosts FILE] [--accept-new] [--direct ENDPOINT]\n"
    "       [--bundle DIR|TARBALL] [--min-free SIZE] [--need-gpu] [--attempts N]\n"
    "       [--connect-timeout DUR] [--register-timeout DUR]";

const char kf_cmd_launch_summary[] =
    "Brings agents up on every host of INVENTORY, in parallel, one line per host\n"
    "with the time of each phase (connect, preflight, upload, tunnel, start,\n"
    "register). Needs a running `kfleet serve`: it keeps each node's SSH tunnel.\n"
    "  --known-hosts FILE     host keys to check against (default ~/.ssh/known_hosts)\n"
    "  --accept-new           record the key of a host seen for the first time\n"
    "  --direct ENDPOINT      agents connect to ENDPOINT (tcp://HOST:PORT), no tunnel\n"
    "  --bundle DIR|TARBALL   what to install (default: this bundle, else ./bundle)\n"
    "  --min-free SIZE        free space the work dir needs (default 1G)\n"
    "  --need-gpu             refuse a node without a working GPU\n"
    "  --attempts N           connection attempts per host (default 6, backoff from 0.5 s)\n"
    "  --connect-timeout DUR  per attempt (default 10s)\n"
    "  --register-timeout DUR wait for each agent to register (default 60s)";

const char kf_cmd_teardown_usage[] =
    "teardown INVENTORY [--purge] [--known-hosts FILE] [--attempts N]";

const char kf_cmd_teardown_summary[] =
    "Stops the agents of INVENTORY (SIGTERM: they flush their outboxes first) and\n"
    "closes their tunnels. --purge also removes their work dirs and their keys\n"
    "from the coordinator's allow list.";

const char kf_cmd_bundle_usage[] = "bundle [--out DIR]";

const char kf_cmd_bundle_summary[] =
    "Builds the relocatable bundle (binaries + their libraries, deploy/bundle.sh)\n"
    "from this build into DIR (default ./bundle). `kfleet launch` installs it.";

int kf_launch_parse_size(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v))
        return KF_EINVAL;
    double mul = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1024.0;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1024.0 * 1024;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 't':
    case 'T':
        mul = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default:
        break;
    }
    if (mul > 1 && (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0))
        end += strlen(end);
    if (*end || v * mul > 1.8e19)
        return KF_EINVAL;
    *out = (uint64_t)(v * mul);
    return KF_OK;
}

static int usage_err(const char *cmd, const char *usage, const char *what, const char *arg)
{
    fprintf(stderr, "kfleet %s: %s%s%s\nusage: kfleet %.*s\n", cmd, what, arg ? " " : "",
            arg ? arg : "", (int)strcspn(usage, "\n"), usage);
    return 2;
}

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
    kf_ssh_quote(&cmd, dir);
    kf_buf_adds(&cmd, " -cf - . | gzip -n -1 > ");
    kf_ssh_quote(&cmd, out);
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

static int print_summary(const kf_fleet *f, const kf_launch_result *r, const char *what)
{
    size_t ok = 0;
    for (size_t i = 0; i < f->nhosts; i++)
        ok += r[i].rc == KF_OK;
    printf("%zu of %zu hosts %s\n", ok, f->nhosts, what);
    return ok == f->nhosts ? 0 : 1;
}

static int load_fleet(const char *cmd, const char *path, kf_fleet **f)
{
    kf_err err;
    kf_err_clear(&err);
    int rc = kf_fleet_load(path, f, &err);
    if (rc) {
        fprintf(stderr, "kfleet %s: %s\n", cmd, err.msg);
        return rc == KF_EINVAL ? 2 : 1;
    }
    return 0;
}

enum {
    O_KNOWN = 1000,
    O_ACCEPT,
    O_DIRECT,
    O_BUNDLE,
    O_MINFREE,
    O_GPU,
    O_ATTEMPTS,
    O_CTO,
    O_RTO,
    O_PURGE,
    O_OUT
};

int kf_cmd_launch(int argc, char **argv, const kf_paths *p)
{
    static const struct option opts[] = {{"known-hosts", required_argument, 0, O_KNOWN},
                                         {"accept-new", no_argument, 0, O_ACCEPT},
                                         {"direct", required_argument, 0, O_DIRECT},
                                         {"bundle", required_argument, 0, O_BUNDLE},
                                         {"min-free", required_argument, 0, O_MINFREE},
                                         {"need-gpu", no_argument, 0, O_GPU},
                                         {"attempts", required_argument, 0, O_ATTEMPTS},
                                         {"connect-timeout", required_argument, 0, O_CTO},
                                         {"register-timeout", required_argument, 0, O_RTO},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    kf_launch_opts o = {0};
    o.paths = p;
    o.min_free_bytes = 1ull << 30;
    o.progress = stdout;
    const char *bundle = NULL;
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case O_KNOWN:
            o.known_hosts = optarg;
            break;
        case O_ACCEPT:
            o.accept_new = 1;
            break;
        case O_DIRECT:
            if (strncmp(optarg, "tcp://", 6) != 0)
                return usage_err("launch", kf_cmd_launch_usage,
                                 "--direct wants tcp://HOST:PORT, not", optarg);
            o.direct = optarg;
            break;
        case O_BUNDLE:
            bundle = optarg;
            break;
        case O_MINFREE:
            if (kf_launch_parse_size(optarg, &o.min_free_bytes))
                return usage_err("launch", kf_cmd_launch_usage,
                                 "--min-free wants a size like 512M or 2G, not", optarg);
            break;
        case O_GPU:
            o.need_gpu = 1;
            break;
        case O_ATTEMPTS:
            o.attempts = atoi(optarg);
            if (o.attempts < 1 || o.attempts > 100)
                return usage_err("launch", kf_cmd_launch_usage, "--attempts wants 1..100, not",
                                 optarg);
            break;
        case O_CTO:
        case O_RTO: {
            double d = 0;
            if (kf_parse_duration(optarg, &d) || d <= 0)
                return usage_err("launch", kf_cmd_launch_usage,
                                 "a timeout wants a duration like 10s, not", optarg);
            if (ch == O_CTO)
                o.connect_timeout_s = d;
            else
                o.register_timeout_s = d;
            break;
        }
        case 'h':
            printf("usage: kfleet %s\n", kf_cmd_launch_usage);
            return 0;
        default:
            return usage_err("launch", kf_cmd_launch_usage,
                             "unknown option or missing value:", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_err("launch", kf_cmd_launch_usage, "wants exactly one INVENTORY file", NULL);
    kf_fleet *f = NULL;
    int rc = load_fleet("launch", argv[optind], &f);
    if (rc)
        return rc;
    kf_err err;
    kf_err_clear(&err);
    char tmpdir[] = "/tmp/kfleet-bundle.XXXXXX", tar[PATH_MAX];
    tar[0] = '\0';
    kf_launch_result *res = NULL;
    if ((rc = bundle_tarball(bundle, tmpdir, tar, sizeof tar, o.min_glibc, &err)) == KF_OK) {
        o.bundle_tar = tar;
        rc = kf_launch_run(f, &o, &res, &err);
    }
    cleanup_tmp(tmpdir, tar);
    if (!res) {
        fprintf(stderr, "kfleet launch: %s\n", err.msg);
        kf_fleet_destroy(&f);
        return rc == KF_EINVAL ? 2 : 1;
    }
    int exit = print_summary(f, res, "up");
    free(res);
    kf_fleet_destroy(&f);
    return exit;
}

int kf_cmd_teardown(int argc, char **argv, const kf_paths *p)
{
    static const struct option opts[] = {{"known-hosts", required_argument, 0, O_KNOWN},
                                         {"purge", no_argument, 0, O_PURGE},
                                         {"attempts", required_argument, 0, O_ATTEMPTS},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    kf_launch_opts o = {0};
    o.paths = p;
    o.progress = stdout;
    o.attempts = 2;
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case O_KNOWN:
            o.known_hosts = optarg;
            break;
        case O_PURGE:
            o.purge = 1;
            break;
        case O_ATTEMPTS:
            o.attempts = atoi(optarg);
            if (o.attempts < 1 || o.attempts > 100)
                return usage_err("teardown", kf_cmd_teardown_usage, "--attempts wants 1..100, not",
                                 optarg);
            break;
        case 'h':
            printf("usage: kfleet %s\n", kf_cmd_teardown_usage);
            return 0;
        default:
            return usage_err("teardown", kf_cmd_teardown_usage,
                             "unknown option or missing value:", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return usage_err("teardown", kf_cmd_teardown_usage, "wants exactly one INVENTORY file",
                         NULL);
    kf_fleet *f = NULL;
    int rc = load_fleet("teardown", argv[optind], &f);
    if (rc)
        return rc;
    kf_err err;
    kf_err_clear(&err);
    kf_launch_result *res = NULL;
    rc = kf_launch_teardown(f, &o, &res, &err);
    if (!res) {
        fprintf(stderr, "kfleet teardown: %s\n", err.msg);
        kf_fleet_destroy(&f);
        return 1;
    }
    int exit = print_summary(f, res, o.purge ? "stopped and purged" : "stopped");
    free(res);
    kf_fleet_destroy(&f);
    return exit;
}

int kf_cmd_bundle(int argc, char **argv, const kf_paths *p)
{
    (void)p;
    static const struct option opts[] = {
        {"out", required_argument, 0, O_OUT}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = "bundle";
    int ch;
    opterr = 0;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case O_OUT:
            out = optarg;
            break;
        case 'h':
            printf("usage: kfleet %s\n", kf_cmd_bundle_usage);
            return 0;
        default:
            return usage_err("bundle", kf_cmd_bundle_usage,
                             "unknown option or missing value:", argv[optind - 1]);
        }
    }
    if (optind != argc)
        return usage_err("bundle", kf_cmd_bundle_usage, "unexpected argument", argv[optind]);
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
    kf_ssh_quote(&cmd, script);
    kf_buf_addc(&cmd, ' ');
    kf_ssh_quote(&cmd, exe);
    kf_buf_addc(&cmd, ' ');
    kf_ssh_quote(&cmd, out);
    int rc = run_cmd(cmd.data);
    kf_buf_release(&cmd);
    if (rc != 0) {
        fprintf(stderr, "kfleet bundle: deploy/bundle.sh failed (exit %d)\n", rc);
        return 1;
    }
    printf("bundle in %s\n", out);
    return 0;
}
