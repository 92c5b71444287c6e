/* control_reply — a control request's one reply, packed and queued for the
 * control socket (sent after the turn commits). Its own file so that every
 * control handler's file uses it without calling into another. */
#include "daemon/coord_int.h"

void control_reply(kf_coord *c, const void *peer, size_t peer_len, Kfleet__ControlReply *rep)
{
    kf_ctl_pack_reply(rep, &c->scratch);
    coord_queue(c, 1, peer, peer_len, &c->scratch);
}

void control_reply_error(kf_coord *c, const void *peer, size_t peer_len, int code, const char *msg)
{
    Kfleet__ControlReply rep = KFLEET__CONTROL_REPLY__INIT;
    rep.code = code;
    rep.error = (char *)msg;
    control_reply(c, peer, peer_len, &rep);
}
