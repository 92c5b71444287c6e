/* auth — who may talk on the agent link: the ZAP handler (RFC 27) that
 * accepts a CURVE handshake only for a key in the allow list, the per-frame
 * check that makes a revocation take effect on open connections, and the
 * allow list re-read when its bytes change. Refusals are logged with the key
 * and address, each key at most every 10 s. */
#include "daemon/coord_int.h"
#include "common/log.h"
#include "common/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static int cmp_allow(const void *a, const void *b)
{
    return strcmp(((const kf_allow_entry *)a)->pub, ((const kf_allow_entry *)b)->pub);
}

void auth_sort_allow(kf_allow *a)
{
    if (a->n > 1)
        qsort(a->e, a->n, sizeof *a->e, cmp_allow);
}

/* A binary search, since this runs for every frame an agent sends. */
const char *auth_allowed(const kf_coord *c, const char *pub)
{
    if (!pub || !*pub)
        return NULL;
    kf_allow_entry key;
    snprintf(key.pub, sizeof key.pub, "%s", pub);
    const kf_allow_entry *e =
        c->allow.n ? bsearch(&key, c->allow.e, c->allow.n, sizeof *c->allow.e, cmp_allow) : NULL;
    return e ? e->name : NULL;
}

/* Logs a refusal unless the same key was logged in the last 10 s: a port
 * scanner retrying cannot flood the log, and each new key still shows. */
void auth_log_refused(kf_coord *c, const char *what, const char *pub, const char *address)
{
    uint64_t now = kf_mono_ns();
    size_t slot = 0;
    for (size_t i = 0; i < sizeof c->refused_log / sizeof *c->refused_log; i++) {
        if (strcmp(c->refused_log[i].key, pub) == 0) {
            if (now - c->refused_log[i].mono < 10000000000ull)
                return;
            slot = i;
            break;
        }
        if (c->refused_log[i].mono < c->refused_log[slot].mono)
            slot = i;
    }
    snprintf(c->last_refused, sizeof c->last_refused, "key %s from %s", pub,
             address ? address : "?");
    snprintf(c->refused_log[slot].key, sizeof c->refused_log[slot].key, "%s", pub);
    c->refused_log[slot].mono = now;
    kf_warn(what,
            "key=%s address=%s handshakes_refused=%llu frames_refused=%llu hint=\"`kfleet "
            "agent-key add KEY NAME` to accept it\"",
            pub, address ? address : "?", (unsigned long long)c->refused_handshakes,
            (unsigned long long)c->refused_frames);
}

int auth_start_zap(kf_coord *c, kf_err *err)
{
    c->zap_sock = zmq_socket(c->zctx, ZMQ_REP);
    int zero = 0;
    zmq_setsockopt(c->zap_sock, ZMQ_LINGER, &zero, sizeof zero);
    if (!c->zap_sock || zmq_bind(c->zap_sock, "inproc://zeromq.zap.01") != 0)
        return kf_err_set(err, KF_EIO, "cannot start the Curve authentication handler: %s",
                          zmq_strerror(errno));
    return KF_OK;
}

/* One ZAP request (RFC 27): version, request id, domain, address, routing
 * id, mechanism, credentials; the reply names the key as the user id, which
 * libzmq then attaches to every frame of that connection. */
void auth_handle_zap(kf_coord *c)
{
    zmq_msg_t f[8];
    int n = 0, more = 1;
    while (more && n < 8) {
        zmq_msg_init(&f[n]);
        if (zmq_msg_recv(&f[n], c->zap_sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&f[n]);
            if (n == 0)
                return;
            break;
        }
        more = zmq_msg_more(&f[n]);
        n++;
    }
    while (more) { /* more frames than RFC 27 has: drain them */
        zmq_msg_t x;
        zmq_msg_init(&x);
        if (zmq_msg_recv(&x, c->zap_sock, 0) < 0)
            more = 0;
        else
            more = zmq_msg_more(&x);
        zmq_msg_close(&x);
    }
    char pub[KF_KEY_Z85 + 1] = "", address[64] = "";
    const char *status = "400", *text = "malformed request";
    if (n >= 7 && zmq_msg_size(&f[0]) == 3 && memcmp(zmq_msg_data(&f[0]), "1.0", 3) == 0) {
        size_t alen =
            zmq_msg_size(&f[3]) < sizeof address - 1 ? zmq_msg_size(&f[3]) : sizeof address - 1;
        memcpy(address, zmq_msg_data(&f[3]), alen);
        address[alen] = '\0';
        int curve = zmq_msg_size(&f[5]) == 5 && memcmp(zmq_msg_data(&f[5]), "CURVE", 5) == 0;
        if (curve && zmq_msg_size(&f[6]) == 32) {
            zmq_z85_encode(pub, zmq_msg_data(&f[6]), 32);
            kf_err rerr;
            int changed = 0;
            /* A key added a moment ago must not wait for the next check. */
            if (!auth_allowed(c, pub) &&
                kf_allow_refresh(c->cfg.allow_file, &c->allow, &changed, &rerr) == KF_OK && changed)
                auth_sort_allow(&c->allow);
            if (auth_allowed(c, pub)) {
                status = "200";
                text = "OK";
            } else {
                text = "unknown key";
                c->refused_handshakes++;
                auth_log_refused(c, "auth.refused", pub, address);
            }
        } else {
            text = "the agent link is CURVE only";
            c->refused_handshakes++;
            auth_log_refused(c, "auth.refused", curve ? "(bad key)" : "(no CURVE)", address);
        }
    }
    const char *reply[6] = {"1.0", NULL, status, text, status[0] == '2' ? pub : "", ""};
    for (int i = 0; i < 6; i++) {
        int flags = i < 5 ? ZMQ_SNDMORE : 0;
        if (i == 1) {
            if (n > 1)
                zmq_send(c->zap_sock, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), flags);
            else
                zmq_send(c->zap_sock, "", 0, flags);
        } else {
            zmq_send(c->zap_sock, reply[i], strlen(reply[i]), flags);
        }
    }
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
}

/* Re-reads the allow list when it changed; agents whose key left it are
 * cut off: their frames are dropped from now on and the next check loses
 * them, requeueing what they ran. */
void auth_refresh_allow(kf_coord *c)
{
    kf_err err;
    int changed = 0;
    if (kf_allow_refresh(c->cfg.allow_file, &c->allow, &changed, &err) != KF_OK) {
        /* The last list read stays in force (a list that cannot be read,
         * out of descriptors say, locks nobody out); said at once, then at
         * most every 10 s rather than every re-read. */
        uint64_t now = kf_mono_ns();
        c->allow_fails++;
        if (!c->allow_warn_mono || now - c->allow_warn_mono >= 10000000000ull) {
            kf_warn("auth.allow_list", "error=\"%s\" keeping=%zu failed_reads=%llu", err.msg,
                    c->allow.n, (unsigned long long)c->allow_fails);
            c->allow_warn_mono = now;
            c->allow_fails = 0;
        }
        return;
    }
    if (c->allow_warn_mono) {
        kf_info("auth.allow_list", "readable_again=yes keys=%zu", c->allow.n);
        c->allow_warn_mono = 0;
        c->allow_fails = 0;
    }
    if (!changed)
        return;
    auth_sort_allow(&c->allow);
    kf_info("auth.allow_list", "keys=%zu", c->allow.n);
    for (size_t i = 0; i < c->nagents; i++) {
        kagent *a = c->agents[i];
        if (a->key[0] && !a->revoked && !auth_allowed(c, a->key)) {
            a->revoked = 1;
            kf_warn("agent.revoked", "agent=%s key=%s", a->id, a->key);
        } else if (a->revoked && auth_allowed(c, a->key)) {
            a->revoked = 0;
        }
    }
}
