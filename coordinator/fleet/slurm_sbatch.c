/* slurm_sbatch — sbatch's option table and a reader that walks the user's
 * sbatch items as glibc's getopt_long does for sbatch (optstring "+...",
 * long options by name or unique prefix), so that an owned option cannot
 * slip through as an abbreviation or inside a group of short options.
 *
 * The table is sbatch's: the options of Slurm's src/common/slurm_opt.c
 * (common_options[]) that sbatch accepts (set_func or set_func_sbatch),
 * with their argument kind and short letter. getopt_long's rules, as
 * glibc applies them: an exact long name wins; otherwise a prefix of one
 * name is that option; a prefix of several is ambiguous (an error) unless
 * they are the same option (aliases: same letter or value, same argument
 * kind). A required argument is the rest after '=', or else the next item;
 * an optional one only after '='. In a short group each letter is an
 * option until one that takes an argument, which takes the rest of the
 * item (or, required and nothing left, the next item).
 *
 * Options a site's SPANK plugins add (pyxis's --container-image, say) are
 * not in the table: they are let through, but a value of theirs must be
 * written with '=' (their argument kind is unknown here, and a bare word
 * after one could be read by sbatch as the job script). A prefix of an
 * owned option is refused even where a plugin would make it ambiguous:
 * sbatch would refuse it then too. Releases before this table's may lack
 * some options (an abbreviation unique to them may be ambiguous here); they
 * never have owned options under other names. */
#include "fleet/slurm_sbatch.h"
#include "common/err.h"

#include <stdio.h>
#include <string.h>

enum { N = 0, R = 1, O = 2 }; /* no, required, optional argument */

typedef struct sbopt {
    const char *name;
    int arg;          /* N, R or O */
    char short_;      /* its letter, 0 for none */
    int owned;        /* kfleet sets it itself */
    const char *same; /* an alias of this option (same getopt value) */
} sbopt;

/* Owned: the job's name (teardown finds jobs by it), its output and error
 * files, nodes, signal, --parsable (the job id is read from it), partition,
 * gres, time and account (the slurm: keys), --array and --wrap (one agent
 * per job, exec'd by kfleet's script), --chdir, and --cluster(s): a job on
 * another cluster is one squeue and scancel on the login node do not see. */
static const sbopt table[] = {
    {"account", R, 'A', 1, NULL},
    {"acctg-freq", R, 0, 0, NULL},
    {"array", R, 'a', 1, NULL},
    {"autocomplete", R, 0, 0, NULL},
    {"batch", R, 0, 0, NULL},
    {"bb", R, 0, 0, NULL},
    {"bbf", R, 0, 0, NULL},
    {"begin", R, 'b', 0, NULL},
    {"chdir", R, 'D', 1, NULL},
    {"cluster", R, 0, 1, NULL},
    {"cluster-constraint", R, 0, 0, NULL},
    {"clusters", R, 'M', 1, NULL},
    {"comment", R, 0, 0, NULL},
    {"consolidate-segments", N, 0, 0, NULL},
    {"constraint", R, 'C', 0, NULL},
    {"container", R, 0, 0, NULL},
    {"container-id", R, 0, 0, NULL},
    {"context", R, 0, 0, NULL},
    {"contiguous", N, 0, 0, NULL},
    {"core-spec", R, 'S', 0, NULL},
    {"cores-per-socket", R, 0, 0, NULL},
    {"cpu-freq", R, 0, 0, NULL},
    {"cpus-per-gpu", R, 0, 0, NULL},
    {"cpus-per-task", R, 'c', 0, NULL},
    {"deadline", R, 0, 0, NULL},
    {"delay-boot", R, 0, 0, NULL},
    {"dependency", R, 'd', 0, NULL},
    {"distribution", R, 'm', 0, NULL},
    {"error", R, 'e', 1, NULL},
    {"exclude", R, 'x', 0, NULL},
    {"exclusive", O, 0, 0, NULL},
    {"export", R, 0, 0, NULL},
    {"export-file", R, 0, 0, NULL},
    {"external", N, 0, 0, NULL},
    {"extra", R, 0, 0, NULL},
    {"extra-node-info", R, 'B', 0, NULL},
    {"get-user-env", N, 0, 0, NULL},
    {"gid", R, 0, 0, NULL},
    {"gpu-bind", R, 0, 0, NULL},
    {"gpu-freq", R, 0, 0, NULL},
    {"gpus", R, 'G', 0, NULL},
    {"gpus-per-node", R, 0, 0, NULL},
    {"gpus-per-socket", R, 0, 0, NULL},
    {"gpus-per-task", R, 0, 0, NULL},
    {"gres", R, 0, 1, NULL},
    {"gres-flags", R, 0, 0, NULL},
    {"help", N, 'h', 0, NULL},
    {"hint", R, 0, 0, NULL},
    {"hold", N, 'H', 0, NULL},
    {"ignore-pbs", N, 0, 0, NULL},
    {"input", R, 'i', 0, NULL},
    {"job-name", R, 'J', 1, NULL},
    {"kill-on-invalid-dep", R, 0, 0, NULL},
    {"licenses", R, 'L', 0, NULL},
    {"mail-type", R, 0, 0, NULL},
    {"mail-user", R, 0, 0, NULL},
    {"mcs-label", R, 0, 0, NULL},
    {"mem", R, 0, 0, NULL},
    {"mem-bind", R, 0, 0, NULL},
    {"mem-per-cpu", R, 0, 0, NULL},
    {"mem-per-gpu", R, 0, 0, NULL},
    {"mem-update", R, 0, 0, NULL},
    {"mincpus", R, 0, 0, NULL},
    {"network", R, 0, 0, NULL},
    {"nice", O, 0, 0, NULL},
    {"no-kill", O, 'k', 0, NULL},
    {"no-requeue", N, 0, 0, NULL},
    {"nodefile", R, 'F', 0, NULL},
    {"nodelist", R, 'w', 0, NULL},
    {"nodes", R, 'N', 1, NULL},
    {"ntasks", R, 'n', 0, NULL},
    {"ntasks-per-core", R, 0, 0, NULL},
    {"ntasks-per-gpu", R, 0, 0, NULL},
    {"ntasks-per-node", R, 0, 0, NULL},
    {"ntasks-per-socket", R, 0, 0, NULL},
    {"ntasks-per-tres", R, 0, 0, NULL},
    {"oom-kill-step", O, 0, 0, NULL},
    {"open-mode", R, 0, 0, NULL},
    {"output", R, 'o', 1, NULL},
    {"overcommit", N, 'O', 0, NULL},
    {"oversubscribe", N, 's', 0, NULL},
    {"parsable", N, 0, 1, NULL},
    {"partition", R, 'p', 1, NULL},
    {"prefer", R, 0, 0, NULL},
    {"priority", R, 0, 0, NULL},
    {"profile", R, 0, 0, NULL},
    {"propagate", O, 0, 0, NULL},
    {"qos", R, 'q', 0, NULL},
    {"quiet", N, 'Q', 0, NULL},
    {"reboot", N, 0, 0, NULL},
    {"requeue", O, 0, 0, NULL},
    {"reservation", R, 0, 0, NULL},
    {"resources", R, 0, 0, NULL},
    {"resv-ports", O, 0, 0, NULL},
    {"runtime", R, 0, 0, NULL},
    {"segment", R, 0, 0, NULL},
    {"signal", R, 0, 1, NULL},
    {"sockets-per-node", R, 0, 0, NULL},
    {"spread-job", N, 0, 0, NULL},
    {"spread-segments", N, 0, 0, NULL},
    {"stepmgr", N, 0, 0, NULL},
    {"switches", R, 0, 0, NULL},
    {"tasks-per-node", R, 0, 0, "ntasks-per-node"},
    {"test-only", N, 0, 0, NULL},
    {"thread-spec", R, 0, 0, NULL},
    {"threads-per-core", R, 0, 0, NULL},
    {"time", R, 't', 1, NULL},
    {"time-min", R, 0, 0, NULL},
    {"tmp", R, 0, 0, NULL},
    {"tres-bind", R, 0, 0, NULL},
    {"tres-per-task", R, 0, 0, NULL},
    {"uid", R, 0, 0, NULL},
    {"usage", N, 0, 0, NULL},
    {"use-min-nodes", N, 0, 0, NULL},
    {"verbose", N, 'v', 0, NULL},
    {"version", N, 'V', 0, NULL},
    {"wait", N, 'W', 0, NULL},
    {"wait-all-nodes", R, 0, 0, NULL},
    {"wckey", R, 0, 0, NULL},
    {"wrap", R, 0, 1, NULL},
    {NULL, 0, 0, 0, NULL},
};

static const char *canon(const sbopt *o)
{
    return o->same ? o->same : o->name;
}

/* "--job-name (-J)" or "--gres". */
static const char *full(const sbopt *o, char *buf, size_t bl)
{
    if (o->short_)
        snprintf(buf, bl, "--%s (-%c)", o->name, o->short_);
    else
        snprintf(buf, bl, "--%s", o->name);
    return buf;
}

static int refuse_owned(const char *item, const sbopt *o, char *why, size_t wl)
{
    char f[64];
    snprintf(why, wl,
             "sbatch option '%.60s' is %s, which is one kfleet sets itself; use the slurm: keys "
             "(partition, gres, time, account, nodes) instead",
             item, full(o, f, sizeof f));
    return KF_EINVAL;
}

/* The long option named name[0..len) as getopt_long reads it: *o the
 * option, or NULL for one sbatch's table lacks (a plugin's). KF_EINVAL
 * (why set) for an owned option (or a prefix of one) or an ambiguous one. */
static int find_long(const char *item, const char *name, size_t len, const sbopt **o, char *why,
                     size_t wl)
{
    *o = NULL;
    for (const sbopt *t = table; t->name; t++)
        if (strlen(t->name) == len && strncmp(t->name, name, len) == 0) {
            *o = t;
            return t->owned ? refuse_owned(item, t, why, wl) : KF_OK;
        }
    const sbopt *first = NULL;
    int ambiguous = 0;
    char names[512] = "";
    for (const sbopt *t = table; t->name; t++) {
        if (strncmp(t->name, name, len) != 0)
            continue;
        if (t->owned) /* what it is, or ambiguous: refused either way */
            return refuse_owned(item, t, why, wl);
        if (!first)
            first = t;
        else if (strcmp(canon(first), canon(t)) != 0 || first->arg != t->arg)
            ambiguous = 1;
        size_t nl = strlen(names);
        snprintf(names + nl, sizeof names - nl, "%s--%s", nl ? ", " : "", t->name);
    }
    if (ambiguous) {
        snprintf(why, wl,
                 "sbatch option '%.60s' is ambiguous (%.300s) and sbatch would refuse it; "
                 "write the option's full name",
                 item, names);
        return KF_EINVAL;
    }
    *o = first;
    return KF_OK;
}

static const sbopt *find_short(char c)
{
    for (const sbopt *t = table; t->name; t++)
        if (t->short_ == c)
            return t;
    return NULL;
}

/* Reads args[i]; *value_next: the next item is this one's value. */
static int check_item(const char *item, int *value_next, int *unknown, char *why, size_t wl)
{
    *value_next = *unknown = 0;
    char f[64];
    if (strcmp(item, "-") == 0 || strcmp(item, "--") == 0) {
        snprintf(why, wl,
                 "sbatch item '%s' would end sbatch's options and change which job script it "
                 "runs; give options only",
                 item);
        return KF_EINVAL;
    }
    if (item[0] == '-' && item[1] == '-') {
        const char *name = item + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        if (len == 0) {
            snprintf(why, wl, "sbatch option '%.60s' has no name", item);
            return KF_EINVAL;
        }
        const sbopt *o;
        int rc = find_long(item, name, len, &o, why, wl);
        if (rc)
            return rc;
        if (!o) {
            *unknown = 1;
            return KF_OK;
        }
        if (eq && o->arg == N) {
            snprintf(why, wl, "sbatch option '%.60s': %s takes no value", item,
                     full(o, f, sizeof f));
            return KF_EINVAL;
        }
        *value_next = !eq && o->arg == R;
        return KF_OK;
    }
    for (const char *c = item + 1; *c; c++) {
        const sbopt *o = find_short(*c);
        if (!o) {
            snprintf(why, wl, "sbatch has no option -%c (in '%.60s'); see sbatch --help", *c, item);
            return KF_EINVAL;
        }
        if (o->owned)
            return refuse_owned(item, o, why, wl);
        if (o->arg != N) { /* the rest of the item is its value */
            *value_next = o->arg == R && c[1] == '\0';
            return KF_OK;
        }
    }
    return KF_OK;
}

int kf_slurm_sbatch_check(const char *const *args, size_t n, size_t *bad, char *why, size_t wl)
{
    int value_next = 0, unknown = 0;
    for (size_t i = 0; i < n; i++) {
        *bad = i;
        const char *a = args[i];
        if (value_next) { /* the previous option's value, whatever it looks like */
            value_next = 0;
            continue;
        }
        if (a[0] != '-') {
            if (unknown && i > 0)
                snprintf(why, wl,
                         "sbatch item '%.60s' follows '%.60s', an option sbatch's own table "
                         "lacks (a site plugin's?): write its value with '=', like %.60s=%.60s",
                         a, args[i - 1], args[i - 1], a);
            else
                snprintf(why, wl,
                         "sbatch option '%.60s' does not start with '-'; write each option as "
                         "one item, like \"--qos=high\" or \"--constraint=h100\"",
                         a);
            return KF_EINVAL;
        }
        int rc = check_item(a, &value_next, &unknown, why, wl);
        if (rc)
            return rc;
    }
    if (value_next) {
        *bad = n - 1;
        snprintf(why, wl,
                 "sbatch option '%.60s' needs a value and is the last item (sbatch would take "
                 "kfleet's job script for it); give the value in the same item (--qos=high, "
                 "-qhigh) or as the next one",
                 args[n - 1]);
        return KF_EINVAL;
    }
    return KF_OK;
}
