/* verdict — see verdict.h. The lines are checker.h's:
 *   check SEQ ref I pass 0|1 nonfinite N max_abs X rel Y
 *   check SEQ ref I bad
 *   done checks N failed F */
#include "agent/verdict.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VERDICT_MAX (1u << 20)

int kf_verdict_apply(int fd, uint32_t want, Kfleet__Result *res, char *why, size_t whylen)
{
    size_t cap = 4096, len = 0;
    char *text = malloc(cap + 1);
    while (text) {
        if (len == cap) {
            char *more = cap < VERDICT_MAX ? realloc(text, 2 * cap + 1) : NULL;
            if (!more)
                break;
            text = more;
            cap *= 2;
        }
        ssize_t n = read(fd, text + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    if (text)
        text[len] = '\0';
    unsigned long long checks = 0, failed = 0, done_checks = 0, done_failed = 0;
    int done = 0;
    char first_bad[256] = "";
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        unsigned long long seq = 0, nonfinite = 0;
        unsigned ref = 0;
        int pass = 0;
        double max_abs = 0, rel = 0;
        if (sscanf(line, "done checks %llu failed %llu", &done_checks, &done_failed) == 2) {
            done = 1;
        } else if (sscanf(line, "check %llu ref %u pass %d nonfinite %llu max_abs %lg rel %lg",
                          &seq, &ref, &pass, &nonfinite, &max_abs, &rel) == 6) {
            if (res->trials && seq < res->n_trials) {
                res->trials[seq]->passed = pass;
                res->trials[seq]->max_abs_err = max_abs;
                res->trials[seq]->rel_err = rel;
                res->trials[seq]->nonfinite = nonfinite;
            }
            checks++;
            if (!pass && failed++ == 0)
                snprintf(first_bad, sizeof first_bad,
                         "output %llu (pool seed %u): %llu non-finite or unwritten elements, max "
                         "abs error %.3g, relative error %.3g (tolerances %.3g, %.3g)",
                         seq, ref, nonfinite, max_abs, rel, res->tol_abs, res->tol_rel);
        } else {
            checks++;
            if (failed++ == 0)
                snprintf(first_bad, sizeof first_bad,
                         "output %llu was not the problem's output "
                         "(%.80s)",
                         checks - 1, line);
        }
    }
    free(text);
    int ok = done && done_failed == 0 && failed == 0 && done_checks == checks && checks >= want;
    if (ok)
        return 1;
    if (!done)
        snprintf(why, whylen,
                 "the checker did not finish (%llu verdicts read): the candidate's outputs "
                 "were not judged, so it does not pass",
                 checks);
    else if (failed || done_failed)
        snprintf(why, whylen, "the checker failed the candidate: %s",
                 first_bad[0] ? first_bad : "an output it did not pass");
    else
        snprintf(why, whylen,
                 "the checker judged %llu outputs of the %u the task must send: the "
                 "candidate does not pass unjudged",
                 checks, want);
    if (res->state == KFLEET__TASK_STATE__SUCCEEDED) {
        res->state = KFLEET__TASK_STATE__FAILED;
        res->error = why;
    }
    return 0;
}
