/* cli — the home, sweep ids, sweep files and the stop flag, for every
 * command; see cli.h. */
#include "cli/cli.h"
#include "common/json.h"
#include "cli/client.h"
#include "cli/options.h"
#include "common/signals.h"
#include "common/util.h"
#include "core/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The only global of the command line: set by the signal handler. */
static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

volatile sig_atomic_t *kf_cli_catch_signals(void)
{
    kf_signals_catch(on_signal, KF_SIGNALS_IGNORE_PIPE, NULL);
    return &g_stop;
}

int kf_cli_paths(const char *home, int create, kf_paths *p)
{
    kf_err err;
    if (kf_paths_resolve(p, home, create, &err) != KF_OK) {
        fprintf(stderr, "kfleet: %s\n", err.msg);
        return 1;
    }
    return 0;
}

int kf_cli_status(int rc)
{
    return rc == KF_EINVAL || rc == KF_ENOTFOUND ? 2 : 1;
}

int kf_cli_call(const char *cmdname, const char *home, Kfleet__ControlRequest *req, int timeout_ms,
                Kfleet__ControlReply **rep)
{
    kf_paths p;
    if (kf_cli_paths(home, 0, &p))
        return 1;
    kf_err err;
    kf_client *c = NULL;
    if (kf_client_open(&p, &c, &err) != KF_OK) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return 1;
    }
    int rc = kf_client_call(c, req, timeout_ms, rep, &err);
    kf_client_close(&c);
    if (rc) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return kf_cli_status(rc);
    }
    return 0;
}

int kf_cli_sweep_ids(const kf_cmd_entry *c, int argc, char **argv, uint32_t *ids, int max)
{
    for (int i = 0; optind + i < argc; i++) {
        const char *s = argv[optind + i];
        if (i == max)
            return kf_opt_error(c, "unexpected argument '%s'", s);
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        if (*s == '\0' || *end || v == 0 || v > UINT32_MAX)
            return kf_opt_error(c, "a sweep id is a positive number, got '%s'", s);
        ids[i] = (uint32_t)v;
    }
    return KF_OPT_GO;
}

/* The refusals printed so far, and the first (which is the parse's
 * error when it is the only one: printed once). */
struct refused_seen {
    size_t n;
    char first[sizeof(((kf_err *)0)->msg)];
};

static void print_refused(void *ctx, const char *msg)
{
    struct refused_seen *r = ctx;
    if (r->n++ == 0)
        snprintf(r->first, sizeof r->first, "%s", msg);
    fprintf(stderr, "%s\n", msg);
}

int kf_cli_parse_sweep(const char *cmdname, const char *file, int keep_going, kf_sweep_spec **spec,
                       char *kdir, size_t kdir_len)
{
    kf_err err;
    if (kf_client_kernels_dir(kdir, kdir_len, &err) != KF_OK) {
        fprintf(stderr, "kfleet %s: %s\n", cmdname, err.msg);
        return 1;
    }
    /* Each refusal is printed as the parser finds it; the error then says
     * how many (one alone is its own error). */
    struct refused_seen seen = {0, ""};
    kf_sweep_parse_opts po = {keep_going, print_refused, &seen};
    if (kf_sweep_parse_file_opts(file, kdir, &po, spec, &err) != KF_OK) {
        if (seen.n != 1 || strcmp(err.msg, seen.first) != 0)
            fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    const kf_sweep_spec *s = *spec;
    for (size_t i = 0; i < s->nmissing; i++)
        fprintf(stderr, "%s\n", s->missing[i]);
    size_t nref = 0;
    for (size_t p = 0; p < (s->nparts ? s->nparts : 1); p++) {
        const kf_sweep_spec *part = s->nparts ? s->parts[p] : s;
        for (size_t i = 0; i < part->nkernels; i++)
            if (part->kernels[i].refused) {
                fprintf(stderr, "%s\n", part->kernels[i].refused);
                nref++;
            }
    }
    if (nref)
        fprintf(stderr,
                "kfleet %s: %zu refused candidate%s will be failed rows (refused: fail or "
                "--keep-going); the others are judged\n",
                cmdname, nref, nref == 1 ? "" : "s");
    return 0;
}

int kf_cli_print_json(json_t *o, size_t flags)
{
    char *s = o ? kf_json_dumps(o, flags | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!s) {
        fprintf(stderr, "kfleet: out of memory\n");
        return 1;
    }
    printf("%s\n", s);
    free(s);
    return 0;
}

int kf_cli_render_report(const char *store_dir, uint32_t sweep_id, int have_id,
                         const kf_report_opts *opts, const char *out_file)
{
    kf_err err;
    kf_store *s = NULL;
    if (access(store_dir, F_OK) != 0) {
        fprintf(stderr, "kfleet report: no store at %s: nothing has run with this home yet\n",
                store_dir);
        return 1;
    }
    if (kf_store_open(store_dir, 1, &s, &err) != KF_OK) {
        fprintf(stderr, "kfleet report: %s\n", err.msg);
        return 1;
    }
    kf_txn *t = NULL;
    int rc = kf_store_begin(s, 1, &t, &err);
    if (rc == KF_OK && !have_id && kf_store_latest_sweep_id(t, &sweep_id) != KF_OK) {
        fprintf(stderr, "kfleet report: no sweep in %s yet; submit one with `kfleet submit`\n",
                store_dir);
        kf_store_abort(&t);
        kf_store_close(&s);
        return 1;
    }
    kf_buf out = KF_BUF_INIT;
    if (rc == KF_OK) {
        kf_report_opts o = *opts;
        o.color = !out_file && isatty(STDOUT_FILENO) && o.fmt == KF_REPORT_TABLE;
        rc = kf_report_render_opts(t, sweep_id, &o, &out, &err);
    }
    kf_store_abort(&t);
    kf_store_close(&s);
    if (rc) {
        fprintf(stderr, "kfleet report: %s\n", err.msg);
        kf_buf_release(&out);
        return kf_cli_status(rc);
    }
    if (out_file) {
        if (kf_write_file(out_file, out.data, out.len, 0644, &err) != KF_OK) {
            fprintf(stderr, "kfleet report: %s\n", err.msg);
            kf_buf_release(&out);
            return 1;
        }
    } else {
        fwrite(out.data, 1, out.len, stdout);
    }
    kf_buf_release(&out);
    return 0;
}
