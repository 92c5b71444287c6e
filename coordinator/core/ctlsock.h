/* ctlsock — one control request and its reply on a ZeroMQ DEALER: the two
 * halves of a call to the coordinator's control socket, for every caller
 * that speaks it (the CLI's client, the daemon's launch threads).
 *
 * The message encoding is wire.h's (kf_ctl_pack_request and friends); this
 * module only moves one encoded request out and one reply in, and turns a
 * reply with a non-zero code into that error. How long to wait between the
 * two is the caller's: the CLI polls with a timeout, a launch thread in
 * short slices so that a cancel ends the wait. */
#ifndef KF_CTLSOCK_H
#define KF_CTLSOCK_H

#include "common/err.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

/* Encodes req and sends it on sock (a connected DEALER). 0, or KF_EIO with
 * err filled. */
int kf_ctlsock_send_request(void *sock, Kfleet__ControlRequest *req, kf_err *err);

/* Reads one reply from sock, blocking. On success *out is the reply, the
 * caller's to free with kfleet__control_reply__free_unpacked. A reply whose
 * code is not 0 is freed and returned as that code, its message in err;
 * KF_EPROTO for a frame that does not decode, KF_EIO when nothing could be
 * read. */
int kf_ctlsock_read_reply(void *sock, Kfleet__ControlReply **out, kf_err *err);

#endif
