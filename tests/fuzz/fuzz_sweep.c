/* fuzz_sweep — the sweep file parser (coordinator/core/sweep.c, over libyaml).
 *
 * One input is one sweep file, parsed from memory as "fuzz.yaml" in
 * tests/data/sweeps (so the repo's relative kernel paths resolve), with a
 * kernels directory that holds an empty source for every kernel name the
 * repo ships or its tests use. The contract checked on top of "no crash,
 * no leak, no UB": a refused file gets KF_EINVAL with a message that starts
 * "fuzz.yaml:LINE:COL: ", and an accepted one has sane kernels whose
 * configurations can all be enumerated (the first few thousand are). */
#include "core/sweep.h"

#include "fuzz_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char kernels_dir[4200];
static volatile uint64_t sink;

/* Empty host/NAME.c and cuda/NAME.cu for each source in src/host, src/cuda. */
static void mirror(const char *src)
{
    static const char *const subs[] = {"host", "cuda"};
    for (size_t i = 0; i < 2; i++) {
        char from[4300], to[4300];
        snprintf(from, sizeof from, "%s/%s", src, subs[i]);
        snprintf(to, sizeof to, "%s/%s", kernels_dir, subs[i]);
        mkdir(to, 0700);
        DIR *d = opendir(from);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char f[4600];
            snprintf(f, sizeof f, "%s/%s", to, e->d_name);
            int fd = open(f, O_WRONLY | O_CREAT, 0600);
            if (fd >= 0)
                close(fd);
        }
        closedir(d);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    snprintf(kernels_dir, sizeof kernels_dir, "%s/kernels", kf_fuzz_tmpdir());
    mkdir(kernels_dir, 0700);
    mirror(KF_SOURCE_DIR "/kernels");
    mirror(KF_SOURCE_DIR "/tests/data/sweeps/kernels");
    return 0;
}

static int has_position(const char *msg)
{
    static const char prefix[] = "fuzz.yaml:";
    if (strncmp(msg, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *p = msg + sizeof prefix - 1;
    for (int part = 0; part < 2; part++) {
        if (*p < '1' || *p > '9')
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p++ != ':')
            return 0;
    }
    return *p == ' ' && p[1] != '\0';
}

static void check_spec(const kf_sweep_spec *s, const uint8_t *data, size_t size)
{
    /* Kept kernels that were refused say why, with a position. */
    for (size_t k = 0; k < s->nkernels; k++)
        if (s->kernels[k].refused && !has_position(s->kernels[k].refused))
            abort();
    if (!s->name || !s->file || !s->text || memcmp(s->text, data, size) != 0 || s->text[size])
        abort();
    /* A level (problems:): no kernels of its own; each part is a whole
     * problem sweep of the same text, and every miss a located line. */
    if (!s->nkernels && (s->nparts || s->nmissing)) {
        for (size_t i = 0; i < s->nmissing; i++)
            if (!has_position(s->missing[i]))
                abort();
        for (size_t i = 0; i < s->nparts; i++) {
            if (!s->parts[i]->problem || s->parts[i]->nparts)
                abort();
            check_spec(s->parts[i], data, size);
        }
        return;
    }
    if (!s->nkernels || !s->kernels || !s->tasks)
        abort();
    sink ^= strlen(s->name) + (s->baseline ? strlen(s->baseline) : 0);
    for (size_t i = 0; i < s->measure.nncu; i++)
        sink ^= strlen(s->measure.ncu[i]);
    for (size_t k = 0; k < s->nkernels; k++) {
        const kf_sweep_kernel *kn = &s->kernels[k];
        if (!kn->name || !kn->path || kn->naxes > KF_SWEEP_MAX_AXES)
            abort();
        sink ^= strlen(kn->name) + strlen(kn->path);
        for (size_t f = 0; f < kn->nflags; f++)
            sink ^= strlen(kn->flags[f]);
        for (size_t a = 0; a < kn->naxes; a++) {
            if (!kn->axes[a].name || !kn->axes[a].nvalues)
                abort();
            sink ^= strlen(kn->axes[a].name);
            for (size_t v = 0; v < kn->axes[a].nvalues; v++)
                sink ^= (uint64_t)kn->axes[a].values[v];
        }
        size_t n = kf_sweep_kernel_configs(kn);
        if (n == 0 || n > KF_SWEEP_MAX_CONFIGS)
            abort();
        const char *names[KF_SWEEP_MAX_AXES];
        int64_t values[KF_SWEEP_MAX_AXES];
        size_t step = n > 4096 ? n / 4096 : 1;
        for (size_t idx = 0; idx < n; idx += step) {
            int np = kf_sweep_kernel_config(kn, idx, names, values);
            if (np != (int)kn->naxes)
                abort();
            for (int p = 0; p < np; p++)
                sink ^= strlen(names[p]) ^ (uint64_t)values[p];
        }
        kf_sweep_kernel_config(kn, n - 1, names, values);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kf_sweep_spec *s = NULL;
    kf_err err;
    kf_err_clear(&err);
    int rc = kf_sweep_parse_string((const char *)data, size, "fuzz.yaml",
                                   KF_SOURCE_DIR "/tests/data/sweeps", kernels_dir, &s, &err);
    if (rc == KF_OK) {
        if (!s)
            abort();
        check_spec(s, data, size);
        kf_sweep_destroy(&s);
        if (s)
            abort();
    } else {
        if (s)
            abort(); /* *out untouched on error */
        if (rc == KF_EINVAL && !has_position(err.msg)) {
            fprintf(stderr, "sweep error without file:line:column: \"%s\"\n", err.msg);
            abort();
        }
        if (rc != KF_EINVAL && rc != KF_ENOMEM)
            abort();
    }
    return 0;
}
