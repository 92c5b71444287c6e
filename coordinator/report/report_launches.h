/* report_launches — what a profile's samples launched (issue 43 item 4):
 * ProfileStats.launches, each kernel name CUPTI recorded with its launches
 * and summed duration, as the reports show it. Each name's share is of
 * the kernels' summed time (kernels that overlap count in full); its
 * launches per run are over the samples CUPTI timed (timer "cupti") and
 * their batch. A library kernel's name (cuBLAS's sm90_xmma_..., torch's
 * at::native) where a candidate was to bring its own is visible here, at
 * run time, not guessed from its source. */
#ifndef KF_REPORT_LAUNCHES_H
#define KF_REPORT_LAUNCHES_H

#include "common/buf.h"
#include "report/report_rows.h"

#include <jansson.h>

/* The launches of a profile as JSON: [{name, count, per_run, seconds,
 * share}], or null without any (a host kernel, no CUPTI). */
json_t *kf_rep_launches_json(const Kfleet__ProfileStats *ps);

/* The "kernels launched" section (md: "## Kernels launched") into out: each
 * profiled row's three largest names by time, with the rest counted;
 * nothing when no row has launches. */
void kf_rep_render_launches(const rep *r, int md, kf_buf *out);

#endif
