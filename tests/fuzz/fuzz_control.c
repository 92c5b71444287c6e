/* fuzz_control — the control protocol of the CLI <-> coordinator socket.
 *
 * One input is one request frame, handed to the coordinator's real
 * control_handle (decode, version check, submit/status/progress/cancel/
 * shutdown against a fresh coordinator and its store), whose every queued
 * reply must decode on the CLI's side. The same bytes are also read as a
 * reply (the CLI decodes whatever the socket brings) and as a request on
 * its own; both are walked field by field and re-encoded. */
#include "coord_fixture.h"
#include "fuzz_walk.h"

#include <stdlib.h>

static volatile uint64_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char peer[] = "\0cli-fuzz";
    kf_coord *c = kf_fuzz_coord_new();
    uint64_t before = c->protocol_errors;
    control_handle(c, peer, sizeof peer - 1, data, size);
    kf_fuzz_coord_turn(c);
    if (c->nout < 1)
        abort(); /* every request gets exactly one reply, garbage included */
    size_t replies = 0;
    for (size_t i = 0; i < c->nout; i++)
        replies += (size_t)c->out[i].to_control;
    if (replies != 1)
        abort();

    kf_err err;
    Kfleet__ControlRequest *req = kf_ctl_unpack_request(data, size, &err);
    if (req) {
        if (c->protocol_errors != before)
            abort(); /* decoded here, refused there: two decoders */
        sink ^= kf_fuzz_walk(&req->base);
        kf_fuzz_repack(&req->base);
        kfleet__control_request__free_unpacked(req, NULL);
    } else if (c->protocol_errors == before) {
        abort();
    }
    kf_fuzz_coord_destroy(&c);

    Kfleet__ControlReply *rep = kf_ctl_unpack_reply(data, size, &err);
    if (rep) {
        sink ^= kf_fuzz_walk(&rep->base);
        kf_fuzz_repack(&rep->base);
        kfleet__control_reply__free_unpacked(rep, NULL);
    }
    return 0;
}
