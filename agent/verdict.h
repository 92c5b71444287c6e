/* verdict — the agent's side of a candidate's checker (docs/problems.md,
 * agent/runner/checker.h): the verdict lines the checker wrote on the
 * descriptor only it held, read when the runner's Result arrives, made
 * binding on that Result. The runner's own account of the comparison is
 * its process's, which the candidate shares and may have tampered with;
 * the checker's is not. */
#ifndef KF_VERDICT_H
#define KF_VERDICT_H

#include "common/taskkind.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/* Whether an assignment is a candidate's validate or profile, which gets a
 * verdict pipe and a runner of its own (runner/candidate.c). */
static inline int kf_verdict_wanted(const Kfleet__TaskSpec *s)
{
    return s && s->problem_hash && *s->problem_hash && !s->ncu_pass &&
           kf_task_kind_at(s->kind)->needs_reference;
}

/* What the checker said of this agent's references (runner/checker.h):
 * files it hashed whole and found right, files it found damaged, and
 * whether it could not judge at all. */
typedef struct kf_verdict_refs {
    char verified[64][65];
    size_t nverified;
    char damaged[64][65];
    size_t ndamaged;
    int error;
} kf_verdict_refs;

/* Reads what the checker wrote on fd (non-blocking: the runner waits for
 * its checker's answer to FINISH before it writes its Result, and the
 * checker writes its summary before that answer, so every line is there)
 * and applies it to res: a validate's trials take the checker's numbers
 * and pass/fail, check by check; a Result that says SUCCEEDED becomes
 * FAILED, with why (written to why, which res->error then points to), when
 * the checker did not finish, judged fewer than `want` outputs, failed
 * any, or failed a spot check. *refs gets what it said of the references.
 * Returns 1 when the checker passed the task, 0 when not. */
int kf_verdict_apply(int fd, uint32_t want, Kfleet__Result *res, char *why, size_t whylen,
                     kf_verdict_refs *refs);

#endif
