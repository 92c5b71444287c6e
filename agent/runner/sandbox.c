/* sandbox — see sandbox.h. Landlock is called by syscall number with the
 * kernel's constants spelled here: the C library has no wrapper, and the
 * build machine's headers may be older than the node's kernel (Debian 12's
 * know ABI 2, a node's kernel may speak 7), so every ABI is written out and
 * the one the node speaks is asked at run time. */
#include "runner/sandbox.h"

#include "common/log.h"
#include "common/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Landlock's interface (include/uapi/linux/landlock.h), by ABI. */
#define LL_CREATE_VERSION (1u << 0)
#define LL_RULE_PATH 1
#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_ABI1 ((1ull << 13) - 1) /* EXECUTE .. MAKE_SYM */
#define LL_FS_REFER (1ull << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)   /* ABI 3 */
#define LL_NET_BIND_TCP (1ull << 0)   /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)
/* What a rule on a file (not a directory) may grant. */
#define LL_FS_FILE (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE)
#define LL_FS_READ (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

typedef struct rule {
    char *path;
    int write, own;
} rule;

struct kf_sandbox {
    rule *rules;
    size_t nrules, cap;
    char **protect;
    size_t nprotect;
    int loopback;
    int unix_ok;    /* socket(AF_UNIX) allowed (kf_sandbox_allow_unix) */
    int unix_later; /* refused later, by kf_sandbox_deny_unix (kf_sandbox_defer_unix) */
    unsigned skip;  /* mechanisms left off for this sandbox (kf_sandbox_skip) */
};

kf_sandbox *kf_sandbox_new(void)
{
    return kf_xcalloc(1, sizeof(kf_sandbox));
}

void kf_sandbox_destroy(kf_sandbox **self)
{
    if (!self || !*self)
        return;
    kf_sandbox *s = *self;
    for (size_t i = 0; i < s->nrules; i++)
        free(s->rules[i].path);
    for (size_t i = 0; i < s->nprotect; i++)
        free(s->protect[i]);
    free(s->rules);
    free(s->protect);
    free(s);
    *self = NULL;
}

static void add(kf_sandbox *s, const char *path, int write, int own)
{
    if (!path || path[0] != '/')
        return; /* relative entries (a PATH's "."): never granted */
    if (s->nrules == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 32;
        s->rules = kf_xrealloc(s->rules, s->cap * sizeof *s->rules);
    }
    s->rules[s->nrules++] = (rule){kf_xstrdup(path), write, own};
}

void kf_sandbox_read(kf_sandbox *self, const char *path)
{
    add(self, path, 0, 0);
}

void kf_sandbox_write(kf_sandbox *self, const char *path)
{
    add(self, path, 1, 0);
}

void kf_sandbox_own(kf_sandbox *self, const char *path, int write)
{
    add(self, path, write, 1);
}

void kf_sandbox_protect(kf_sandbox *self, const char *path)
{
    char real[PATH_MAX];
    if (!path || !*path || !realpath(path, real))
        return;
    self->protect = kf_xrealloc(self->protect, (self->nprotect + 1) * sizeof *self->protect);
    self->protect[self->nprotect++] = kf_xstrdup(real);
}

void kf_sandbox_skip(kf_sandbox *self, unsigned mechanisms)
{
    self->skip |= mechanisms;
}

void kf_sandbox_allow_loopback(kf_sandbox *self, int on)
{
    self->loopback = on;
}

void kf_sandbox_allow_unix(kf_sandbox *self, int on)
{
    self->unix_ok = on;
}

void kf_sandbox_defer_unix(kf_sandbox *self)
{
    self->unix_later = 1;
}

int kf_sandbox_enabled(void)
{
    const char *v = getenv("KF_SANDBOX");
    return !v || strcmp(v, "0") != 0;
}

/* a is b, or b is inside a. */
static int covers(const char *a, const char *b)
{
    size_t na = strlen(a);
    if (strncmp(a, b, na) != 0)
        return 0;
    return b[na] == '\0' || b[na] == '/' || (na == 1 && a[0] == '/'); /* "/" covers all */
}

/* ---- network ---- */

/* Brings the namespace's loopback up, so tools that talk to their target
 * over 127.0.0.1 (Nsight Compute) still can; the node's is not reachable. */
static void loopback_up(void)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0) {
        ifr.ifr_flags |= IFF_UP;
        ioctl(fd, SIOCSIFFLAGS, &ifr);
    }
    close(fd);
}

#if defined(__x86_64__)
#define SB_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SB_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif

/* The socket filter: io_uring refused (its socket and connect operations
 * would pass by seccomp), AF_PACKET refused, with deny_inet AF_INET and
 * AF_INET6 too, and with deny_unix socket(AF_UNIX): a Unix socket by path
 * (a coordinator's control socket on this machine) is reached through
 * socket() then connect(), which Landlock does not cover (its scope holds
 * abstract sockets only).
 * socketpair() stays: it reaches nobody, and Python and the runner use it.
 * A system call from another ABI (x32, i386 by int 0x80, where socketcall
 * would carry socket()) is refused as well. */
static int install_seccomp(int deny_inet, int deny_unix)
{
#ifdef SB_ARCH
    enum { ACCES = 14, NOSYS = 15 }; /* the two verdicts' indices below */
    struct sock_filter f[] = {
        /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SB_ARCH, 0, NOSYS - 2),
        /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
        /* 3 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, NOSYS - 4, 0),
#else
        /* 3 */ BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
#endif
        /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, NOSYS - 5, 0),
        /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 1, 0),
        /* 6 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_PACKET, ACCES - 9, 0),
        /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, deny_inet ? AF_INET : AF_PACKET, ACCES - 10, 0),
        /* 10 */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, deny_inet ? AF_INET6 : AF_PACKET, ACCES - 11, 0),
        /* 11 */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, deny_unix ? AF_UNIX : AF_PACKET, ACCES - 12, 0),
        /* 12 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 13 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 14 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
        /* 15 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof *f), f};
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
#else
    (void)deny_inet;
    (void)deny_unix;
    errno = ENOSYS;
    return -1;
#endif
}

/* ---- capabilities ---- */

/* A root runner keeps uid 0 (its files, the GPU's device files) but no
 * capability: no raw reads of memory or disks, no mounts, nothing that
 * would pass by the file rules. None is regained by exec: with
 * no_new_privs an exec gets at most what the process had; the bounding
 * set is dropped too where the process may (CAP_SETPCAP). */
static int drop_caps(void)
{
    for (int cap = 0; cap <= 63; cap++)
        prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct {
        uint32_t version;
        int pid;
    } hdr = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct {
        uint32_t effective, permitted, inheritable;
    } data[2];
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &hdr, data);
}

/* ---- Landlock ---- */

static int landlock_abi(void)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
    return v > 0 ? (int)v : 0;
}

static int apply_landlock(kf_sandbox *s, int abi, int tcp, unsigned skip, kf_err *err)
{
    uint64_t fs = LL_FS_ABI1;
    if (abi >= 2)
        fs |= LL_FS_REFER;
    if (abi >= 3)
        fs |= LL_FS_TRUNCATE;
    struct ll_ruleset_attr attr = {fs, 0, 0};
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 4) {
        size += sizeof attr.handled_access_net;
        attr.handled_access_net =
            tcp && !(skip & KF_SB_LANDLOCK_TCP) ? LL_NET_BIND_TCP | LL_NET_CONNECT_TCP : 0;
    }
    if (abi >= 6) {
        size += sizeof attr.scoped;
        attr.scoped = skip & KF_SB_SIGNAL ? 0 : LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
    }
    int rfd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rfd < 0)
        return kf_err_set(err, KF_EIO, "sandbox: landlock_create_ruleset (ABI %d): %s", abi,
                          strerror(errno));
    int rc = KF_OK;
    for (size_t i = 0; i < s->nrules && rc == KF_OK; i++) {
        const rule *r = &s->rules[i];
        char real[PATH_MAX];
        if (!realpath(r->path, real))
            continue; /* absent here: nothing to grant */
        const char *hit = NULL;
        /* No grant covers a protected dir; only the sandbox's own may lie
         * inside one. */
        for (size_t p = 0; p < s->nprotect && !hit; p++)
            if (covers(real, s->protect[p]) || (!r->own && covers(s->protect[p], real)))
                hit = s->protect[p];
        if (hit) {
            kf_warn("sandbox.not_granted",
                    "path=%s protected=%s why=\"it holds or is inside "
                    "kfleet's state; kernels must not read it\"",
                    real, hit);
            continue;
        }
        int fd = open(real, O_PATH | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        struct ll_path_beneath pb = {r->write ? fs : LL_FS_READ, fd};
        if (!S_ISDIR(st.st_mode))
            pb.allowed_access &= LL_FS_FILE & fs;
        if (syscall(SYS_landlock_add_rule, rfd, LL_RULE_PATH, &pb, 0) != 0)
            rc =
                kf_err_set(err, KF_EIO, "sandbox: landlock_add_rule %s: %s", real, strerror(errno));
        close(fd);
    }
    if (rc == KF_OK && syscall(SYS_landlock_restrict_self, rfd, 0) != 0)
        rc = kf_err_set(err, KF_EIO, "sandbox: landlock_restrict_self: %s", strerror(errno));
    close(rfd);
    return rc;
}

/* The namespace, seccomp and Landlock hold for the calling thread and
 * those it starts later, not for the others counted here. */
int kf_sandbox_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* KF_SANDBOX_SKIP=netns,seccomp,... : mechanisms the operator turns off on
 * a node where one breaks a toolchain (found with bench/gpu/run.sh
 * sandboxdiag); each is then named as missing, like one the node lacks. */
static unsigned skip_mask(void)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"landlock", KF_SB_LANDLOCK},
                 {"landlock-tcp", KF_SB_LANDLOCK_TCP},
                 {"landlock-scope", KF_SB_SIGNAL},
                 {"netns", KF_SB_NETNS},
                 {"seccomp", KF_SB_SECCOMP},
                 {"nnp", KF_SB_NNP},
                 {"caps", KF_SB_CAPS},
                 {"unix", KF_SB_UNIX}};
    const char *v = getenv("KF_SANDBOX_SKIP");
    unsigned m = 0;
    for (size_t i = 0; v && i < sizeof names / sizeof *names; i++) {
        size_t n = strlen(names[i].name);
        for (const char *p = v; (p = strstr(p, names[i].name)); p += n)
            if ((p == v || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
                m |= names[i].bit;
    }
    return m;
}

int kf_sandbox_enter(kf_sandbox *self, unsigned *missing, kf_err *err)
{
    unsigned skip = skip_mask() | self->skip;
    unsigned miss = skip;
    int threads = kf_sandbox_threads();
    if (threads > 1)
        kf_warn("sandbox.threads",
                "n=%d why=\"threads started before the sandbox are not "
                "confined by it; enter it first\"",
                threads);
    int netns = !(skip & KF_SB_NETNS) && unshare(CLONE_NEWNET) == 0;
    if (netns)
        loopback_up();
    else
        miss |= KF_SB_NETNS;
    /* Without a namespace, a tool's loopback needs the node's network. */
    int deny_inet = !netns && !self->loopback;
    if (!(skip & KF_SB_NNP) && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        miss |= KF_SB_NNP;
    if (!(skip & KF_SB_CAPS) && geteuid() == 0 && !self->loopback && drop_caps() != 0)
        miss |= KF_SB_CAPS;
    /* Refused by the kernel or by a container's own filter: named, not
     * fatal (a bad filter, EFAULT, is this code's bug and fails). */
    int deny_unix = !self->unix_ok && !self->unix_later && !(skip & KF_SB_UNIX);
    if (!(skip & KF_SB_SECCOMP) && install_seccomp(deny_inet, deny_unix) != 0) {
        if (errno == EFAULT)
            return kf_err_set(err, KF_EIO, "sandbox: seccomp: %s", strerror(errno));
        miss |= KF_SB_SECCOMP;
    }
    if ((miss & KF_SB_SECCOMP) && !self->unix_ok && !self->unix_later)
        miss |= KF_SB_UNIX;
    int abi = skip & KF_SB_LANDLOCK ? 0 : landlock_abi();
    if (abi < 1)
        miss |= KF_SB_LANDLOCK | KF_SB_LANDLOCK_TCP | KF_SB_SIGNAL;
    if (abi < 4)
        miss |= KF_SB_LANDLOCK_TCP;
    if (abi < 6)
        miss |= KF_SB_SIGNAL;
    if (abi >= 1) {
        int rc = apply_landlock(self, abi, deny_inet, skip, err);
        if (rc != KF_OK)
            return rc;
    }
    if (missing)
        *missing = miss;
    return KF_OK;
}

int kf_sandbox_deny_unix(unsigned *missing, kf_err *err)
{
    unsigned skip = skip_mask();
    if (skip & (KF_SB_UNIX | KF_SB_SECCOMP)) {
        if (missing)
            *missing |= KF_SB_UNIX;
        return KF_OK;
    }
    /* A second filter: the first one's verdicts stand (the stricter wins). */
    if (install_seccomp(0, 1) != 0) {
        if (errno == EFAULT)
            return kf_err_set(err, KF_EIO, "sandbox: seccomp: %s", strerror(errno));
        if (missing)
            *missing |= KF_SB_UNIX;
    }
    return KF_OK;
}

/* ---- what the agent says ---- */

void kf_sandbox_describe(unsigned missing, char *text, size_t len)
{
    static const struct {
        unsigned bit;
        const char *what;
    } rows[] = {
        {KF_SB_LANDLOCK,
         "Landlock (absent from this kernel, or left off by KF_SANDBOX_SKIP: a kernel can read "
         "and write every file the agent's user can, its keys and the store included)"},
        {KF_SB_NETNS,
         "a network namespace (no CAP_SYS_ADMIN here, or left off by KF_SANDBOX_SKIP; the "
         "seccomp filter refuses inet sockets instead)"},
        {KF_SB_SECCOMP, "the seccomp socket filter"},
        {KF_SB_UNIX, "refusing Unix sockets (no seccomp, or left off by KF_SANDBOX_SKIP: a kernel "
                     "can connect to a Unix socket by path, a coordinator's control socket on "
                     "this machine included)"},
        {KF_SB_LANDLOCK_TCP, "Landlock's TCP rules (Landlock ABI < 4)"},
        {KF_SB_SIGNAL, "Landlock's signal scope (Landlock ABI < 6: a kernel can signal the "
                       "agent's other processes)"},
        {KF_SB_NNP, "no_new_privs"},
        {KF_SB_CAPS, "dropping a root runner's capabilities"},
    };
    size_t used = 0;
    text[0] = '\0';
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if ((missing & rows[i].bit) && used < len)
            used += (size_t)snprintf(text + used, len - used, "%s%s",
                                     used ? "; " : "not enforced: ", rows[i].what);
    if ((missing & (KF_SB_NETNS | KF_SB_SECCOMP | KF_SB_LANDLOCK_TCP)) ==
            (KF_SB_NETNS | KF_SB_SECCOMP | KF_SB_LANDLOCK_TCP) &&
        used < len)
        snprintf(text + used, len - used, "; a kernel can reach the network");
}

unsigned kf_sandbox_probe(char *text, size_t len)
{
    if (!kf_sandbox_enabled()) {
        snprintf(text, len,
                 "the sandbox is off (KF_SANDBOX=0): kernels run with the agent's "
                 "files, environment and network");
        return ~0u;
    }
    /* The mask comes back through a pipe: it has more bits than an exit
     * status carries. */
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        p[0] = p[1] = -1;
    pid_t pid = p[0] >= 0 ? fork() : -1;
    if (pid == 0) {
        close(p[0]);
        kf_sandbox *s = kf_sandbox_new();
        unsigned miss = 0;
        kf_err e;
        int rc = kf_sandbox_enter(s, &miss, &e);
        _exit(rc == KF_OK && write(p[1], &miss, sizeof miss) == (ssize_t)sizeof miss ? 0 : 1);
    }
    if (p[1] >= 0)
        close(p[1]);
    unsigned miss = ~0u;
    int st = 0;
    while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (p[0] >= 0 && (pid < 0 || read(p[0], &miss, sizeof miss) != (ssize_t)sizeof miss))
        miss = ~0u;
    if (p[0] >= 0)
        close(p[0]);
    if (pid < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || miss == ~0u) {
        snprintf(text, len,
                 "the sandbox could not be tried here (probe %s): runners fail "
                 "rather than run unconfined",
                 pid < 0 ? "did not start" : "failed");
        return ~0u;
    }
    kf_sandbox_describe(miss, text, len);
    return miss;
}

void kf_sandbox_scrub_env(kf_execenv *env)
{
    static const char *const exact[] = {"SSH_AUTH_SOCK", "SSH_AGENT_PID", "XDG_RUNTIME_DIR",
                                        "DBUS_SESSION_BUS_ADDRESS"};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        kf_execenv_unset(env, exact[i]);
    kf_execenv_unset_prefix(env, "KFLEET_");
}

void kf_sandbox_close_fds(int from)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)from, ~0u, 0) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = from; fd < max; fd++)
        close(fd);
}

int kf_sandbox_place_fds(const int *src, int n)
{
    int tmp[KF_SANDBOX_PLACE_MAX];
    if (n < 0 || n > KF_SANDBOX_PLACE_MAX) {
        errno = EINVAL;
        return -1;
    }
    /* Copies above every target first, so no dup2 below clobbers a source. */
    for (int i = 0; i < n; i++) {
        tmp[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD_CLOEXEC, n) : -1;
        if (src[i] >= 0 && tmp[i] < 0)
            return -1;
    }
    for (int i = 0; i < n; i++) {
        if (tmp[i] < 0)
            close(i);
        else if (dup2(tmp[i], i) < 0)
            return -1;
    }
    kf_sandbox_close_fds(n);
    return 0;
}
