/* serve — which tasks a serving runner (`--runner --serve`, runners.c)
 * takes, and handing it one: the task as a frame on its task socket, and
 * for a candidate's profile a new checker's socket passed beside it
 * (SCM_RIGHTS; the runner places it at KF_RUNNER_FD_CHECKER,
 * runner/harness.c).
 *
 * A kernel's runner serves that kernel's validate and profile tasks on its
 * GPU. A candidate's serves one more task after its validation: the
 * profile of that configuration, whose seeds are the pool's held out from
 * the validation (coordinator/core/problem.h), so a candidate right only
 * on inputs it has seen still meets new ones at its profile's first audit;
 * another configuration (the same seeds at another size) gets a runner of
 * its own. */
#ifndef KF_AGENT_SERVE_H
#define KF_AGENT_SERVE_H

#include "agent/agent_int.h"

#include <stdint.h>

/* Whether ta runs in a serving runner. */
int serve_takes(const Kfleet__TaskAssign *ta);

/* Serving runner r, started for ta, marked as holding ta's kernel (and a
 * candidate's problem and configuration). ta is one serve_takes. */
void serve_mark(krunner *r, const Kfleet__TaskAssign *ta);

/* Whether idle serving runner r may take ta (see above). */
int serve_holds(const krunner *r, const Kfleet__TaskAssign *ta);

/* Whether ta runs on a GPU slot. */
int serve_on_gpu(const Kfleet__TaskAssign *ta);

/* The outputs a candidate's task must have judged by its checker. */
uint32_t serve_checks_wanted(const Kfleet__TaskAssign *ta);

/* ta as runner r gets it: with the agent's own word on its GPU slot
 * (TaskAssign.slot_warm), whatever the coordinator sent. */
Kfleet__TaskAssign serve_stamped(const kf_agent *a, const krunner *r, const Kfleet__TaskAssign *ta);

/* ta as one frame for serving runner r (its length, then ta stamped for
 * r), into out. */
void serve_frame(const kf_agent *a, const krunner *r, const Kfleet__TaskAssign *ta, kf_buf *out);

/* A frame of serve_frame on r's task socket, with a candidate's checker
 * socket cfd (>= 0) passed beside its length. 0, or KF_EIO with err. */
int serve_send(const krunner *r, const kf_buf *frame, int cfd, kf_err *err);

/* serve_frame then serve_send: ta to serving runner r now. */
int serve_hand(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, int cfd, kf_err *err);

/* Candidate task ta to idle runner r, which serve_holds: the last task's
 * checker ended (its verdicts were read with that Result), a new one
 * started for ta and its socket passed with the task. 0, or a code with
 * err. */
int serve_hand_candidate(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, kf_err *err);

/* Whether a runner killed on GPU g (runners.c retire_later) is still on
 * its way out. */
int serve_gpu_retiring(const kf_agent *a, uint32_t g);

/* Runners holding their first task (krunner.holding) hand it over once
 * their GPU's last runner is gone; one that cannot take it is killed (its
 * attempt fails as a runner that could not start). */
void serve_hand_held(kf_agent *a);

#endif
