/* checkers — what the agent does to judge a candidate's task (docs/problems.md,
 * issues 41 and 43): its references here, and its checker.
 *
 * References: a candidate's assignment names the stored references of its
 * configuration by digest (no values travel). Those this agent lacks (a
 * reference computed on another node, dropped from its store, or stored
 * before references were files) it computes first, in a runner that loads
 * only the problem, in the task's slot, before the candidate's runner
 * starts: checkers_prestage makes that runner's assignment, and
 * checkers_handoff, when its Result is in, keeps the files and makes the
 * candidate's assignment name them. A reference computed here that does
 * not hash to the stored digest (not bitwise the same on this node: a GPU
 * reference often is not) is this node's, and the Result says how many
 * (references_differ): the candidate is judged against what the problem
 * computes on the node it runs on.
 *
 * The checker (runner/checker.h): `kfleet-agent --checker`, forked and
 * exec'd by the agent (never by the runner), its descriptors the
 * references opened here, a socket whose other end goes to the runner, and
 * a verdict pipe only the agent reads. */
#ifndef KF_CHECKERS_H
#define KF_CHECKERS_H

#include "agent/agent_int.h"

#include <stddef.h>
#include <stdint.h>

/* How many of spec's references are not in this agent's store (no digest,
 * or no file). */
size_t checkers_missing(const kf_agent *a, const Kfleet__TaskSpec *spec);

/* The assignment of the runner that computes ta's missing references,
 * packed into *out (the caller frees it): a reference task of ta's problem
 * for those seeds, with ta's id and attempt. 0, or KF_EINVAL with err. */
int checkers_prestage(const kf_agent *a, const Kfleet__TaskAssign *ta, uint8_t **out, size_t *len,
                      kf_err *err);

/* The references a reference runner wrote (res, of runner r) into the
 * agent's store. 0, or a code with err (the task then fails). */
int checkers_keep(kf_agent *a, const krunner *r, const Kfleet__Result *res, kf_err *err);

/* The candidate's assignment (packed in r->then) with the references that
 * prestage runner r computed (res) filled in: returned unpacked (the caller
 * frees it with kfleet__task_assign__free_unpacked), *recomputed and
 * *differ counted. NULL with err. */
Kfleet__TaskAssign *checkers_handoff(kf_agent *a, const krunner *r, const Kfleet__Result *res,
                                     uint32_t *recomputed, uint32_t *differ, kf_err *err);

/* Starts the checker of candidate task ta for runner r: r->verdict_fd
 * and r->checker_pid set, *runner_fd the runner's end of its socket (the
 * caller places it at KF_RUNNER_FD_CHECKER in the runner and closes it).
 * 0, or a code with err (nothing left open). */
int checkers_start(kf_agent *a, krunner *r, const Kfleet__TaskAssign *ta, int *runner_fd,
                   kf_err *err);

/* Ends r's checker if it still runs (its exit is reaped with the runners'). */
void checkers_stop(krunner *r);

#endif
