/* client — the CLI's side of the control protocol, and what turns a parsed
 * sweep file into a submit request.
 *
 * A coordinator "is running" for a home when its lock file is held; the
 * client checks that first, so a missing coordinator is one clear line
 * instead of a timeout. */
#ifndef KF_CLIENT_H
#define KF_CLIENT_H

#include "common/err.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"
#include "common/paths.h"
#include "core/sweep.h"

typedef struct kf_client kf_client;

/* Connects to the coordinator of `paths`. KF_EUNAVAIL (err says what to do)
 * when none is running. */
int kf_client_open(const kf_paths *paths, kf_client **out, kf_err *err);
void kf_client_close(kf_client **self);

/* Sends req and waits up to timeout_ms for the reply (freed by the caller
 * with kfleet__control_reply__free_unpacked). A reply with a non-zero code
 * is returned as that code with its message in err. */
int kf_client_call(kf_client *c, Kfleet__ControlRequest *req, int timeout_ms,
                   Kfleet__ControlReply **out, kf_err *err);

/* Builds the submit request of a sweep: reads each kernel's source and the
 * ABI header from kernels_dir, hashes them with the flags, and expands the
 * configurations into tasks. A problem sweep's problem is one more
 * KernelRef, last, with problem set and no tasks; its candidates have
 * candidate set, and the Sweep the seed policy. Free with
 * kf_client_free_submit. */
int kf_client_build_submit(const kf_sweep_spec *spec, const char *kernels_dir,
                           Kfleet__SubmitRequest **out, kf_err *err);
void kf_client_free_submit(Kfleet__SubmitRequest **req);

/* The kernels directory: $KF_KERNELS_DIR, else EXE_DIR/kernels (build tree
 * and bundle), else EXE_DIR/../kernels. */
int kf_client_kernels_dir(char *out, size_t len, kf_err *err);

#endif
