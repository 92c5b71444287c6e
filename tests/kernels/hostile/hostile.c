/* hostile — a kernel that computes the right answer and, in setup(), tries
 * every access a kernel must not have (issue 31): the agent's Curve secret
 * key, the coordinator's key, appending to agents.allow, writing the LMDB
 * store, overwriting or planting another kernel's cached artifact, writing
 * outside its scratch dir, a TCP connection to 127.0.0.1, a connection to
 * the coordinator's control socket (a Unix socket by path), signalling the
 * agent, the agent's KFLEET_HOME, and as root /etc/shadow. Each that works is named and fails
 * setup ("GOT: ..."); with all refused it validates like any kernel. It
 * also needs what the CUDA driver needs at cuInit, its own /proc entry
 * written (a sandbox that refuses it breaks every CUDA kernel; nested
 * runs under ncu are where that went wrong).
 * The paths come from targets.h, written by tests/integration/
 * test_sandbox.sh. Nothing is written to: a file opened for writing is
 * closed at once. */
#include "kf_kernel.h"
#include "targets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define N 1024
static float out[N];
static char got[2048];

static void tried(int ok, const char *what)
{
    if (ok && strlen(got) + strlen(what) + 3 < sizeof got) {
        strcat(got, got[0] ? "; " : "GOT: ");
        strcat(got, what);
    }
}

static int opens(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

static void attack(void)
{
    got[0] = '\0';
    tried(opens(AGENT_KEY, O_RDONLY), "read agent.key");
    tried(opens(COORD_KEY, O_RDONLY), "read coordinator.key");
    tried(opens(ALLOW, O_WRONLY | O_APPEND), "append agents.allow");
    tried(opens(STORE, O_RDWR), "write the store");
    tried(opens(VICTIM, O_WRONLY), "overwrite another kernel's .so");
    tried(opens(CACHE "/planted-c.so", O_WRONLY | O_CREAT), "plant a .so in the cache");
    tried(opens(ESCAPE "-c", O_WRONLY | O_CREAT), "write outside its scratch dir");
    /* The runners' compiled timing kernels (runner/cubins.h): a kernel that
     * wrote them would time every later kernel with its own. */
    tried(opens(CUBINS, O_WRONLY | O_CREAT), "plant the harness's compiled modules");
    tried(getenv("KFLEET_HOME") != NULL, "see KFLEET_HOME");
    tried(getenv("KF_RUNNER_SPAWN_NS") != NULL, "see the agent's runner stamp");
    /* Root's own secret, readable by a runner that keeps uid 0. */
    tried(geteuid() == 0 && opens("/etc/shadow", O_RDONLY), "read /etc/shadow");
    tried(kill(getppid(), 0) == 0, "signal the agent");
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PORT)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    tried(s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0, "connect to 127.0.0.1");
    if (s >= 0)
        close(s);
    s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un u = {.sun_family = AF_UNIX};
    snprintf(u.sun_path, sizeof u.sun_path, "%s", CONTROL);
    tried(s >= 0 && connect(s, (struct sockaddr *)&u, sizeof u) == 0,
          "connect to the control socket");
    if (s >= 0)
        close(s);
}

static int setup(void **state, const kf_params *p, uint64_t seed, char *err, size_t errlen)
{
    (void)p;
    (void)seed;
    if (!opens("/proc/thread-self/comm", O_WRONLY)) {
        snprintf(err, errlen, "NEED: write its own /proc entry, as cuInit does");
        return -1;
    }
    attack();
    if (got[0]) {
        snprintf(err, errlen, "%s", got);
        return -1;
    }
    *state = out;
    return 0;
}

static int run(void *state, char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    for (int i = 0; i < N; i++)
        out[i] = (float)i * 2.0f;
    return 0;
}

static int output(void *state, kf_view *v)
{
    v->data = state;
    v->count = N;
    v->dtype = KF_DTYPE_F32;
    v->location = KF_LOC_HOST;
    return 0;
}

static int reference(void *state, double *ref, char *err, size_t errlen)
{
    (void)state;
    (void)err;
    (void)errlen;
    for (int i = 0; i < N; i++)
        ref[i] = i * 2.0;
    return 0;
}

static double bytes(const kf_params *p)
{
    (void)p;
    return N * 4.0;
}

static void teardown(void *state)
{
    (void)state;
}

static const kf_kernel k = {KF_KERNEL_ABI_VERSION,
                            "hostile",
                            "tries what a kernel must not",
                            1e-6,
                            1e-6,
                            1,
                            setup,
                            run,
                            output,
                            reference,
                            bytes,
                            bytes,
                            teardown};

const kf_kernel *kf_kernel_get(void)
{
    return &k;
}
