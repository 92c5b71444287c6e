/* preflight — the node checks the launcher runs over SSH before an upload;
 * see preflight.h for the protocol.
 *
 * The checks run as a shell script rather than as the agent because they
 * must run before the agent is there, and must speak for nodes the agent
 * could never run on (wrong arch, too old a glibc, a full disk). The script
 * only reports; every judgement is made here, on the coordinator, so the
 * thresholds can change without touching what runs on nodes. It keeps to
 * POSIX sh and coreutils (no awk, bash or python: stock images differ), and
 * every value passes through kv(), which joins lines, so one key is always
 * one line whatever a tool prints. */
#include "fleet/preflight.h"
#include "common/xalloc.h"
#include "common/buf.h"
#include "common/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS 256

static const char script[] =
    "# kfleet preflight: sh -s -- WORKDIR (reports only; the coordinator judges)\n"
    "d=${1:-}\n"
    "case $d in\n"
    "\"~\") d=$HOME ;;\n"
    "\"~/\"*) d=$HOME/${d#\"~/\"} ;;\n"
    "esac\n"
    "kv() { printf '%s=%s\\n' \"$1\" \"$(printf '%s' \"$2\" | tr '\\r\\n\\t' '   ')\"; }\n"
    "tmo() {\n"
    "  if command -v timeout >/dev/null 2>&1; then timeout 30 \"$@\"; else \"$@\"; fi\n"
    "}\n"
    "echo kf_preflight=1\n"
    "if [ -z \"$d\" ]; then\n"
    "  kv workdir_error 'no work dir given'\n"
    "else\n"
    "  kv workdir \"$d\"\n"
    "  if err=$(mkdir -p -- \"$d\" 2>&1); then echo workdir_ok=1; else kv workdir_error "
    "\"$err\"; fi\n"
    "  t=\"$d/.kfleet-preflight.$$\"\n"
    "  if ( : >\"$t\" ) 2>/dev/null; then rm -f -- \"$t\"; echo writable=1; else echo "
    "writable=0; fi\n"
    "  p=$d\n"
    "  while [ ! -d \"$p\" ]; do p=$(dirname -- \"$p\"); done\n"
    "  df -Pk -- \"$p\" 2>/dev/null | {\n"
    "    read -r _h\n"
    "    if read -r _fs total _used avail _rest; then\n"
    "      echo \"fs_total_kb=$total\"; echo \"fs_free_kb=$avail\"\n"
    "    fi\n"
    "  }\n"
    "fi\n"
    "kv arch \"$(uname -m)\"\n"
    "g=$(getconf GNU_LIBC_VERSION 2>/dev/null); g=${g#glibc }\n"
    "if [ -z \"$g\" ]; then\n"
    "  g=$(ldd --version 2>/dev/null | head -n 1)\n"
    "  case $g in *GLIBC*|*'GNU libc'*) g=${g##* } ;; *) g= ;; esac\n"
    "fi\n"
    "kv glibc \"$g\"\n"
    "if [ -r /etc/os-release ]; then\n"
    "  o=$(sed -n 's/^PRETTY_NAME=//p' /etc/os-release | head -n 1 | tr -d '\"')\n"
    "  kv os \"$o\"\n"
    "fi\n"
    "smi=$(command -v nvidia-smi 2>/dev/null)\n"
    "kv nvidia_smi \"$smi\"\n"
    "if [ -n \"$smi\" ]; then\n"
    "  if q=$(tmo nvidia-smi --query-gpu=index,name,driver_version,memory.total "
    "--format=csv,noheader,nounits 2>&1); then\n"
    "    printf '%s\\n' \"$q\" | while IFS= read -r l; do\n"
    "      if [ -n \"$l\" ]; then kv gpu \"$l\"; fi\n"
    "    done\n"
    "    c=$(tmo nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\\([0-9][0-9.]*\\).*/\\1/p' "
    "| head -n 1)\n"
    "    kv driver_cuda \"$c\"\n"
    "  else\n"
    "    kv nvidia_smi_error \"$q\"\n"
    "  fi\n"
    "fi\n"
    "# ssh sessions often lack the toolkit in PATH: look where it installs too\n"
    "nv=$(command -v nvcc 2>/dev/null)\n"
    "if [ -z \"$nv\" ] && [ -x \"${CUDA_HOME:-/usr/local/cuda}/bin/nvcc\" ]; then\n"
    "  nv=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc\n"
    "fi\n"
    "kv nvcc \"$nv\"\n"
    "if [ -n \"$nv\" ]; then\n"
    "  v=$(tmo \"$nv\" --version 2>/dev/null | sed -n 's/.*release \\([0-9][0-9.]*\\).*/\\1/p' | "
    "head -n 1)\n"
    "  kv nvcc_version \"$v\"\n"
    "  # the toolkit's forward-compatibility libraries (cuda-compat-X-Y)\n"
    "  tk=$(dirname \"$(dirname \"$(readlink -f \"$nv\" 2>/dev/null || echo \"$nv\")\")\")\n"
    "  if [ -r \"$tk/compat/libcuda.so.1\" ]; then kv nvcc_compat \"$tk/compat\"\n"
    "  elif [ -n \"$v\" ] && [ -r \"/usr/local/cuda-$v/compat/libcuda.so.1\" ]; then\n"
    "    kv nvcc_compat \"/usr/local/cuda-$v/compat\"\n"
    "  fi\n"
    "fi\n"
    "# the Python its agent would use for Python kernels, and what kernels import\n"
    "py=$(command -v python3 2>/dev/null)\n"
    "if [ -n \"$py\" ]; then\n"
    "  o=$(tmo \"$py\" -c 'import sys\n"
    "o = []\n"
    "try:\n"
    "    from importlib import metadata as m\n"
    "except ImportError:\n"
    "    m = None\n"
    "for p in (\"numpy\", \"torch\", \"triton\", \"cupy-cuda12x\", \"cupy-cuda13x\", \"cupy\"):\n"
    "    try:\n"
    "        o.append(p.split(\"-\")[0] + \" \" + m.version(p))\n"
    "    except Exception:\n"
    "        pass\n"
    "print(\"%d.%d.%d|%s\" % (sys.version_info[:3] + (\", \".join(o),)))' 2>/dev/null)\n"
    "  kv python \"${o%%|*}\"\n"
    "  kv python_packages \"${o#*|}\"\n"
    "fi\n"
    "echo kf_preflight_end=1\n";

const char *kf_preflight_script(void)
{
    return script;
}

/* ---- parse ---- */

static int set_str(char **dst, const char *v, size_t n)
{
    free(*dst);
    *dst = NULL;
    if (n == 0)
        return KF_OK;
    *dst = kf_xmalloc(n + 1);
    memcpy(*dst, v, n);
    (*dst)[n] = '\0';
    return KF_OK;
}

/* A decimal count of KiB as bytes; -1 when it is not one. */
static int kib_value(const char *v, size_t n, uint64_t *out)
{
    uint64_t x = 0;
    if (n == 0 || n > 19)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)v[i]))
            return -1;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    if (x > UINT64_MAX / 1024)
        return -1;
    *out = x * 1024;
    return 0;
}

static const char *trim(const char *s, const char *end, const char **tend)
{
    while (s < end && *s == ' ')
        s++;
    while (end > s && end[-1] == ' ')
        end--;
    *tend = end;
    return s;
}

/* "0, NVIDIA H100 80GB HBM3, 580.95.05, 81559": the index first, driver and
 * memory last, the name (which could hold ", ") in between. */
static int parse_gpu(kf_preflight *pf, const char *v, size_t n)
{
    if (pf->ngpus >= MAX_GPUS)
        return KF_OK;
    kf_preflight_gpu *g = kf_xrealloc(pf->gpus, (pf->ngpus + 1) * sizeof *g);
    pf->gpus = g;
    g = &pf->gpus[pf->ngpus];
    memset(g, 0, sizeof *g);
    g->index = (int)pf->ngpus;
    const char *end = v + n, *c1 = memchr(v, ',', n), *c3 = NULL, *c2 = NULL;
    for (const char *p = end; p > v; p--)
        if (p[-1] == ',') {
            if (!c3)
                c3 = p - 1;
            else if (!c2) {
                c2 = p - 1;
                break;
            }
        }
    const char *s = v, *e = end;
    if (c1 && c2 && c1 < c2) {
        const char *te, *ts = trim(v, c1, &te);
        if (te > ts && te - ts < 6 && isdigit((unsigned char)*ts))
            g->index = atoi(ts);
        s = c1 + 1, e = c2;
        const char *ds = trim(c2 + 1, c3, &te);
        if (te > ds && !pf->driver && set_str(&pf->driver, ds, (size_t)(te - ds)))
            return KF_ENOMEM;
        const char *ms = trim(c3 + 1, end, &te);
        uint64_t kib;
        if (kib_value(ms, (size_t)(te - ms), &kib) == 0)
            g->mem_mib = kib / 1024;
    }
    const char *ne, *ns = trim(s, e, &ne);
    if (set_str(&g->name, ns, (size_t)(ne - ns)))
        return KF_ENOMEM;
    pf->ngpus++;
    return KF_OK;
}

static int key_is(const char *k, size_t kn, const char *want)
{
    return strlen(want) == kn && memcmp(k, want, kn) == 0;
}

static int parse_line(kf_preflight *pf, const char *k, size_t kn, const char *v, size_t vn,
                      int *have_total, int *have_free)
{
    static const struct {
        const char *key;
        size_t off;
    } strs[] = {
        {"workdir", offsetof(kf_preflight, workdir)},
        {"workdir_error", offsetof(kf_preflight, workdir_error)},
        {"arch", offsetof(kf_preflight, arch)},
        {"glibc", offsetof(kf_preflight, glibc)},
        {"os", offsetof(kf_preflight, os)},
        {"nvidia_smi", offsetof(kf_preflight, nvidia_smi)},
        {"nvidia_smi_error", offsetof(kf_preflight, gpu_error)},
        {"driver_cuda", offsetof(kf_preflight, driver_cuda)},
        {"nvcc", offsetof(kf_preflight, nvcc)},
        {"nvcc_version", offsetof(kf_preflight, nvcc_version)},
        {"nvcc_compat", offsetof(kf_preflight, nvcc_compat)},
        {"python", offsetof(kf_preflight, python)},
        {"python_packages", offsetof(kf_preflight, python_packages)},
    };
    for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
        if (key_is(k, kn, strs[i].key))
            return set_str((char **)((char *)pf + strs[i].off), v, vn);
    if (key_is(k, kn, "gpu"))
        return parse_gpu(pf, v, vn);
    if (key_is(k, kn, "writable"))
        pf->writable = vn == 1 && v[0] == '1';
    else if (key_is(k, kn, "fs_total_kb"))
        *have_total = kib_value(v, vn, &pf->fs_total_bytes) == 0;
    else if (key_is(k, kn, "fs_free_kb"))
        *have_free = kib_value(v, vn, &pf->fs_free_bytes) == 0;
    return KF_OK; /* unknown keys: a newer script */
}

int kf_preflight_parse(const char *out, size_t len, kf_preflight *pf, kf_err *err)
{
    memset(pf, 0, sizeof *pf);
    const char *p = out, *end = out + len;
    int started = 0, ended = 0, lineno = 0, have_total = 0, have_free = 0;
    while (p < end && !ended) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *next = nl ? nl + 1 : end;
        if (le > p && le[-1] == '\r')
            le--;
        size_t n = (size_t)(le - p);
        lineno++;
        if (!started) {
            started = n == 14 && memcmp(p, "kf_preflight=1", 14) == 0;
        } else if (n == 18 && memcmp(p, "kf_preflight_end=1", 18) == 0) {
            ended = 1;
        } else {
            const char *eq = memchr(p, '=', n);
            size_t kn = eq ? (size_t)(eq - p) : 0;
            for (size_t i = 0; i < kn; i++)
                if (!islower((unsigned char)p[i]) && p[i] != '_')
                    kn = 0;
            if (kn == 0)
                return kf_err_set(err, KF_EPROTO,
                                  "preflight output line %d is not key=value ('%.*s'); the "
                                  "node's shell printed something unexpected, try the script by "
                                  "hand with ssh HOST sh -s -- DIR",
                                  lineno, (int)(n < 60 ? n : 60), p);
            int rc = parse_line(pf, p, kn, eq + 1, (size_t)(le - eq - 1), &have_total, &have_free);
            if (rc)
                return kf_err_set(err, rc, "out of memory reading the preflight output");
        }
        p = next;
    }
    if (!started)
        return kf_err_set(err, KF_EPROTO,
                          "no preflight output (no kf_preflight=1 line): the script did not run; "
                          "check that the node has /bin/sh and the login works");
    if (!ended)
        return kf_err_set(err, KF_EPROTO,
                          "the preflight output ends early (no kf_preflight_end=1 line): the "
                          "script was cut off; run it again");
    pf->have_fs = have_total && have_free;
    return KF_OK;
}

/* ---- judge ---- */

void kf_preflight_bytes(uint64_t bytes, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024 && u < 6)
        v /= 1024, u++;
    /* Below a GiB the precision is noise; above, 0.1 GiB can matter. */
    if (u < 3)
        snprintf(buf, n, "%.0f %s", v, units[u]);
    else
        snprintf(buf, n, "%.1f %s", v, units[u]);
}

/* "580.95" of "580.95.05": the form people quote drivers by. */
static void driver_short(const char *d, char *buf, size_t n)
{
    const char *dot = strchr(d, '.');
    const char *dot2 = dot ? strchr(dot + 1, '.') : NULL;
    snprintf(buf, n, "%.*s", dot2 ? (int)(dot2 - d) : (int)strlen(d), d);
}

static void reason(kf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(kf_buf *b, const char *fmt, ...)
{
    va_list ap;
    if (b->len)
        kf_buf_adds(b, "; ");
    va_start(ap, fmt);
    kf_buf_vaddf(b, fmt, ap);
    va_end(ap);
}

int kf_preflight_check(const kf_preflight *pf, uint64_t min_free_bytes, int need_gpu, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    const char *wd = pf->workdir ? pf->workdir : "(none)";
    if (pf->workdir_error)
        reason(&b,
               "work dir %.200s: cannot create it (%.200s); fix the path or its parent's "
               "permissions, or set workdir: in the inventory",
               wd, pf->workdir_error);
    else if (!pf->writable)
        reason(&b,
               "work dir %.200s is not writable; fix its owner or permissions (a read-only "
               "filesystem?), or set workdir: in the inventory",
               wd);
    if (min_free_bytes && !pf->have_fs) {
        reason(&b, "work dir %.200s: df reported no free space figure; check df on the node", wd);
    } else if (min_free_bytes && pf->fs_free_bytes < min_free_bytes) {
        char f[32], t[32], need[32];
        kf_preflight_bytes(pf->fs_free_bytes, f, sizeof f);
        kf_preflight_bytes(pf->fs_total_bytes, t, sizeof t);
        kf_preflight_bytes(min_free_bytes, need, sizeof need);
        reason(&b, "work dir %.200s: %s free of %s, need %s (free space or pass --min-free)", wd, f,
               t, need);
    }
    if (need_gpu && pf->ngpus == 0) {
        if (!pf->nvidia_smi)
            reason(&b, "no GPU: nvidia-smi is not installed (no NVIDIA driver); use a GPU node");
        else if (pf->gpu_error)
            reason(&b, "no GPU: nvidia-smi failed: %.200s; check the driver (restart the node)",
                   pf->gpu_error);
        else
            reason(&b, "no GPU: nvidia-smi lists none; use a GPU node");
    }
    if (pf->nvcc_version && pf->driver_cuda &&
        kf_version_cmp(pf->nvcc_version, pf->driver_cuda) > 0 && !pf->nvcc_compat) {
        char d[64] = "";
        if (pf->driver)
            driver_short(pf->driver, d, sizeof d);
        unsigned long major = strtoul(pf->nvcc_version, NULL, 10), minor = 0;
        const char *dot = strchr(pf->nvcc_version, '.');
        if (dot)
            minor = strtoul(dot + 1, NULL, 10);
        reason(&b,
               "nvcc %.20s builds for CUDA %.20s but driver %s supports CUDA %.20s and the node "
               "has no forward-compatibility libraries: the kernels it builds will not load; "
               "install NVIDIA's cuda-compat-%lu-%lu package (datacenter GPUs), an older "
               "toolkit, or a newer driver",
               pf->nvcc_version, pf->nvcc_version, d[0] ? d : "(unknown)", pf->driver_cuda, major,
               minor);
    }
    if (!pf->arch)
        reason(&b, "CPU arch unknown (uname -m printed nothing); check the node");
    else if (strcmp(pf->arch, "x86_64") != 0 && strcmp(pf->arch, "aarch64") != 0)
        reason(&b, "CPU arch %.40s: the agent runs on x86_64 or aarch64 only; use such a node",
               pf->arch);
    int rc = KF_OK;
    if (b.len)
        rc = kf_err_set(err, KF_EINVAL, "%s", b.data);
    kf_buf_release(&b);
    return rc;
}

void kf_preflight_summary(const kf_preflight *pf, char *buf, size_t n)
{
    kf_buf b = KF_BUF_INIT;
    if (pf->ngpus == 0)
        kf_buf_adds(&b, "no GPU");
    /* Mixed nodes list each model once, in order of first appearance. */
    for (size_t i = 0; i < pf->ngpus; i++) {
        const char *name = pf->gpus[i].name ? pf->gpus[i].name : "GPU";
        size_t j = 0, count = 0;
        while (j < i && strcmp(pf->gpus[j].name ? pf->gpus[j].name : "GPU", name) != 0)
            j++;
        if (j < i)
            continue;
        for (j = i; j < pf->ngpus; j++)
            count += strcmp(pf->gpus[j].name ? pf->gpus[j].name : "GPU", name) == 0;
        kf_buf_addf(&b, "%s%zu\xc3\x97 %s", i ? " + " : "", count, name);
    }
    if (pf->driver) {
        char d[64];
        driver_short(pf->driver, d, sizeof d);
        kf_buf_addf(&b, ", driver %s", d);
        if (pf->driver_cuda)
            kf_buf_addf(&b, " (CUDA %s)", pf->driver_cuda);
    }
    if (pf->nvcc)
        kf_buf_addf(&b, ", nvcc %s", pf->nvcc_version ? pf->nvcc_version : "(unknown version)");
    else
        kf_buf_adds(&b, ", no nvcc");
    if (pf->nvcc_compat)
        kf_buf_addf(&b, ", forward compat %s", pf->nvcc_compat);
    if (pf->have_fs) {
        char f[32];
        kf_preflight_bytes(pf->fs_free_bytes, f, sizeof f);
        kf_buf_addf(&b, ", %s free", f);
    }
    if (pf->arch)
        kf_buf_addf(&b, ", %s", pf->arch);
    if (pf->python)
        kf_buf_addf(&b, ", python %s (%s)", pf->python,
                    pf->python_packages ? pf->python_packages : "no numpy, torch, triton, cupy");
    if (n) {
        snprintf(buf, n, "%s", b.data);
    }
    kf_buf_release(&b);
}

void kf_preflight_free(kf_preflight *pf)
{
    if (!pf)
        return;
    for (size_t i = 0; i < pf->ngpus; i++)
        free(pf->gpus[i].name);
    free(pf->gpus);
    free(pf->workdir);
    free(pf->workdir_error);
    free(pf->arch);
    free(pf->glibc);
    free(pf->os);
    free(pf->nvidia_smi);
    free(pf->gpu_error);
    free(pf->driver);
    free(pf->driver_cuda);
    free(pf->nvcc);
    free(pf->nvcc_version);
    free(pf->nvcc_compat);
    free(pf->python);
    free(pf->python_packages);
    memset(pf, 0, sizeof *pf);
}
