/* results — what the agent sends for a runner's task: the runner's own
 * Result completed here (its task, attempt and agent, the samples the agent
 * counted, the kernel's output kept by kout.h, a candidate's checker's
 * verdicts made binding by verdict.h, the references a reference runner
 * wrote kept in the store by checkers.h), or one the agent writes for a
 * runner that ended without one (ending.h says why). */
#ifndef KF_RESULTS_H
#define KF_RESULTS_H

#include "agent/agent_int.h"

/* Sends a Result of r's task in `state` with error (the runner's output
 * so far attached). */
void results_send(kf_agent *a, krunner *r, int state, int infra, const char *error);

/* kfleet kills runner r (its process group) for a reason its attempt's
 * error gives (the first such reason stays: krunner.killed_why). */
void results_kill(krunner *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The last lines of r's own log (at most len - 1 bytes; "" without one). */
void results_log_tail(const krunner *r, char *out, size_t len);

/* Completes and sends the Result runner r wrote (env's body); r->got_result
 * set. The caller still owns env. */
void results_relay(kf_agent *a, krunner *r, Kfleet__Envelope *env);

#endif
