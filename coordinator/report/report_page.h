/* report_page — the building blocks the HTML page (report_html.c) and its
 * charts (report_svg.c) share, so that a figure is read and written the same
 * way in the table and on a chart: readers of the report JSON
 * (kfleet.report/1) and the number and time formats; the HTML escaping is
 * beside the buffer (common/text.h: kf_text_html). */
#ifndef KF_REPORT_PAGE_H
#define KF_REPORT_PAGE_H

#include "common/buf.h"

#include <jansson.h>
#include <stddef.h>

/* What the page writes for "no figure". */
#define KF_REP_DASH "\xE2\x80\x93"

/* o[key] as a string, or NULL. */
const char *kf_rep_str_at(const json_t *o, const char *key);
/* 1 and *v when o[key] is a finite number; 0 for null or absent. */
int kf_rep_num_at(const json_t *o, const char *key, double *v);
double kf_rep_num_or(const json_t *o, const char *key, double dflt);
/* o[key] as an object, or NULL. */
const json_t *kf_rep_obj_at(const json_t *o, const char *key);
/* A row's kernel ("?" when missing) and node ("" when missing). */
const char *kf_rep_row_kernel(const json_t *row);
const char *kf_rep_row_node(const json_t *row);
/* The row's profile when it is a result a chart may draw: the profile
 * succeeded and the validation (when there is one) passed. A failed,
 * skipped, cancelled or unvalidated-and-failing configuration is drawn
 * nowhere as a result; NULL for it. */
const json_t *kf_rep_result_profile(const json_t *row);
/* "n=1048576 block=32". which: 0 every parameter, 1 only those that vary
 * across the kernel's rows (what tells its bars apart), 2 only the fixed. */
void kf_rep_params_str(const json_t *rows, const json_t *row, int which, char *out, size_t len);

/* Three significant digits without an exponent: 1.23, 12.3, 123, 12345. */
void kf_rep_fmt_short(double v, char *out, size_t len);
/* The multiplier and name of the unit a time (seconds) reads best in. */
double kf_rep_time_unit(double s, const char **name);
/* A time in that unit: "1.234 ms"; "-" when not finite or negative. */
void kf_rep_fmt_time(double s, char *out, size_t len);
/* Cuts s (of size len) in place to at most max columns, with an ellipsis
 * when cut. */
void kf_rep_cut(char *s, size_t len, size_t max);
/* Why a profile was skipped, from its task's error ("skipped: WHY (STATE):
 * ...", sched.c): "skipped: WHY" in out, the words the scheduler chose
 * (its validation did not pass; a problem's reference was not computed);
 * "skipped: validation did not pass" for an error that says nothing. */
const char *kf_rep_skip_why(const char *error, char *out, size_t len);

#endif
