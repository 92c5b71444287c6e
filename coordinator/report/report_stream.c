/* report_stream — a sweep's rows streamed as they finish; see
 * report_stream.h.
 *
 * Each poll collects the sweep as the report does (kf_rep_collect) and
 * keeps, per row, whether it was sent: rows are identified by (kernel,
 * configuration, node), which stay the same from one collection to the next.
 * A poll costs one collection; the caller polls when the sweep's count of
 * ended tasks moved, not on a timer. */
#include "report/report_stream.h"
#include "common/json.h"

#include "common/xalloc.h"
#include "report/report_json.h"
#include "report/report_rank.h"
#include "report/report_rows.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct sent_key {
    uint32_t kernel, config;
    char *node;
} sent_key;

struct kf_report_stream {
    uint32_t sweep_id;
    sent_key *sent;
    size_t nsent, cap;
};

kf_report_stream *kf_report_stream_new(uint32_t sweep_id)
{
    kf_report_stream *s = kf_xcalloc(1, sizeof *s);
    s->sweep_id = sweep_id;
    return s;
}

void kf_report_stream_destroy(kf_report_stream **self)
{
    if (!self || !*self)
        return;
    for (size_t i = 0; i < (*self)->nsent; i++)
        free((*self)->sent[i].node);
    free((*self)->sent);
    free(*self);
    *self = NULL;
}

static int was_sent(const kf_report_stream *s, const rrow *w)
{
    const char *node = w->node ? w->node : "";
    for (size_t i = 0; i < s->nsent; i++)
        if (s->sent[i].kernel == w->kernel && s->sent[i].config == w->config &&
            strcmp(s->sent[i].node, node) == 0)
            return 1;
    return 0;
}

static void mark_sent(kf_report_stream *s, const rrow *w)
{
    if (s->nsent == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->sent = kf_xrealloc(s->sent, s->cap * sizeof *s->sent);
    }
    s->sent[s->nsent++] = (sent_key){w->kernel, w->config, kf_xstrdup(w->node ? w->node : "")};
}

/* "passed", or the first task that did not succeed: "validate failed". */
static int row_finished(const rrow *w)
{
    return (!w->validate || kf_state_terminal(kf_rep_state_of(w->validate))) &&
           (!w->profile || kf_state_terminal(kf_rep_state_of(w->profile)));
}

int kf_report_stream_poll(kf_report_stream *s, kf_txn *t, kf_buf *out, size_t *nnew, kf_err *err)
{
    *nnew = 0;
    kf_report_opts opts = {0};
    rep r;
    int rc = kf_rep_collect(t, s->sweep_id, &opts, &r, err);
    if (rc)
        return rc;
    kf_rep_speedups(&r);
    for (size_t i = 0; i < r.nrows && rc == KF_OK; i++) {
        const rrow *w = &r.rows[i];
        if (!row_finished(w) || was_sent(s, w))
            continue;
        json_t *row = kf_rep_row_json(&r, w, 0), *o = json_object();
        char verdict[64];
        kf_rep_verdict(w, verdict, sizeof verdict);
        json_object_set_new(o, "schema", kf_json_str(KF_ROW_SCHEMA));
        json_object_set_new(o, "sweep_id", json_integer(s->sweep_id));
        json_object_set_new(o, "verdict", kf_json_str(verdict));
        json_object_set_new(o, "median_s", w->st.n ? json_real(w->st.median) : json_null());
        json_object_update(o, row);
        json_decref(row);
        char *line = kf_json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (!line) {
            rc = kf_err_set(err, KF_ENOMEM, "sweep %u: out of memory streaming a row", s->sweep_id);
            break;
        }
        kf_buf_adds(out, line);
        kf_buf_addc(out, '\n');
        free(line);
        mark_sent(s, w);
        (*nnew)++;
    }
    kf_rep_release(&r);
    return rc;
}
