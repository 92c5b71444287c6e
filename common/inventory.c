/* inventory — builds the AgentInfo an agent registers with; see inventory.h.
 *
 * How it works: each field has its own probe (sysconf, uname, /proc, statvfs,
 * a child process for `nvcc --version` and `cc --version`, dlopen'd libcuda
 * and NVML for the GPUs). A probe that fails logs at debug and leaves its
 * field empty; only bad arguments and out-of-memory fail the collection,
 * because a node with an odd /proc or no GPU is still a node that can run
 * CPU work.
 *
 * The GPU probes declare the handful of driver API types they need instead
 * of including cuda.h: the agent must build and run on machines without the
 * CUDA toolkit, so it links no CUDA library and finds the driver at run time.
 *
 * The AgentInfo is built by hand (not by protobuf-c's unpack), so every
 * string is our own malloc and kf_inventory_free frees it field by field. */
#include "common/inventory.h"
#include "common/xalloc.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* A tool that does not answer `--version` in this time is treated as absent:
 * registration must not hang on a broken compiler install. */
#define TOOL_TIMEOUT_MS 10000
/* Version banners are a few hundred bytes; cap what we keep from a child. */
#define TOOL_OUTPUT_MAX (64 * 1024)

/* ---- small helpers ---- */

static void copy_str(char *out, size_t len, const char *s, size_t n)
{
    if (len == 0)
        return;
    if (n >= len)
        n = len - 1;
    memcpy(out, s, n);
    out[n] = '\0';
}

/* Trims trailing whitespace (and the '\r' of CRLF output) in place. */
static void rtrim(char *s)
{
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
        s[--n] = '\0';
}

/* Finds an executable: each PATH entry, then the fallback (may be NULL).
 * Empty PATH entries (meaning ".") are skipped on purpose: the agent's cwd
 * is a work dir full of downloaded files, not a place to run tools from. */
static int find_tool(const char *name, const char *fallback, char *out, size_t len)
{
    const char *path = getenv("PATH");
    while (path && *path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        if (n > 0) {
            int w = snprintf(out, len, "%.*s/%s", (int)n, path, name);
            struct stat st;
            if (w > 0 && (size_t)w < len && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
                access(out, X_OK) == 0)
                return KF_OK;
        }
        path = colon ? colon + 1 : NULL;
    }
    if (fallback && access(fallback, X_OK) == 0) {
        int w = snprintf(out, len, "%s", fallback);
        if (w > 0 && (size_t)w < len)
            return KF_OK;
    }
    if (len > 0)
        out[0] = '\0';
    return KF_ENOTFOUND;
}

/* Runs argv[0] (an absolute path) with stdin from /dev/null and stdout +
 * stderr into `out`. posix_spawn rather than fork: the agent has ZeroMQ
 * threads, and spawn never runs our code in a forked copy of them. Returns
 * 0 when the child exited 0, else KF_EIO / KF_ETIMEOUT. */
static int run_capture(char *const argv[], kf_buf *out)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return KF_EIO;
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        close(fds[0]);
        close(fds[1]);
        return KF_EIO;
    }
    int rc = KF_EIO;
    pid_t pid = -1;
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, fds[1], 2) != 0 ||
        posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        close(fds[0]);
        close(fds[1]);
        return KF_EIO;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);

    uint64_t deadline = kf_mono_ns() + (uint64_t)TOOL_TIMEOUT_MS * 1000000ull;
    int timed_out = 0;
    for (;;) {
        uint64_t now = kf_mono_ns();
        if (now >= deadline) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            break;
        if (pr == 0)
            continue; /* the loop head sees the deadline */
        char chunk[4096];
        ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EOF: the child closed its end (or exited) */
        if (out->len + (size_t)n <= TOOL_OUTPUT_MAX)
            kf_buf_add(out, chunk, (size_t)n);
    }
    close(fds[0]);
    /* A child can close its output and still linger (it forked a helper):
     * wait for it only until the same deadline, then kill it. */
    int status = 0;
    for (;;) {
        pid_t w = timed_out ? 0 : waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) /* ECHILD: someone else reaped it; the status is lost */
            return KF_EIO;
        if (timed_out || kf_mono_ns() >= deadline) {
            timed_out = 1;
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        struct timespec nap = {0, 5 * 1000000L};
        nanosleep(&nap, NULL);
    }
    if (timed_out)
        rc = KF_ETIMEOUT;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        rc = KF_OK;
    return rc;
}

/* ---- tool versions ---- */

/* Finds `key` on a line of text, preferring a line that also holds `want`.
 * Returns a pointer just past key, or NULL. */
static const char *find_on_line(const char *text, const char *key, const char *want)
{
    const char *first = NULL;
    size_t klen = strlen(key), wlen = strlen(want);
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        const char *hit = memmem(line, n, key, klen);
        if (hit && memmem(line, n, want, wlen))
            return hit + klen;
        if (hit && !first)
            first = hit + klen;
        line += eol ? n + 1 : n;
    }
    return first;
}

int kf_inventory_parse_nvcc(const char *text, char *out, size_t len)
{
    if (len > 0)
        out[0] = '\0';
    if (!text || len == 0) /* no room for even the terminator */
        return KF_ENOTFOUND;
    /* The line is "Cuda compilation tools, release 13.0, V13.0.88"; prefer
     * it over any other line that happens to say "release ". */
    const char *v = find_on_line(text, "release ", "compilation tools");
    if (!v)
        return KF_ENOTFOUND;
    copy_str(out, len, v, strcspn(v, "\r\n"));
    rtrim(out);
    return len > 0 && out[0] ? KF_OK : KF_ENOTFOUND;
}

int kf_inventory_nvcc_version(char *out, size_t len)
{
    char path[4096];
    if (len > 0)
        out[0] = '\0';
    if (find_tool("nvcc", "/usr/local/cuda/bin/nvcc", path, sizeof path) != KF_OK) {
        kf_debug("inventory.nvcc", "found=no");
        return KF_ENOTFOUND;
    }
    char *argv[] = {path, "--version", NULL};
    kf_buf b = KF_BUF_INIT;
    int rc = run_capture(argv, &b);
    if (rc == KF_OK)
        rc = kf_inventory_parse_nvcc(b.data, out, len);
    else
        kf_debug("inventory.nvcc", "path=%s error=\"%s\"", path, kf_strerror(rc));
    kf_buf_release(&b);
    return rc == KF_OK ? KF_OK : KF_ENOTFOUND;
}

int kf_inventory_cc_version(char *out, size_t len)
{
    char path[4096];
    if (len > 0)
        out[0] = '\0';
    if (find_tool("cc", NULL, path, sizeof path) != KF_OK) {
        kf_debug("inventory.cc", "found=no");
        return KF_ENOTFOUND;
    }
    char *argv[] = {path, "--version", NULL};
    kf_buf b = KF_BUF_INIT;
    int rc = run_capture(argv, &b);
    if (rc == KF_OK) {
        copy_str(out, len, b.data, strcspn(b.data, "\n"));
        rtrim(out);
        if (!out[0])
            rc = KF_ENOTFOUND;
    } else {
        kf_debug("inventory.cc", "path=%s error=\"%s\"", path, kf_strerror(rc));
    }
    kf_buf_release(&b);
    return rc == KF_OK ? KF_OK : KF_ENOTFOUND;
}

/* ---- host probes ---- */

/* "model name\t: Intel(R) ..." from /proc/cpuinfo; "" when absent (ARM
 * kernels do not print it). */
static void probe_cpu_model(char *out, size_t len)
{
    out[0] = '\0';
    kf_buf b = KF_BUF_INIT;
    if (kf_buf_read_file(&b, "/proc/cpuinfo") != KF_OK) {
        kf_debug("inventory.cpu_model", "error=\"%s\"", strerror(errno));
        kf_buf_release(&b);
        return;
    }
    for (const char *line = b.data; *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        const char *colon = memchr(line, ':', n);
        if (strncmp(line, "model name", 10) == 0 && colon) {
            const char *v = colon + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            copy_str(out, len, v, (size_t)(line + n - v));
            rtrim(out);
            break;
        }
        line = eol ? eol + 1 : line + n;
    }
    kf_buf_release(&b);
}

static uint64_t probe_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages > 0 && psize > 0)
        return (uint64_t)pages * (uint64_t)psize;
    /* sysconf can fail in odd sandboxes; /proc/meminfo says the same thing. */
    uint64_t kib = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) == 1)
                break;
        fclose(f);
    }
    if (kib == 0)
        kf_debug("inventory.memory", "found=no");
    return kib * 1024u;
}

/* ---- GPUs: libcuda driver API, dlopen'd ---- */

/* The subset of cuda.h we call: entry points and enum values the driver
 * keeps stable across releases (cuDeviceGetUuid needs a CUDA 9.2+ driver). */
typedef int cu_result; /* CUresult; 0 is CUDA_SUCCESS */
typedef int cu_device; /* CUdevice */
typedef struct {
    unsigned char bytes[16];
} cu_uuid;
enum {
    CU_ATTR_MULTIPROCESSOR_COUNT = 16,
    CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

typedef struct cuda_api {
    cu_result (*init)(unsigned int flags);
    cu_result (*driver_get_version)(int *version);
    cu_result (*device_get_count)(int *count);
    cu_result (*device_get)(cu_device *dev, int ordinal);
    cu_result (*device_get_name)(char *name, int len, cu_device dev);
    cu_result (*device_get_uuid)(cu_uuid *uuid, cu_device dev);
    cu_result (*device_total_mem)(size_t *bytes, cu_device dev);
    cu_result (*device_get_attribute)(int *value, int attrib, cu_device dev);
} cuda_api;

/* Resolves every entry point; returns the first missing name or NULL.
 * memcpy because ISO C has no conversion from void * to a function pointer. */
static const char *cuda_resolve(void *h, cuda_api *api)
{
#define KF_SYM(field, name)                                                                        \
    do {                                                                                           \
        void *p_ = dlsym(h, name);                                                                 \
        if (!p_)                                                                                   \
            return name;                                                                           \
        memcpy(&api->field, &p_, sizeof p_);                                                       \
    } while (0)
    KF_SYM(init, "cuInit");
    KF_SYM(driver_get_version, "cuDriverGetVersion");
    KF_SYM(device_get_count, "cuDeviceGetCount");
    KF_SYM(device_get, "cuDeviceGet");
    KF_SYM(device_get_name, "cuDeviceGetName");
    KF_SYM(device_total_mem, "cuDeviceTotalMem_v2");
    KF_SYM(device_get_attribute, "cuDeviceGetAttribute");
    /* _v2 exists since CUDA 11.4; older drivers only have the first. */
    void *v2 = dlsym(h, "cuDeviceGetUuid_v2");
    if (v2)
        memcpy(&api->device_get_uuid, &v2, sizeof v2);
    else
        KF_SYM(device_get_uuid, "cuDeviceGetUuid");
#undef KF_SYM
    return NULL;
}

static int sanitized_build(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}

static void format_uuid(const cu_uuid *u, char out[41])
{
    const unsigned char *b = u->bytes;
    snprintf(out, 41, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* Returns KF_ENOMEM only; every driver failure just means fewer facts. */
static int probe_cuda(Kfleet__AgentInfo *info)
{
    /* libcuda is deliberately never dlclose'd: after cuInit it owns threads
     * whose code would be unmapped under them. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        kf_debug("inventory.cuda", "available=no reason=\"%s\"", dlerror());
        return KF_OK;
    }
    cuda_api api;
    memset(&api, 0, sizeof api);
    const char *missing = cuda_resolve(h, &api);
    if (missing) {
        kf_debug("inventory.cuda", "available=no reason=\"no symbol %s\"", missing);
        return KF_OK;
    }
    cu_result r = api.init(0);
    if (r != 0) {
        /* 2 is CUDA_ERROR_OUT_OF_MEMORY: under ASan it means the shadow gap
         * took the address range the driver maps, not a full GPU. */
        kf_debug("inventory.cuda", "available=no reason=\"cuInit returned %d%s\"", r,
                 r == 2 && sanitized_build() ? " (ASan: set ASAN_OPTIONS=protect_shadow_gap=0)"
                                             : "");
        return KF_OK;
    }
    int version = 0;
    if (api.driver_get_version(&version) == 0)
        info->cuda_driver_version = version;
    int count = 0;
    if ((r = api.device_get_count(&count)) != 0 || count <= 0) {
        kf_debug("inventory.cuda", "gpus=0 result=%d", r);
        return KF_OK;
    }
    info->gpus = kf_xcalloc((size_t)count, sizeof *info->gpus);
    for (int i = 0; i < count; i++) {
        Kfleet__GpuInfo *g = kf_xmalloc(sizeof *g);
        kfleet__gpu_info__init(g);
        g->name = g->uuid = NULL; /* not the shared empty-string sentinel */
        info->gpus[i] = g;
        info->n_gpus = (size_t)i + 1;
        g->index = (uint32_t)i;
        char name[256] = "", uuid[41] = "";
        cu_device dev;
        /* A device that will not answer stays listed (the driver counts it)
         * with what could be read; the coordinator sees it as nameless. */
        if ((r = api.device_get(&dev, i)) == 0) {
            if (api.device_get_name(name, (int)sizeof name, dev) != 0)
                name[0] = '\0';
            cu_uuid u;
            if (api.device_get_uuid(&u, dev) == 0)
                format_uuid(&u, uuid);
            size_t mem = 0;
            if (api.device_total_mem(&mem, dev) == 0)
                g->memory_bytes = mem;
            int v = 0;
            if (api.device_get_attribute(&v, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, dev) == 0)
                g->cc_major = (uint32_t)v;
            if (api.device_get_attribute(&v, CU_ATTR_COMPUTE_CAPABILITY_MINOR, dev) == 0)
                g->cc_minor = (uint32_t)v;
            if (api.device_get_attribute(&v, CU_ATTR_MULTIPROCESSOR_COUNT, dev) == 0)
                g->sm_count = (uint32_t)v;
        } else {
            kf_debug("inventory.cuda", "gpu=%d cuDeviceGet=%d", i, r);
        }
        /* Set to our own strings before any further failure, so that
         * kf_inventory_free can free them unconditionally. */
        g->name = kf_xstrdup(name);
        g->uuid = kf_xstrdup(uuid);
    }
    return KF_OK;
}

/* NVML only gives us the driver version ("580.65.06"); libcuda gives the rest. */
static void probe_nvml(char *out, size_t len)
{
    out[0] = '\0';
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        kf_debug("inventory.nvml", "available=no reason=\"%s\"", dlerror());
        return;
    }
    int (*init)(void) = NULL, (*shutdown)(void) = NULL;
    int (*get_version)(char *, unsigned int) = NULL;
    void *p;
    if ((p = dlsym(h, "nvmlInit_v2")))
        memcpy(&init, &p, sizeof p);
    if ((p = dlsym(h, "nvmlShutdown")))
        memcpy(&shutdown, &p, sizeof p);
    if ((p = dlsym(h, "nvmlSystemGetDriverVersion")))
        memcpy(&get_version, &p, sizeof p);
    if (init && shutdown && get_version) {
        int r = init();
        if (r == 0) {
            char v[96] = ""; /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80 */
            if ((r = get_version(v, (unsigned int)sizeof v)) == 0)
                copy_str(out, len, v, strlen(v));
            else
                kf_debug("inventory.nvml", "driver_version=no result=%d", r);
            shutdown();
        } else {
            kf_debug("inventory.nvml", "available=no reason=\"nvmlInit_v2 returned %d\"", r);
        }
    } else {
        kf_debug("inventory.nvml", "available=no reason=\"missing symbols\"");
    }
    dlclose(h);
}

/* ---- collect / free ---- */

int kf_inventory_collect(const char *agent_id, const char *workdir, Kfleet__AgentInfo **out,
                         kf_err *err)
{
    if (out)
        *out = NULL;
    if (!agent_id || !workdir || !out)
        return kf_err_set(err, KF_EINVAL, "inventory: agent_id, workdir and out are required");

    int rc = KF_ENOMEM;
    Kfleet__AgentInfo *info = kf_xmalloc(sizeof *info);
    kfleet__agent_info__init(info);
    /* From here every string field is either NULL or ours, never the
     * protobuf-c empty-string sentinel, so kf_inventory_free can free all. */
    info->agent_id = info->hostname = info->version = info->cpu_model = info->arch = NULL;
    info->workdir = info->driver_version = info->nvcc_version = info->cc_version = NULL;
    /* An agent that a provider started as a job (a cluster's batch job,
     * say) names it, so `kfleet status` can: the provider's launch sets these
     * two; an agent started any other way has neither. */
    const char *job = getenv("KF_JOB_ID"), *prov = getenv("KF_JOB_PROVIDER");
    int named = job && *job && strlen(job) < 32 && prov && strlen(prov) < 32;
    info->job_id = kf_xstrdup(named ? job : "");
    info->job_provider = kf_xstrdup(named ? prov : "");

    char host[256] = "";
    if (gethostname(host, sizeof host) != 0)
        kf_debug("inventory.hostname", "error=\"%s\"", strerror(errno));
    host[sizeof host - 1] = '\0';

    struct utsname un;
    const char *arch = "";
    if (uname(&un) == 0)
        arch = un.machine;
    else
        kf_debug("inventory.arch", "error=\"%s\"", strerror(errno));

    char cpu_model[256];
    probe_cpu_model(cpu_model, sizeof cpu_model);

    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    info->cpu_count = ncpu > 0 ? (uint32_t)ncpu : 0;
    info->memory_bytes = probe_memory();
    info->pid = (uint32_t)getpid();

    uint64_t free_bytes = 0;
    if (kf_free_bytes(workdir, &free_bytes) != KF_OK)
        kf_debug("inventory.workdir", "path=%s error=\"%s\"", workdir, strerror(errno));
    info->workdir_free_bytes = free_bytes;

    /* The tools run before libcuda is loaded, so no child is spawned from a
     * process that already has the driver's threads. */
    char nvcc[128], cc[256], driver[96] = "";
    kf_inventory_nvcc_version(nvcc, sizeof nvcc);
    kf_inventory_cc_version(cc, sizeof cc);

    const char *fake = getenv("KF_FAKE_NO_GPU");
    if (fake && strcmp(fake, "1") == 0) {
        kf_debug("inventory.cuda", "available=no reason=KF_FAKE_NO_GPU");
    } else {
        if (probe_cuda(info) != KF_OK)
            goto out;
        probe_nvml(driver, sizeof driver);
    }
    info->gpu_slots = (uint32_t)info->n_gpus;
    info->cpu_slots = 1;

    info->agent_id = strdup(agent_id);
    info->hostname = strdup(host);
    info->version = strdup(KF_VERSION);
    info->cpu_model = strdup(cpu_model);
    info->arch = strdup(arch);
    info->workdir = strdup(workdir);
    info->driver_version = strdup(driver);
    info->nvcc_version = strdup(nvcc);
    info->cc_version = strdup(cc);
    if (!info->agent_id || !info->hostname || !info->version || !info->cpu_model || !info->arch ||
        !info->workdir || !info->driver_version || !info->nvcc_version || !info->cc_version)
        goto out;
    rc = KF_OK;
out:
    if (rc != KF_OK) {
        kf_inventory_free(&info);
        return kf_err_set(err, rc, "inventory: out of memory");
    }
    *out = info;
    return KF_OK;
}

void kf_inventory_free(Kfleet__AgentInfo **info)
{
    if (!info || !*info)
        return;
    Kfleet__AgentInfo *a = *info;
    free(a->agent_id);
    free(a->hostname);
    free(a->version);
    free(a->cpu_model);
    free(a->arch);
    free(a->workdir);
    free(a->driver_version);
    free(a->nvcc_version);
    free(a->cc_version);
    free(a->job_id);
    free(a->job_provider);
    for (size_t i = 0; i < a->n_gpus; i++) {
        if (!a->gpus[i])
            continue;
        free(a->gpus[i]->name);
        free(a->gpus[i]->uuid);
        free(a->gpus[i]);
    }
    free(a->gpus);
    for (size_t i = 0; i < a->n_labels; i++)
        free(a->labels[i]);
    free(a->labels);
    free(a);
    *info = NULL;
}
