/* kfleet-agent — the agent daemon's command line.
 *
 *   kfleet-agent [--coordinator ENDPOINT] [--home DIR] [--workdir DIR]
 *                [--name ID] [--cpu-slots N] [--price P] [--log-level L]
 *                [--server-key KEY|FILE] [--show-key] [--stop-after S]
 *
 * Without --coordinator it reads the endpoint a local `kfleet serve` wrote
 * into its run directory. Without --workdir it takes the first free
 * STATE/agents/agent-N (N = 0, 1, ...), so several agents on one machine
 * each get their own outbox and cache, and a restarted agent finds its own
 * outbox again. (`--runner`, with `--serve` for a runner that takes
 * several tasks, `--warm` for a candidate's warm runner (runner/warm.h)
 * and `--scratch` for its sandbox's scratch dir and `--channel` for its
 * descriptors (runner/channel.h), and `--checker` for a candidate's judge
 * (runner/checker.h), are internal: the agent
 * execs itself with it.)
 *
 * The link is CurveZMQ. The agent's key pair is WORKDIR/agent.key (made on
 * first start). The coordinator's public key comes from --server-key, else
 * WORKDIR/coordinator.pub (what `kfleet launch` writes), else the home's
 * STATE/keys/coordinator.pub — an agent sharing the coordinator's home is
 * the same user on the same machine, so it enrolls its own key in the allow
 * list; any other agent's key is accepted with `kfleet agent-key add`. */
#include "runner/cudrv.h"
#include "runner/doctor.h"
#include "agent/agent.h"
#include "common/buf.h"
#include "runner/checker.h"
#include "runner/harness.h"
#include "runner/warm.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/signals.h"
#include "common/util.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: kfleet-agent [options]\n"
               "\n"
               "Runs kfleet tasks on this node for a coordinator.\n"
               "\n"
               "  --coordinator ENDPOINT  where the coordinator listens (tcp://HOST:PORT);\n"
               "                          default: the endpoint a local `kfleet serve` wrote\n"
               "  --home DIR              kfleet home (also KFLEET_HOME)\n"
               "  --workdir DIR           the agent's own directory (outbox, build cache);\n"
               "                          default: the first free STATE/agents/agent-N\n"
               "  --name ID               agent id (default: HOSTNAME-N, kept in the workdir)\n"
               "  --cpu-slots N           tasks run at once on CPU slots (default 1)\n"
               "  --price P               what one GPU-hour of this node costs: reports turn it\n"
               "                          into the sweep's cost per evaluation\n"
               "  --log-level LEVEL       debug|info|warn|error (default info)\n"
               "  --server-key KEY|FILE   the coordinator's Curve public key (Z85), or a file\n"
               "                          holding it; default WORKDIR/coordinator.pub, else\n"
               "                          the home's (then this agent enrolls its own key)\n"
               "  --stop-after SECONDS    stop (as on SIGTERM: tasks handed back, outbox\n"
               "                          flushed) this long after starting; a batch job's\n"
               "                          own deadline, should the scheduler's signal be lost\n"
               "  --show-key              print this agent's public key (making its key pair\n"
               "                          in the work dir if needed) and exit; accept it on\n"
               "                          the coordinator with `kfleet agent-key add KEY NAME`\n"
               "  --doctor [--gpu] [--cubins PATH]\n"
               "                          measure this node's ceilings (copy bandwidth, bf16\n"
               "                          matrix rate), print them and exit; the agent runs\n"
               "                          this itself at every start, and with --cubins the\n"
               "                          harness's own GPU code is compiled into PATH first\n"
               "  -h, --help              this help\n");
}

/* Reads the agent id kept in the workdir, or makes and keeps one. */
static int agent_id(const char *workdir, const char *name, int n, char *out, size_t len,
                    kf_err *err)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/agent-id", workdir);
    if (name) {
        snprintf(out, len, "%s", name);
    } else {
        kf_buf b = KF_BUF_INIT;
        if (kf_buf_read_file(&b, path) == KF_OK && b.len > 0) {
            b.data[strcspn(b.data, "\r\n")] = '\0';
            snprintf(out, len, "%s", b.data);
            kf_buf_release(&b);
            return KF_OK;
        }
        kf_buf_release(&b);
        char host[128] = "agent";
        gethostname(host, sizeof host - 1);
        snprintf(out, len, "%s-%d", host, n);
    }
    for (const char *p = out; *p; p++)
        if (*p <= ' ' || *p == '/')
            return kf_err_set(err, KF_EINVAL,
                              "agent id '%s' has a space, a control byte or "
                              "a '/'; pass --name with letters, digits, '-', '_'",
                              out);
    char line[300];
    int m = snprintf(line, sizeof line, "%s\n", out);
    return kf_write_file(path, line, (size_t)m, 0600, err);
}

/* The coordinator's public key: --server-key, else WORKDIR/coordinator.pub,
 * else the home's, in which case this agent enrolls its own key. */
static int resolve_server_key(const char *arg, const char *wd, const kf_paths *paths,
                              const char *id, const kf_keypair *kp, char out[KF_KEY_Z85 + 1],
                              kf_err *err)
{
    if (arg)
        return kf_keys_resolve_public(arg, out, err);
    char local[PATH_MAX + 32];
    snprintf(local, sizeof local, "%s/coordinator.pub", wd);
    if (kf_keys_read_public(local, out, err) == KF_OK)
        return KF_OK;
    int rc = kf_keys_read_public(paths->coord_pub, out, err);
    if (rc == KF_ENOTFOUND)
        return kf_err_set(err, KF_EINVAL,
                          "no coordinator key: pass --server-key (the coordinator's public key; "
                          "`kfleet init` on the coordinator prints it), or put it in %s",
                          local);
    if (rc)
        return rc;
    kf_allow cur = {0};
    int known = kf_allow_load(paths->allow, &cur, err) == KF_OK && kf_allow_find(&cur, kp->pub);
    kf_allow_free(&cur);
    if (known)
        return KF_OK;
    /* A first enrolment only: a name another key holds stays that key's
     * (the running agent of that name would be locked out), so the list
     * changes otherwise only by an explicit `kfleet agent-key`. */
    rc = kf_allow_add(paths->allow, kp->pub, id, err);
    if (rc == KF_EEXIST)
        return kf_err_set(err, KF_EINVAL,
                          "agent name %s is already enrolled in %s with another key (another "
                          "agent of this name, or this one before its work dir %s lost its key). "
                          "Start this agent with its own --name, or, if the old key is gone for "
                          "good: kfleet agent-key revoke %s, then start it again",
                          id, paths->allow, wd, id);
    if (rc)
        return kf_err_set(
            err, rc,
            "cannot enroll this agent's key in %s: %s (accept it on the "
            "coordinator with `kfleet agent-key add '%s' %s`; a Z85 key is quoted for the shell)",
            paths->allow, err->msg, kp->pub, id);
    kf_info("agent.enrolled", "agent=%s key=%s allow=%s", id, kp->pub, paths->allow);
    return KF_OK;
}

/* The command line, parsed. */
typedef struct {
    const char *coordinator, *home, *workdir, *name, *level, *server_key, *scratch, *cubins;
    long cpu_slots;
    double price, stop_after_s;
    uint64_t stop_mono; /* --stop-after counted from here: the process's start */
    int runner, serve, warm, channel, checker, keep_tmp, doctor, doctor_gpu, show_key;
} agent_args;

/* The phases of main below return -1 to go on, else the exit status. */

static int parse_number(int ch, const char *arg, agent_args *a)
{
    char *end;
    if (ch == 'A') {
        a->stop_after_s = strtod(arg, &end);
        if (end == arg || *end || !(a->stop_after_s > 0) || !(a->stop_after_s < 1e9)) {
            fprintf(stderr,
                    "kfleet-agent: --stop-after wants the seconds this agent runs before it "
                    "stops, a number above 0, got '%s'\n",
                    arg);
            return 2;
        }
        a->stop_mono = kf_mono_ns() + (uint64_t)(a->stop_after_s * 1e9);
        return -1;
    }
    if (ch == 'P') {
        a->price = strtod(arg, &end);
        if (end == arg || *end || !(a->price > 0) || !isfinite(a->price)) {
            fprintf(stderr,
                    "kfleet-agent: --price wants what one GPU-hour of this node costs, a "
                    "number above 0, got '%s'\n",
                    arg);
            return 2;
        }
        return -1;
    }
    a->cpu_slots = strtol(arg, &end, 10);
    if (*end || a->cpu_slots < 1 || a->cpu_slots > 1024) {
        fprintf(stderr,
                "kfleet-agent: --cpu-slots wants a number from 1 to 1024, got "
                "'%s'\n",
                arg);
        return 2;
    }
    return -1;
}

static int parse_args(int argc, char **argv, agent_args *a)
{
    static const struct option opts[] = {{"coordinator", required_argument, 0, 'c'},
                                         {"home", required_argument, 0, 'H'},
                                         {"workdir", required_argument, 0, 'w'},
                                         {"name", required_argument, 0, 'n'},
                                         {"cpu-slots", required_argument, 0, 's'},
                                         {"price", required_argument, 0, 'P'},
                                         {"log-level", required_argument, 0, 'l'},
                                         {"runner", no_argument, 0, 'R'},
                                         {"serve", no_argument, 0, 'V'},
                                         {"warm", no_argument, 0, 'W'},
                                         {"scratch", required_argument, 0, 'T'},
                                         {"channel", no_argument, 0, 'C'},
                                         {"checker", no_argument, 0, 'J'},
                                         {"keep-tmp", no_argument, 0, 'k'},
                                         {"doctor", no_argument, 0, 'D'},
                                         {"gpu", no_argument, 0, 'G'},
                                         {"host", no_argument, 0, 'O'},
                                         {"cubins", required_argument, 0, 'U'},
                                         {"server-key", required_argument, 0, 'S'},
                                         {"show-key", no_argument, 0, 'K'},
                                         {"stop-after", required_argument, 0, 'A'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int ch, rc;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            a->coordinator = optarg;
            break;
        case 'H':
            a->home = optarg;
            break;
        case 'w':
            a->workdir = optarg;
            break;
        case 'n':
            a->name = optarg;
            break;
        case 'l':
            a->level = optarg;
            break;
        case 'R':
            a->runner = 1;
            break;
        case 'V':
            a->serve = 1;
            break;
        case 'W':
            a->warm = 1;
            break;
        case 'T':
            a->scratch = optarg;
            break;
        case 'C':
            a->channel = 1;
            break;
        case 'J':
            a->checker = 1;
            break;
        case 'k':
            a->keep_tmp = 1;
            break;
        case 'D':
            a->doctor = 1;
            break;
        case 'G':
            a->doctor_gpu = 1;
            break;
        case 'O':
            a->doctor_gpu = 0;
            break;
        case 'U':
            a->cubins = optarg;
            break;
        case 'S':
            a->server_key = optarg;
            break;
        case 'K':
            a->show_key = 1;
            break;
        case 'A':
        case 'P':
        case 's':
            if ((rc = parse_number(ch, optarg, a)) >= 0)
                return rc;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "kfleet-agent: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* When the agent started this runner (KF_RUNNER_SPAWN_NS, its
 * CLOCK_MONOTONIC nanoseconds: runner/harness.h's spawn_ns), taken out of
 * the environment the kernel will see; 0 when absent or not a number. */
static uint64_t spawn_stamp(void)
{
    const char *v = getenv("KF_RUNNER_SPAWN_NS");
    char *end = NULL;
    unsigned long long ns = v && *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
    if (v)
        unsetenv("KF_RUNNER_SPAWN_NS");
    return end && *end == '\0' ? (uint64_t)ns : 0;
}

/* The log, then the modes that run no daemon: --doctor and --runner. */
static int run_modes(const agent_args *a)
{
    int lv = kf_log_parse_level(a->level);
    if (lv < 0) {
        fprintf(stderr, "kfleet-agent: unknown --log-level '%s' (debug|info|warn|error)\n",
                a->level);
        return 2;
    }
    kf_log_setup(a->runner ? "kfleet-runner" : "kfleet-agent", (kf_log_level)lv);
    if (a->doctor) {
        kf_doctor d;
        kf_doctor_measure(a->doctor_gpu, a->cubins, &d);
        kf_doctor_print(&d, 1);
        return 0;
    }
    if (a->checker) /* a candidate's judge (runner/checker.h) */
        return kf_checker_main();
    if (a->runner) {
        if (!a->workdir) {
            fprintf(stderr, "kfleet-agent: --runner needs --workdir\n");
            return 2;
        }
        uint64_t spawn = spawn_stamp();
        int rc = a->warm    ? kf_runner_warm(a->workdir)
                 : a->serve ? kf_runner_serve(a->workdir, a->scratch, a->channel, spawn)
                            : kf_runner_main(a->workdir, a->scratch, a->channel, spawn);
        return rc < 0 ? 1 : rc; /* -1 means "go on" here */
    }
    /* Its runners read it for every profile (cudrv.h): a misspelling is
     * said at start, not found in the first GPU profile's failure. */
    int events;
    kf_err err;
    if (kf_cudrv_timer_setting(&events, &err) != KF_OK) {
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
        return 2;
    }
    return -1;
}

/* The endpoint a local `kfleet serve` wrote into its run directory. */
static int local_endpoint(const kf_paths *paths, char *out, size_t len)
{
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, paths->agent_endpoint_file) != KF_OK || b.len == 0) {
        fprintf(stderr,
                "kfleet-agent: no --coordinator given and no local coordinator found (%s "
                "is missing); start `kfleet serve` or pass --coordinator tcp://HOST:PORT\n",
                paths->agent_endpoint_file);
        kf_buf_release(&b);
        return 1;
    }
    b.data[strcspn(b.data, "\r\n")] = '\0';
    snprintf(out, len, "%s", b.data);
    kf_buf_release(&b);
    return -1;
}

/* --workdir, made private and locked. */
static int claim_given_workdir(const char *workdir, char *wd, size_t len, int *lock_fd)
{
    kf_err err;
    kf_err_clear(&err);
    snprintf(wd, len, "%s", workdir);
    char lockp[PATH_MAX + 16];
    snprintf(lockp, sizeof lockp, "%s/agent.lock", wd);
    /* The work dir holds the agent's key and outbox: made private, and
     * refused when it is another user's or others can write it. */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", wd);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent)
        *slash = '\0';
    if ((slash && slash != parent && kf_mkdirs(parent, 0700, &err) != KF_OK) ||
        kf_private_dir(wd, &err) != KF_OK) {
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
        return err.code == KF_EINVAL ? 2 : 1;
    }
    if ((*lock_fd = kf_lock_file(lockp, &err)) < 0) {
        fprintf(stderr, "kfleet-agent: %s%s\n", err.msg,
                err.code == KF_EBUSY ? " (another agent uses this work dir)" : "");
        return 1;
    }
    return -1;
}

/* The first free STATE/agents/agent-N, locked; *n is its N. */
static int claim_free_workdir(const kf_paths *paths, char *wd, size_t len, int *lock_fd, int *n)
{
    kf_err err;
    kf_err_clear(&err);
    for (*n = 0; *n < 256 && *lock_fd < 0; (*n)++) {
        char lockp[PATH_MAX + 16];
        snprintf(wd, len, "%s/agent-%d", paths->agents_dir, *n);
        snprintf(lockp, sizeof lockp, "%s/agent.lock", wd);
        kf_err lerr;
        if (kf_mkdirs(paths->agents_dir, 0700, &err) != KF_OK ||
            kf_private_dir(wd, &err) != KF_OK) {
            fprintf(stderr, "kfleet-agent: %s\n", err.msg);
            return 1;
        }
        *lock_fd = kf_lock_file(lockp, &lerr);
    }
    (*n)--;
    if (*lock_fd < 0) {
        fprintf(stderr, "kfleet-agent: all 256 agent work dirs under %s are in use\n",
                paths->agents_dir);
        return 1;
    }
    return -1;
}

/* The agent's key pair (made on first start) and the coordinator's
 * public key; --show-key prints the agent's and stops here. */
static int load_keys(const agent_args *a, const char *wd, const kf_paths *paths, const char *id,
                     kf_keypair *kp, char server_key[KF_KEY_Z85 + 1])
{
    kf_err err;
    kf_err_clear(&err);
    char keyp[PATH_MAX + 16];
    snprintf(keyp, sizeof keyp, "%s/agent.key", wd);
    if (kf_keys_load(keyp, 1, kp, &err) != KF_OK) {
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
        return 1;
    }
    if (a->show_key) {
        printf("%s\n", kp->pub);
        return 0;
    }
    if (resolve_server_key(a->server_key, wd, paths, id, kp, server_key, &err) != KF_OK) {
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
        return 2;
    }
    return -1;
}

static void setup_signals(void)
{
    kf_signals_catch(on_signal, KF_SIGNALS_IGNORE_PIPE, NULL);
}

/* The daemon itself, until a signal or an error. */
static int run_agent(const agent_args *a, const char *coordinator, const char *wd, const char *id,
                     const kf_keypair *kp, const char *server_key)
{
    kf_err err;
    kf_err_clear(&err);
    setup_signals();
    kf_agent_config cfg = {0};
    cfg.coordinator = coordinator;
    cfg.workdir = wd;
    cfg.agent_id = id;
    cfg.cpu_slots = (uint32_t)a->cpu_slots;
    cfg.price = a->price;
    cfg.stop_mono = a->stop_mono;
    cfg.keep_tmp = a->keep_tmp;
    cfg.server_key = server_key;
    cfg.public_key = kp->pub;
    cfg.secret_key = kp->sec;
    kf_agent *agent = NULL;
    if (kf_agent_new(&cfg, &agent, &err) != KF_OK) {
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
        return 1;
    }
    int rc = kf_agent_run(agent, &g_stop, &err);
    if (rc)
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
    kf_agent_destroy(&agent);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    agent_args a = {.level = "info"};
    int rc;
    if ((rc = parse_args(argc, argv, &a)) >= 0 || (rc = run_modes(&a)) >= 0)
        return rc;

    kf_err err;
    kf_err_clear(&err);
    kf_paths paths;
    if (kf_paths_resolve(&paths, a.home, 0, &err) != KF_OK) {
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
        return 1;
    }
    /* The runners' sandbox grants nothing that reaches kfleet's own files
     * (runner/confine.h), wherever the home is. */
    char protect[3 * PATH_MAX + 4];
    snprintf(protect, sizeof protect, "%s:%s:%s", paths.state, paths.config, paths.run);
    setenv("KF_SANDBOX_PROTECT", protect, 1);
    char endpoint[512];
    const char *coordinator = a.coordinator;
    if (!coordinator && !a.show_key) {
        if ((rc = local_endpoint(&paths, endpoint, sizeof endpoint)) >= 0)
            return rc;
        coordinator = endpoint;
    }

    char wd[PATH_MAX];
    int lock_fd = -1, n = 0;
    rc = a.workdir ? claim_given_workdir(a.workdir, wd, sizeof wd, &lock_fd)
                   : claim_free_workdir(&paths, wd, sizeof wd, &lock_fd, &n);
    if (rc >= 0)
        return rc;
    char id[256];
    if (agent_id(wd, a.name, n, id, sizeof id, &err) != KF_OK) {
        fprintf(stderr, "kfleet-agent: %s\n", err.msg);
        return 2;
    }
    kf_keypair kp;
    char server_key[KF_KEY_Z85 + 1];
    if ((rc = load_keys(&a, wd, &paths, id, &kp, server_key)) < 0)
        rc = run_agent(&a, coordinator, wd, id, &kp, server_key);
    memset(&kp, 0, sizeof kp);
    close(lock_fd);
    return rc;
}
