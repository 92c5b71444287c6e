/* report_opts — what a report is asked for: its format, the order of its
 * rows and the options of each format. Shared by the API (report.h) and
 * the collection (report_rows.h), which must not see each other's
 * declarations. */
#ifndef KF_REPORT_OPTS_H
#define KF_REPORT_OPTS_H

/* KF_REPORT_HTML: the JSON rendered as one HTML page with its charts, for
 * a browser (no network needed); see report_html.h. */
/* KF_REPORT_CSV: one line per row, RFC 4180, drawn from the JSON too. */
typedef enum {
    KF_REPORT_TABLE = 0,
    KF_REPORT_MD,
    KF_REPORT_JSON,
    KF_REPORT_HTML,
    KF_REPORT_CSV
} kf_report_format;

/* The order of the rows: by kernel (and configuration, then node: the
 * default), or first by GPU/CPU model, or first by node, or as a
 * leaderboard: by configuration and device, each ranked by median
 * (report_rank.h). */
typedef enum { KF_GROUP_KERNEL = 0, KF_GROUP_GPU, KF_GROUP_NODE, KF_GROUP_CONFIG } kf_report_group;

typedef struct kf_report_opts {
    kf_report_format fmt;
    int color; /* ANSI colour in the table (only when stdout is a tty) */
    const char
        *baseline; /* compare against this kernel instead of the sweep's; NULL: the sweep's */
    kf_report_group group_by;
    /* group_by was asked for (--group-by): else a problem sweep's report is
     * its leaderboard, ordered as KF_GROUP_CONFIG. */
    int group_set;
    int provenance;   /* table, Markdown, CSV: add each row's provenance (JSON always has it) */
    int omit_samples; /* JSON: leave out sample_seconds (for a program's own reading) */
} kf_report_opts;

#endif
