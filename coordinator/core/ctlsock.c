/* ctlsock — a control request out, its reply in; see ctlsock.h. */
#include "core/ctlsock.h"
#include "common/buf.h"
#include "common/wire.h"

#include <errno.h>
#include <zmq.h>

int kf_ctlsock_send_request(void *sock, Kfleet__ControlRequest *req, kf_err *err)
{
    kf_buf b = KF_BUF_INIT;
    kf_ctl_pack_request(req, &b);
    /* ZeroMQ drops a message over the limit without a word, and the caller
     * would wait for a reply that never comes: say so here instead. */
    if (b.len > KF_MAX_FRAME) {
        size_t len = b.len;
        kf_buf_release(&b);
        return kf_err_set(err, KF_EINVAL,
                          "the request is %.1f MiB; the coordinator takes at most %d MiB in one "
                          "request (a sweep's tasks and kernel sources travel together): submit "
                          "fewer configurations, or split the sweep",
                          (double)len / 1048576.0, KF_MAX_FRAME >> 20);
    }
    int rc = zmq_send(sock, b.data, b.len, 0);
    kf_buf_release(&b);
    if (rc < 0)
        return kf_err_set(err, KF_EIO, "cannot send to the coordinator: %s", zmq_strerror(errno));
    return KF_OK;
}

int kf_ctlsock_read_reply(void *sock, Kfleet__ControlReply **out, kf_err *err)
{
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    if (zmq_msg_recv(&msg, sock, 0) < 0) {
        zmq_msg_close(&msg);
        return kf_err_set(err, KF_EIO, "cannot read the coordinator's reply");
    }
    Kfleet__ControlReply *rep = kf_ctl_unpack_reply(zmq_msg_data(&msg), zmq_msg_size(&msg), err);
    zmq_msg_close(&msg);
    if (!rep)
        return KF_EPROTO;
    if (rep->code != 0) {
        int rc = kf_err_set(err, rep->code, "%s", rep->error ? rep->error : "coordinator error");
        kfleet__control_reply__free_unpacked(rep, NULL);
        return rc;
    }
    *out = rep;
    return KF_OK;
}
