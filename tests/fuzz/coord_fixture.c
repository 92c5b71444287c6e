/* coord_fixture — see coord_fixture.h. */
#include "coord_fixture.h"
#include "fuzz_walk.h"
#include "common/log.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>

static kf_store *store;
static volatile uint64_t sink;

kf_coord *kf_fuzz_coord_new(void)
{
    if (!store) {
        /* Logs are part of the code under test (format strings, NULL
         * fields): keep them on; run.sh discards stderr (-close_fd_mask=2). */
        kf_log_setup("fuzz", KF_LOG_DEBUG);
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/store", kf_fuzz_tmpdir());
        kf_err err;
        if (kf_mkdirs(dir, 0700, &err) || kf_store_open(dir, 0, &store, &err)) {
            fprintf(stderr, "fuzz: cannot open a store in %s: %s\n", dir, err.msg);
            abort();
        }
    }
    kf_coord *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    c->cfg.store_dir = "fuzz";
    c->cfg.heartbeat_interval_s = 1.0;
    c->cfg.heartbeat_timeout_s = 10.0;
    c->cfg.assign_grace_s = 5.0;
    c->started_ns = kf_now_ns();
    kf_buf_init(&c->scratch);
    c->store = store;
    return c;
}

void kf_fuzz_coord_turn(kf_coord *c)
{
    if (c->dispatch_needed) {
        c->dispatch_needed = 0;
        sched_dispatch(c);
    }
}

void kf_fuzz_coord_destroy(kf_coord **self)
{
    kf_coord *c = *self;
    if (!c)
        return;
    for (size_t i = 0; i < c->nout; i++) {
        koutmsg *m = &c->out[i];
        kf_err err;
        if (m->to_control) {
            Kfleet__ControlReply *r = kf_ctl_unpack_reply(m->payload.data, m->payload.len, &err);
            if (!r)
                abort(); /* the coordinator queued a reply the CLI cannot read */
            sink ^= kf_fuzz_walk(&r->base);
            kfleet__control_reply__free_unpacked(r, NULL);
        } else {
            Kfleet__Envelope *e = kf_wire_unpack(m->payload.data, m->payload.len, &err);
            if (!e)
                abort(); /* an agent could not read this */
            sink ^= kf_fuzz_walk(&e->base);
            kf_wire_free(e);
        }
    }
    kf_store_abort(&c->txn);
    /* The store outlives the coordinator: kf_coord_destroy must not close it. */
    c->store = NULL;
    kf_coord_destroy(self);
}
