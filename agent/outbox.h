/* outbox — the agent's durable queue of messages for the coordinator.
 *
 * Everything an agent produces that the coordinator must store (samples,
 * results) goes into the outbox first, under a sequence number (oseq), in
 * the agent's own LMDB. It stays there until the coordinator acks that oseq,
 * which it does only after its own commit. After a reconnect or a restart
 * the agent resends whatever is still here; the coordinator drops the
 * duplicates. So a result survives the agent, the link and the coordinator. */
#ifndef KF_OUTBOX_H
#define KF_OUTBOX_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

typedef struct kf_outbox kf_outbox;

/* Opens (creating) the outbox LMDB in directory dir. */
int kf_outbox_open(const char *dir, kf_outbox **out, kf_err *err);
void kf_outbox_close(kf_outbox **self);

/* Appends a packed envelope; its oseq is returned (the caller stamps it into
 * the envelope before packing: reserve with kf_outbox_next first). */
uint64_t kf_outbox_next(kf_outbox *o);
int kf_outbox_put(kf_outbox *o, uint64_t oseq, const void *data, size_t len, kf_err *err);
/* Removes acked entries; unknown oseqs are ignored (acks may repeat). */
int kf_outbox_ack(kf_outbox *o, const uint64_t *oseq, size_t n, kf_err *err);

/* Calls cb for each entry in oseq order; a non-zero return stops the walk. */
typedef int (*kf_outbox_cb)(void *ctx, uint64_t oseq, const void *data, size_t len);
int kf_outbox_foreach(kf_outbox *o, kf_outbox_cb cb, void *ctx);
size_t kf_outbox_count(kf_outbox *o);

#endif
