/* coord_fixture — a coordinator with no sockets, for the fuzz targets that
 * drive its real handlers (sched.c's agent handlers, control.c's requests).
 *
 * Each input gets a fresh kf_coord (so a crash replays from that input
 * alone) over one LMDB store opened once per process; the input's write
 * transaction is aborted at the end, so the store stays empty and every
 * input starts from the same state. Replies and envelopes the handlers
 * queue are re-decoded and walked before they are dropped: what the
 * coordinator would send must decode too. */
#ifndef KF_FUZZ_COORD_FIXTURE_H
#define KF_FUZZ_COORD_FIXTURE_H

#include "daemon/coord_int.h"

/* A coordinator over the process's fuzz store (created on first use). */
kf_coord *kf_fuzz_coord_new(void);
/* Runs the dispatcher when a handler asked for it, as the loop does. */
void kf_fuzz_coord_turn(kf_coord *c);
/* Checks every queued message decodes, aborts the transaction, frees c. */
void kf_fuzz_coord_destroy(kf_coord **c);

#endif
