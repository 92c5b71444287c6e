/* fuzz_sched — the coordinator fed a conversation: agent frames through
 * kf_wire_dispatch into sched.c's real handler table, and control requests
 * through control_handle, interleaved, against one fresh coordinator per
 * input. That reaches what a single frame cannot: a sweep submitted, agents
 * registered, tasks dispatched, then heartbeats, progress, samples and
 * results for them — valid, stale, duplicated or hostile.
 *
 * Input format (tests/fuzz/gen_corpus.c writes the seeds):
 *   repeated { u8 head; u16 len (little-endian); len bytes }
 *   head 0x7f        a tick: the periodic checks run with zero timeouts, so
 *                    every agent is lost and its attempts are requeued
 *   head & 0x80      a control request (peer "cli")
 *   else             an agent frame from peer "a<head & 7>", authenticated
 *                    with that peer's key, or with bit 3 set with another
 *                    key (an impostor on the same connection name)
 * A record cut short by the end of the input takes what is left. */
#include "coord_fixture.h"

#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kf_coord *c = kf_fuzz_coord_new();
    size_t pos = 0;
    while (pos < size) {
        uint8_t head = data[pos++];
        size_t len = 0;
        if (pos < size)
            len = data[pos++];
        if (pos < size)
            len |= (size_t)data[pos++] << 8;
        if (len > size - pos)
            len = size - pos;
        const uint8_t *body = data + pos;
        pos += len;
        if (head == 0x7f) {
            double timeout = c->cfg.heartbeat_timeout_s, grace = c->cfg.assign_grace_s;
            c->cfg.heartbeat_timeout_s = 0;
            c->cfg.assign_grace_s = 0;
            sched_check_agents(c);
            c->cfg.heartbeat_timeout_s = timeout;
            c->cfg.assign_grace_s = grace;
            c->dispatch_needed = 1;
        } else if (head & 0x80) {
            static const char cli[] = "cli";
            control_handle(c, cli, sizeof cli - 1, body, len);
        } else {
            char id[3] = {'a', (char)('0' + (head & 7)), 0};
            char key[41];
            snprintf(key, sizeof key, "%-39s%c", (head & 8) ? "impostor-key" : "agent-key",
                     '0' + (head & 7));
            kf_peer peer = {.id = id, .id_len = 2, .user = key};
            kf_err err;
            kf_err_clear(&err);
            kf_wire_dispatch(kf_sched_handlers, c, &peer, body, len, &err);
        }
        kf_fuzz_coord_turn(c);
    }
    kf_fuzz_coord_destroy(&c);
    return 0;
}
