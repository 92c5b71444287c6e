/* err — kfleet's error codes and the one-message error carrier.
 *
 * Functions return 0 or a negative KF_E* code. Where a person will read the
 * failure, the function also fills a kf_err with one message that says what
 * went wrong, where (file:line:column, host, endpoint) and what to do. */
#ifndef KF_ERR_H
#define KF_ERR_H

#include <stddef.h>

enum {
    KF_OK = 0,
    KF_EINVAL = -1, /* bad input: a file, a flag, a message */
    KF_ENOMEM = -2,
    KF_EIO = -3,    /* an OS call failed */
    KF_ESTORE = -4, /* LMDB failed */
    KF_ENOTFOUND = -5,
    KF_EPROTO = -6, /* a message that does not decode or has another version */
    KF_EBUSY = -7,  /* locked by another process */
    KF_ETIMEOUT = -8,
    KF_EUNAVAIL = -9, /* a peer is not there (coordinator not running) */
    KF_EFULL = -10,   /* disk or map full */
    KF_EEXIST = -11,
};

typedef struct kf_err {
    int code;
    char msg[1024];
} kf_err;

/* Fills err (when not NULL) and returns code, so callers can write
 * `return kf_err_set(err, KF_EINVAL, "...")`. An argument may be err->msg
 * itself: `kf_err_set(err, rc, "cannot X: %s", err->msg)` wraps it. */
int kf_err_set(kf_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Clears err to KF_OK and an empty message. */
void kf_err_clear(kf_err *err);

/* A short static name for a code ("invalid input", "store error", ...). */
const char *kf_strerror(int code);

#endif
