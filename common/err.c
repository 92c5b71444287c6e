/* err — error codes and the error carrier; see err.h. */
#include "common/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int kf_err_set(kf_err *err, int code, const char *fmt, ...)
{
    if (err) {
        /* Formatted aside first: an argument may be err->msg itself (a
         * caller wrapping the error it got in what it was doing). */
        char msg[sizeof err->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        memcpy(err->msg, msg, sizeof msg);
        err->code = code;
    }
    return code;
}

void kf_err_clear(kf_err *err)
{
    if (err) {
        err->code = KF_OK;
        err->msg[0] = '\0';
    }
}

const char *kf_strerror(int code)
{
    switch (code) {
    case KF_OK:
        return "ok";
    case KF_EINVAL:
        return "invalid input";
    case KF_ENOMEM:
        return "out of memory";
    case KF_EIO:
        return "i/o error";
    case KF_ESTORE:
        return "store error";
    case KF_ENOTFOUND:
        return "not found";
    case KF_EPROTO:
        return "protocol error";
    case KF_EBUSY:
        return "busy";
    case KF_ETIMEOUT:
        return "timed out";
    case KF_EUNAVAIL:
        return "unavailable";
    case KF_EFULL:
        return "full";
    case KF_EEXIST:
        return "exists";
    default:
        return "unknown error";
    }
}
