/* fleet_pb — an inventory host as the LaunchHost of a launch request and
 * back: the one conversion both sides use (the CLI that sends the request,
 * the daemon's launches.c that runs it). The common fields are converted
 * here, the provider's own through its row (provider.h). */
#ifndef KF_FLEET_PB_H
#define KF_FLEET_PB_H

#include "common/err.h"
#include "fleet/fleet.h"
#include "proto/control.pb-c.h"
#include "proto/kfleet.pb-c.h"

/* Fills x (initialised here) from h; x's strings and provider part are
 * its own, freed with kf_fleet_host_pb_release. */
void kf_fleet_host_to_pb(const kf_fleet_host *h, Kfleet__LaunchHost *x);
void kf_fleet_host_pb_release(Kfleet__LaunchHost *x);

/* Checks x (a request from a client: anything may be in it) and fills h
 * (zeroed by the caller; freed with kf_fleet_host_release even on a
 * failure). KF_EINVAL with "launch: ..." in err for an unknown provider or
 * a value out of range. "" fields become NULL, port 0 becomes 22, and an
 * empty provider is ssh. */
int kf_fleet_host_from_pb(const Kfleet__LaunchHost *x, kf_fleet_host *h, kf_err *err);

#endif
