/* launches — the daemon's launches (`kfleet serve`): each launch or
 * teardown request runs on its own thread (kf_launch_run /
 * kf_launch_teardown, one more thread per host), never in the coordinator's
 * loop; its results go into a table under a mutex that the control handler
 * reads. The launch threads reach the loop like any client, over the
 * control socket (tunnel_open, status), so no coordinator state is shared
 * across threads. The last finished launches are kept for launch_status;
 * destroy cancels and joins the running ones. */
#ifndef KF_LAUNCHES_H
#define KF_LAUNCHES_H

#include "common/err.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

#include <stdint.h>

typedef struct kf_launches kf_launches;

int kf_launches_new(const char *control_endpoint, const char *allow_file,
                    const char *server_pub_file, kf_launches **out, kf_err *err);
/* Cancels the running launches and joins their threads. */
void kf_launches_destroy(kf_launches **self);
/* Starts the launch (or teardown) of req; *id names it. When a launch of
 * exactly these hosts is still running, *attached is set and *id is that
 * one (nothing new starts, req's bundle is not taken); a launch of some of
 * them is refused with KF_EBUSY. KF_EINVAL for a malformed request. */
int kf_launches_start(kf_launches *self, const Kfleet__LaunchRequest *req, uint32_t *id,
                      int *attached, kf_err *err);
/* The launch's state so far, malloc'd; free with kf_launches_free_state.
 * KF_ENOTFOUND when there is no such launch (any more). */
int kf_launches_state(kf_launches *self, uint32_t id, Kfleet__LaunchState **out, kf_err *err);
void kf_launches_free_state(Kfleet__LaunchState **st);
/* Adds what the providers' watches last saw of the launched hosts
 * (provider.h's status: a cluster's pending jobs, say) to st; after st is
 * sent, kf_launches_status_free takes it out and frees it. */
void kf_launches_status(kf_launches *self, Kfleet__StatusReply *st);
void kf_launches_status_free(kf_launches *self, Kfleet__StatusReply *st);

#endif
