/* cgroup — see cgroup.h. The hierarchies come from /proc/self/cgroup (which
 * group this process is in, per hierarchy) and /proc/self/mountinfo (where
 * each hierarchy is mounted, and from which of its groups): a group's
 * directory is the mount point plus its path below the mount's root. */
#include "runner/cgroup.h"

#include "common/buf.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What a hierarchy is for. */
enum { H_V2 = 1, H_MEMORY = 2, H_PIDS = 4, H_FREEZER = 8 };

typedef struct hier {
    unsigned kind;        /* H_* */
    unsigned v2_limits;   /* KF_CG_MEMORY / KF_CG_PIDS enabled for runner groups (v2) */
    char own[KF_CG_PATH]; /* the agent's group: .../kfleet-PID */
} hier;

struct kf_cgroups {
    hier h[KF_CG_MAX_DIRS];
    size_t nh;
    unsigned have;
    uint64_t memory, pids;
    char missing[1024];
    char describe[1024];
};

struct kf_cgroup {
    size_t n;
    unsigned kind[KF_CG_MAX_DIRS];
    char dir[KF_CG_MAX_DIRS][KF_CG_PATH];
    char procs[KF_CG_MAX_DIRS][KF_CG_PATH + 16];
};

/* ---- small file helpers ---- */

static int write_str(const char *path, const char *s)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(s);
    ssize_t w = write(fd, s, n);
    int e = errno;
    close(fd);
    errno = e;
    return w == (ssize_t)n ? 0 : -1;
}

static int write_u64(const char *path, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%" PRIu64, v);
    return write_str(path, s);
}

/* A file of one number ("max" and v1's near-2^63 "unlimited" read as 0). */
static uint64_t read_u64(const char *path)
{
    kf_buf b = KF_BUF_INIT;
    uint64_t v = 0;
    if (kf_buf_read_file(&b, path) == KF_OK && isdigit((unsigned char)b.data[0]))
        v = strtoull(b.data, NULL, 10);
    kf_buf_release(&b);
    return v >= (UINT64_C(1) << 62) ? 0 : v;
}

/* The number after "key " on a line of a flat-keyed file (memory.events). */
static uint64_t read_key(const char *path, const char *key)
{
    kf_buf b = KF_BUF_INIT;
    uint64_t v = 0;
    size_t kl = strlen(key);
    if (kf_buf_read_file(&b, path) == KF_OK)
        for (const char *p = b.data; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
            if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
                v = strtoull(p + kl + 1, NULL, 10);
                break;
            }
    kf_buf_release(&b);
    return v;
}

static int exists(const char *dir, const char *file)
{
    char p[KF_CG_PATH + 64];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return access(p, F_OK) == 0;
}

static void pathf(char *out, size_t len, const char *dir, const char *file)
{
    snprintf(out, len, "%s/%s", dir, file);
}

/* ---- where this process's groups are ---- */

/* Whether the list `s` (words separated by any of `seps`) holds `word`. */
static int has_word(const char *s, const char *word, const char *seps)
{
    size_t wl = strlen(word);
    for (const char *p = s; p && *p;) {
        size_t n = strcspn(p, seps);
        if (n == wl && strncmp(p, word, wl) == 0)
            return 1;
        p += n + (p[n] != '\0');
    }
    return 0;
}

/* mountinfo's octal escapes (\040 for a space) undone in place. */
static void unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

/* The directory of group `path` of the hierarchy a mount of `fstype`
 * (with controller `ctrl` in its options, for v1) shows: 0, or -1 when no
 * mount shows it. */
static int group_dir(const kf_buf *mi, const char *fstype, const char *ctrl, const char *path,
                     char *out, size_t len)
{
    char line[4096];
    for (const char *p = mi->data; *p;) {
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        p += n + (p[n] == '\n');
        char *sep = strstr(line, " - ");
        if (!sep)
            continue;
        *sep = '\0';
        char fs[64], opts[1024], root[2048], mnt[2048];
        if (sscanf(sep + 3, "%63s %*s %1023s", fs, opts) != 2 || strcmp(fs, fstype) != 0 ||
            (ctrl && !has_word(opts, ctrl, ",")))
            continue;
        if (sscanf(line, "%*s %*s %*s %2047s %2047s", root, mnt) != 2)
            continue;
        unescape(root);
        unescape(mnt);
        size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
            continue;
        const char *rest = path + rl;
        if (snprintf(out, len, "%s%s", mnt, strcmp(rest, "/") == 0 ? "" : rest) >= (int)len)
            continue;
        return 0;
    }
    return -1;
}

/* The hierarchies this process is in that kfleet uses, each with the
 * directory of its group there. */
typedef struct own_dirs {
    size_t n;
    unsigned kind[KF_CG_MAX_DIRS];
    char dir[KF_CG_MAX_DIRS][KF_CG_PATH];
} own_dirs;

static void add_own(own_dirs *o, unsigned kind, const char *dir)
{
    if (o->n < KF_CG_MAX_DIRS) {
        o->kind[o->n] = kind;
        snprintf(o->dir[o->n++], KF_CG_PATH, "%s", dir);
    }
}

static void find_own(own_dirs *o)
{
    memset(o, 0, sizeof *o);
    kf_buf cg = KF_BUF_INIT, mi = KF_BUF_INIT;
    if (kf_buf_read_file(&cg, "/proc/self/cgroup") != KF_OK ||
        kf_buf_read_file(&mi, "/proc/self/mountinfo") != KF_OK)
        goto out;
    char line[4096];
    for (const char *p = cg.data; *p;) {
        size_t n = strcspn(p, "\n");
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        p += n + (p[n] == '\n');
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        char dir[KF_CG_PATH];
        if (strcmp(line, "0") == 0 && !*ctrls) {
            if (group_dir(&mi, "cgroup2", NULL, path, dir, sizeof dir) == 0)
                add_own(o, H_V2, dir);
            continue;
        }
        static const struct {
            const char *name;
            unsigned kind;
        } wanted[] = {{"memory", H_MEMORY}, {"pids", H_PIDS}, {"freezer", H_FREEZER}};
        unsigned kind = 0;
        const char *first = NULL;
        for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++)
            if (has_word(ctrls, wanted[i].name, ",")) {
                kind |= wanted[i].kind;
                first = first ? first : wanted[i].name;
            }
        if (kind && group_dir(&mi, "cgroup", first, path, dir, sizeof dir) == 0)
            add_own(o, kind, dir);
    }
out:
    kf_buf_release(&cg);
    kf_buf_release(&mi);
}

/* ---- processes in a group ---- */

/* The pids listed in dir/cgroup.procs, into *out (the caller frees). */
static size_t list_procs(const char *dir, pid_t **out)
{
    char p[KF_CG_PATH + 32];
    pathf(p, sizeof p, dir, "cgroup.procs");
    kf_buf b = KF_BUF_INIT;
    size_t n = 0, cap = 0;
    *out = NULL;
    if (kf_buf_read_file(&b, p) == KF_OK)
        for (char *s = b.data; *s;) {
            char *end;
            long v = strtol(s, &end, 10);
            if (end == s)
                break;
            if (v > 0) {
                if (n == cap)
                    *out = kf_xrealloc(*out, (cap = cap ? cap * 2 : 64) * sizeof **out);
                (*out)[n++] = (pid_t)v;
            }
            s = end + (*end == '\n');
        }
    kf_buf_release(&b);
    return n;
}

static void nap_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* Kills everything in the groups dirs[0..n) (kinds[i] says what each is),
 * until they are empty or about 2 s passed. The count found first, or -1. */
static int kill_dirs(size_t n, const unsigned *kinds, char (*dirs)[KF_CG_PATH])
{
    int found = -1;
    for (int round = 0; round < 200; round++) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++) {
            pid_t *pids;
            size_t k = list_procs(dirs[i], &pids);
            left += k;
            free(pids);
            if (found < 0) /* each hierarchy lists the same processes */
                found = (int)k;
        }
        if (left == 0)
            return found;
        /* v2's cgroup.kill reaches every process at once, forks racing it
         * included; else each hierarchy is frozen (where it can be), each
         * process killed, and thawed: a frozen process dies when thawed. */
        int done = 0;
        for (size_t i = 0; i < n && !done; i++) {
            char p[KF_CG_PATH + 32];
            pathf(p, sizeof p, dirs[i], "cgroup.kill");
            done = (kinds[i] & H_V2) && write_str(p, "1") == 0;
        }
        for (size_t i = 0; i < n && !done; i++) {
            char fz[KF_CG_PATH + 32];
            int v2 = (kinds[i] & H_V2) != 0, v1 = (kinds[i] & H_FREEZER) != 0;
            pathf(fz, sizeof fz, dirs[i], v2 ? "cgroup.freeze" : "freezer.state");
            int frozen = (v2 || v1) && write_str(fz, v2 ? "1" : "FROZEN") == 0;
            pid_t *pids;
            size_t k = list_procs(dirs[i], &pids);
            for (size_t j = 0; j < k; j++)
                kill(pids[j], SIGKILL);
            free(pids);
            if (frozen)
                write_str(fz, v2 ? "0" : "THAWED");
        }
        nap_ms(round < 20 ? 1 : 10);
    }
    return -1;
}

/* Removes group dir and every group below it, killing what is in them
 * (a group of an agent that is gone). */
static void remove_tree(const char *dir, unsigned kind, int depth)
{
    DIR *d = depth < 8 ? opendir(dir) : NULL;
    if (d) {
        char sub[KF_CG_PATH];
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_type != DT_DIR || e->d_name[0] == '.')
                continue;
            if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) < (int)sizeof sub)
                remove_tree(sub, kind, depth + 1);
        }
        closedir(d);
    }
    char one[1][KF_CG_PATH];
    snprintf(one[0], sizeof one[0], "%s", dir);
    kill_dirs(1, &kind, one);
    rmdir(dir);
}

/* Whether the agent of a kfleet-PID group may still run: any process of
 * that pid counts (a reused pid only delays the group's removal; taking a
 * live agent's runners would be worse). */
static int agent_alive(long pid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%ld", pid);
    return access(p, F_OK) == 0;
}

/* Removes the kfleet-PID groups under parent whose agent is gone. */
static void sweep_stale(const char *parent, unsigned kind)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    char sub[KF_CG_PATH];
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        if (strncmp(e->d_name, "kfleet-", 7) != 0 || !isdigit((unsigned char)e->d_name[7]))
            continue;
        long pid = strtol(e->d_name + 7, &end, 10);
        if ((*end && strcmp(end, ".agent") != 0) || pid == (long)getpid() || agent_alive(pid))
            continue;
        if (snprintf(sub, sizeof sub, "%s/%s", parent, e->d_name) >= (int)sizeof sub)
            continue;
        kf_info("cgroup.stale", "group=%s", sub);
        remove_tree(sub, kind, 0);
    }
    closedir(d);
}

/* ---- the agent's groups ---- */

/* Appends to the sentence s ("; " between parts). */
static void note(char *s, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void note(char *s, size_t len, const char *fmt, ...)
{
    size_t n = strlen(s);
    if (n && n + 2 < len) {
        memcpy(s + n, "; ", 3);
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    if (n < len)
        vsnprintf(s + n, len - n, fmt, ap);
    va_end(ap);
}

/* v2: the memory and pids controllers of own's parent enabled for the
 * groups below it. A group with processes cannot have them (EBUSY): the
 * agent moves itself into a leaf when it is alone there. */
static unsigned v2_controllers(const char *parent, const char *own, char *why, size_t whylen)
{
    char p[KF_CG_PATH + 32];
    kf_buf avail = KF_BUF_INIT;
    pathf(p, sizeof p, parent, "cgroup.controllers");
    kf_buf_read_file(&avail, p);
    unsigned got = 0;
    static const struct {
        const char *name, *plus;
        unsigned bit;
    } c[] = {{"memory", "+memory", KF_CG_MEMORY}, {"pids", "+pids", KF_CG_PIDS}};
    for (size_t i = 0; i < 2; i++) {
        if (!has_word(avail.data, c[i].name, " \n"))
            continue;
        pathf(p, sizeof p, parent, "cgroup.subtree_control");
        int ok = write_str(p, c[i].plus) == 0;
        if (!ok && errno == EBUSY) {
            /* Processes in parent: the agent alone there moves to a leaf. */
            pid_t *pids;
            size_t k = list_procs(parent, &pids);
            int alone = k == 1 && pids[0] == getpid();
            free(pids);
            char leaf[KF_CG_PATH + 16], lp[KF_CG_PATH + 48];
            snprintf(leaf, sizeof leaf, "%s.agent", own);
            pathf(lp, sizeof lp, leaf, "cgroup.procs");
            if (alone && (mkdir(leaf, 0755) == 0 || errno == EEXIST) && write_str(lp, "0") == 0) {
                kf_info("cgroup.moved", "agent=%d into=%s", (int)getpid(), leaf);
                ok = write_str(p, c[i].plus) == 0;
            } else {
                errno = EBUSY;
            }
        }
        if (!ok) {
            snprintf(why, whylen,
                     "%s cannot give its children the %s controller (%s): the agent's group holds "
                     "other processes; give the agent a delegated group of its own (systemd "
                     "Delegate=yes)",
                     parent, c[i].name, strerror(errno));
            continue;
        }
        pathf(p, sizeof p, own, "cgroup.subtree_control");
        if (write_str(p, c[i].plus) == 0)
            got |= c[i].bit;
    }
    kf_buf_release(&avail);
    return got;
}

typedef struct probe {
    kf_cgroups *cgs;
    char why_v2[512], why_any[512];
} probe;

static void add_hier(probe *pr, unsigned kind, const char *dir)
{
    kf_cgroups *cgs = pr->cgs;
    if (cgs->nh >= KF_CG_MAX_DIRS)
        return;
    hier *h = &cgs->h[cgs->nh];
    memset(h, 0, sizeof *h);
    if (snprintf(h->own, sizeof h->own, "%s/kfleet-%d", dir, (int)getpid()) >= (int)sizeof h->own)
        return;
    sweep_stale(dir, kind);
    if (mkdir(h->own, 0755) != 0 && errno != EEXIST) {
        snprintf(pr->why_any, sizeof pr->why_any, "cannot make a group in %s: %s", dir,
                 strerror(errno));
        return;
    }
    h->kind = kind;
    if (kind & H_V2)
        h->v2_limits = v2_controllers(dir, h->own, pr->why_v2, sizeof pr->why_v2);
    cgs->nh++;
    cgs->have |= KF_CG_KILL;
    if ((kind & H_MEMORY) || (h->v2_limits & KF_CG_MEMORY)) {
        cgs->have |= KF_CG_MEMORY;
        char p[KF_CG_PATH + 32];
        pathf(p, sizeof p, dir, (kind & H_V2) ? "memory.max" : "memory.limit_in_bytes");
        uint64_t lim = read_u64(p);
        if (lim && (!cgs->memory || lim < cgs->memory))
            cgs->memory = lim;
    }
    if ((kind & H_PIDS) || (h->v2_limits & KF_CG_PIDS)) {
        cgs->have |= KF_CG_PIDS;
        char p[KF_CG_PATH + 32];
        pathf(p, sizeof p, dir, "pids.max"); /* "max" reads 0 */
        uint64_t lim = read_u64(p);
        if (lim && (!cgs->pids || lim < cgs->pids))
            cgs->pids = lim;
    }
    note(cgs->describe, sizeof cgs->describe, "%s %s%s%s%s", (kind & H_V2) ? "v2" : "v1", h->own,
         (kind & H_MEMORY) || (h->v2_limits & KF_CG_MEMORY) ? " memory" : "",
         (kind & H_PIDS) || (h->v2_limits & KF_CG_PIDS) ? " pids" : "",
         (kind & (H_V2 | H_FREEZER)) ? " kill" : "");
}

static uint64_t mem_total(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

kf_cgroups *kf_cgroups_new(void)
{
    kf_cgroups *cgs = kf_xcalloc(1, sizeof *cgs);
    probe pr = {.cgs = cgs};
    own_dirs o;
    find_own(&o);
    int v2 = 0;
    for (size_t i = 0; i < o.n; i++)
        v2 |= (o.kind[i] & H_V2) != 0;
    for (size_t i = 0; i < o.n; i++)
        if (o.kind[i] != H_FREEZER || !v2) /* v2 kills without the v1 freezer */
            add_hier(&pr, o.kind[i], o.dir[i]);
    uint64_t total = mem_total();
    if (!cgs->memory || (total && total < cgs->memory))
        cgs->memory = total;
    if (!(cgs->have & KF_CG_KILL))
        note(cgs->missing, sizeof cgs->missing,
             "no control group (%s): a runner's processes that leave its process group "
             "(setsid) outlive it, and nothing bounds its memory or processes",
             pr.why_any[0] ? pr.why_any : "no writable cgroup hierarchy");
    else {
        if (!(cgs->have & KF_CG_MEMORY))
            note(cgs->missing, sizeof cgs->missing, "no memory limit on runners (%s)",
                 pr.why_v2[0] ? pr.why_v2 : "no memory controller");
        if (!(cgs->have & KF_CG_PIDS))
            note(cgs->missing, sizeof cgs->missing, "no process limit on runners (%s)",
                 pr.why_v2[0] ? pr.why_v2 : "no pids controller");
    }
    return cgs;
}

void kf_cgroups_destroy(kf_cgroups **self)
{
    kf_cgroups *cgs = *self;
    if (!cgs)
        return;
    for (size_t i = 0; i < cgs->nh; i++)
        remove_tree(cgs->h[i].own, cgs->h[i].kind, 0);
    free(cgs);
    *self = NULL;
}

unsigned kf_cgroups_have(const kf_cgroups *cgs)
{
    return cgs ? cgs->have : 0;
}

const char *kf_cgroups_missing(const kf_cgroups *cgs)
{
    return cgs ? cgs->missing : "";
}

const char *kf_cgroups_describe(const kf_cgroups *cgs)
{
    return cgs ? cgs->describe : "";
}

uint64_t kf_cgroups_memory(const kf_cgroups *cgs)
{
    return cgs ? cgs->memory : mem_total();
}

uint64_t kf_cgroups_pids(const kf_cgroups *cgs)
{
    return cgs ? cgs->pids : 0;
}

/* ---- a runner's group ---- */

/* Writes limit v into dir/file; a file the group lacks is skipped when
 * optional (memsw where swap is not accounted). */
static int limit(const char *dir, const char *file, uint64_t v, int optional, kf_err *err)
{
    char p[KF_CG_PATH + 48];
    pathf(p, sizeof p, dir, file);
    if (optional && access(p, F_OK) != 0)
        return KF_OK;
    if (write_u64(p, v) == 0 || optional)
        return KF_OK;
    return kf_err_set(err, KF_EIO,
                      "cannot set %s to %" PRIu64 ": %s (KF_RUNNER_MEMORY and KF_RUNNER_PIDS in "
                      "the agent's environment change the limits, 0 leaves one off)",
                      p, v, strerror(errno));
}

kf_cgroup *kf_cgroup_new(kf_cgroups *cgs, const char *name, uint64_t memory_max, uint64_t pids_max,
                         kf_err *err)
{
    if (!cgs || !cgs->nh) {
        kf_err_set(err, KF_EUNAVAIL, "no control group on this node");
        return NULL;
    }
    kf_cgroup *cg = kf_xcalloc(1, sizeof *cg);
    int rc = KF_OK;
    for (size_t i = 0; i < cgs->nh && rc == KF_OK; i++) {
        const hier *h = &cgs->h[i];
        char *dir = cg->dir[cg->n];
        if (snprintf(dir, KF_CG_PATH, "%s/%s", h->own, name) >= KF_CG_PATH) {
            rc = kf_err_set(err, KF_EINVAL, "cgroup path too long under %s", h->own);
            break;
        }
        if (mkdir(dir, 0755) != 0) {
            rc = kf_err_set(err, KF_EIO, "cannot make the runner's group %s: %s", dir,
                            strerror(errno));
            break;
        }
        cg->kind[cg->n] = h->kind;
        char procs[KF_CG_PATH + 16];
        pathf(procs, sizeof procs, dir, "cgroup.procs");
        memcpy(cg->procs[cg->n], procs, sizeof procs);
        cg->n++;
        int v2 = (h->kind & H_V2) != 0;
        if (memory_max && ((h->kind & H_MEMORY) || (h->v2_limits & KF_CG_MEMORY))) {
            rc = limit(dir, v2 ? "memory.max" : "memory.limit_in_bytes", memory_max, 0, err);
            /* No swap: a kernel over its limit is killed, not paged out for minutes. */
            if (rc == KF_OK)
                rc = v2 ? limit(dir, "memory.swap.max", 0, 1, err)
                        : limit(dir, "memory.memsw.limit_in_bytes", memory_max, 1, err);
        }
        if (rc == KF_OK && pids_max && ((h->kind & H_PIDS) || (h->v2_limits & KF_CG_PIDS)))
            rc = limit(dir, "pids.max", pids_max, 0, err);
    }
    if (rc != KF_OK) {
        kf_cgroup_destroy(&cg);
        return NULL;
    }
    return cg;
}

void kf_cgroup_destroy(kf_cgroup **self)
{
    kf_cgroup *cg = *self;
    if (!cg)
        return;
    kf_cgroup_kill(cg);
    for (size_t i = 0; i < cg->n; i++)
        if (rmdir(cg->dir[i]) != 0 && errno != ENOENT)
            kf_warn("cgroup.rmdir", "group=%s error=\"%s\"", cg->dir[i], strerror(errno));
    free(cg);
    *self = NULL;
}

size_t kf_cgroup_nprocs(const kf_cgroup *cg)
{
    return cg ? cg->n : 0;
}

const char *kf_cgroup_procs(const kf_cgroup *cg, size_t i)
{
    return cg && i < cg->n ? cg->procs[i] : NULL;
}

int kf_cgroup_kill(kf_cgroup *cg)
{
    return cg ? kill_dirs(cg->n, cg->kind, cg->dir) : 0;
}

/* Whether pid's chain of parents reaches root. */
int kf_cgroup_pid_stat(pid_t pid, char *state, pid_t *ppid)
{
    char p[64], buf[512];
    snprintf(p, sizeof p, "/proc/%d/stat", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the name may hold spaces and ')' */
    char st;
    int pp;
    if (!rp || sscanf(rp + 1, " %c %d", &st, &pp) != 2)
        return -1;
    if (state)
        *state = st;
    if (ppid)
        *ppid = (pid_t)pp;
    return 0;
}

/* Whether pid's chain of parents reaches root (a pid gone meanwhile: yes,
 * there is nothing to kill). */
static int in_tree(pid_t pid, pid_t root)
{
    for (int depth = 0; depth < 256 && pid > 1; depth++) {
        pid_t ppid;
        if (kf_cgroup_pid_stat(pid, NULL, &ppid) != 0 || ppid == root)
            return 1;
        pid = ppid;
    }
    return 0;
}

int kf_cgroup_kill_orphans(kf_cgroup *cg, pid_t root)
{
    if (!cg || !cg->n)
        return 0;
    pid_t *killed = NULL;
    size_t nkilled = 0;
    /* Twice: an orphan may have forked between the listing and its kill
     * (one killed already may still be listed: counted once). */
    for (int pass = 0; pass < 2; pass++) {
        pid_t *pids;
        size_t k = list_procs(cg->dir[0], &pids);
        for (size_t i = 0; i < k; i++) {
            size_t j = 0;
            while (j < nkilled && killed[j] != pids[i])
                j++;
            if (j < nkilled || pids[i] == root || in_tree(pids[i], root) ||
                kill(pids[i], SIGKILL) != 0)
                continue;
            killed = kf_xrealloc(killed, (nkilled + 1) * sizeof *killed);
            killed[nkilled++] = pids[i];
        }
        free(pids);
        if (k == 0)
            break;
    }
    free(killed);
    return (int)nkilled;
}

/* The events of the groups dirs[0..n). */
static void events_of(size_t n, const unsigned *kinds, const char (*dirs)[KF_CG_PATH],
                      kf_cgroup_events *ev)
{
    memset(ev, 0, sizeof *ev);
    char p[KF_CG_PATH + 48];
    for (size_t i = 0; i < n; i++) {
        const char *d = dirs[i];
        if ((kinds[i] & H_V2) && exists(d, "memory.events")) {
            pathf(p, sizeof p, d, "memory.max");
            ev->memory_max = read_u64(p);
            pathf(p, sizeof p, d, "memory.events");
            ev->oom_kills = read_key(p, "oom_kill");
            ev->memory_hits = read_key(p, "max");
            pathf(p, sizeof p, d, "memory.peak");
            ev->memory_peak = read_u64(p);
        }
        if (kinds[i] & H_MEMORY) {
            pathf(p, sizeof p, d, "memory.limit_in_bytes");
            ev->memory_max = read_u64(p);
            pathf(p, sizeof p, d, "memory.oom_control");
            ev->oom_kills = read_key(p, "oom_kill");
            pathf(p, sizeof p, d, "memory.failcnt");
            ev->memory_hits = read_u64(p);
            pathf(p, sizeof p, d, "memory.max_usage_in_bytes");
            ev->memory_peak = read_u64(p);
        }
        if ((kinds[i] & H_PIDS) || ((kinds[i] & H_V2) && exists(d, "pids.events"))) {
            pathf(p, sizeof p, d, "pids.max");
            ev->pids_max = read_u64(p);
            pathf(p, sizeof p, d, "pids.events");
            ev->pids_refused = read_key(p, "max");
        }
    }
}

void kf_cgroup_events_get(const kf_cgroup *cg, kf_cgroup_events *ev)
{
    memset(ev, 0, sizeof *ev);
    if (cg)
        events_of(cg->n, cg->kind, (const char(*)[KF_CG_PATH])cg->dir, ev);
}

int kf_cgroup_self_events(kf_cgroup_events *ev)
{
    own_dirs o;
    find_own(&o);
    events_of(o.n, o.kind, (const char(*)[KF_CG_PATH])o.dir, ev);
    return ev->memory_max || ev->pids_max ? 0 : -1;
}
