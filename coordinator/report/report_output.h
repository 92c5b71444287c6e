/* report_output — what kernels wrote on their stdout and stderr
 * (Result.kernel_output, kept bounded by the agent: agent/kout.h), in the
 * terminal and Markdown reports: a section with each task that wrote
 * anything, its byte count and its first lines, made inert. The JSON
 * report carries the whole kept text (report_json.c: each task's
 * "output"). A kernel's text is its own: it never changes a verdict. */
#ifndef KF_REPORT_OUTPUT_H
#define KF_REPORT_OUTPUT_H

#include "common/buf.h"
#include "report/report_rows.h"

/* The configuration of task t, "name=value ..." into out. */
void kf_rep_task_params(const Kfleet__Task *t, char *out, size_t len);

/* The "output:" section (md: "## Kernel output") into out; nothing when no
 * task wrote anything. */
void kf_rep_render_output(const rep *r, int md, kf_buf *out);

#endif
