/* taskspec — what a task's spec says about another kernel than its own. A
 * candidate's task (docs/problems.md) carries its problem's kernel in the
 * problem_* fields; the agent's checkers compute the problem's references
 * from it and the runner's confinement lets the runner read its build. */
#ifndef KF_TASKSPEC_H
#define KF_TASKSPEC_H

#include "proto/kfleet.pb-c.h"

/* *out = s with its kernel, hashes, interpreter, device and files the
 * problem's and no extension: what loads, checks or confines the problem's
 * build. The problem_* fields stay (a runner loading the problem still
 * says it judges a candidate). Points into s: s must outlive out. */
void kf_taskspec_problem(const Kfleet__TaskSpec *s, Kfleet__TaskSpec *out);

#endif
