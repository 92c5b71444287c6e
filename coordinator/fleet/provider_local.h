/* provider_local — the local row of provider.h's table: the agents of
 * `kfleet run`, child processes of the command on this machine. It is an
 * internal row (no inventory or launch request may name it: an agent that
 * dies with the thread that forked it cannot be started from the daemon's
 * launch threads); `kfleet run` makes its host here and drives it through
 * the row, on its own thread (launch.h's kf_launch_here). */
#ifndef KF_PROVIDER_LOCAL_H
#define KF_PROVIDER_LOCAL_H

#include "common/err.h"
#include "fleet/fleet.h"

#include <sys/types.h>

/* Fills h (zeroed by the caller; freed with kf_fleet_host_release) as the
 * local host "local" with agents agents local-0 .. local-(agents-1), each
 * working in agents_dir/run-I and logging to logdir/agent-I.log; with
 * gpus > 0 agent I sees GPU I % gpus only; with warm_later, KF_WARM=later
 * in their environment unless KF_WARM is set (the sweep has no Python
 * problem: no warm runner starts with an agent, agent_int.h's
 * warmup_at_start). The launch (kf_launch_here)
 * takes the agent endpoint from the options' direct, the coordinator's key
 * from server_pub_file, and enrolls each agent's key in allow_file; the
 * teardown stops them (SIGTERM, SIGKILL after 5 s). */
void kf_provider_local_host(kf_fleet_host *h, const char *agents_dir, int agents, int gpus,
                            int warm_later, const char *logdir);

/* The pid of local agent i as launched for agents_dir (its pid file), or
 * -1 when there is none. */
pid_t kf_provider_local_pid(const char *agents_dir, int i);

#endif
