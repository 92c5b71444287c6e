/* report_csv — the report JSON as CSV; see report_csv.h. */
#include "report/report_csv.h"
#include "common/err.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* One field, quoted when it has to be. */
static void field(kf_buf *out, const char *s, int first)
{
    if (!first)
        kf_buf_addc(out, ',');
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        kf_buf_adds(out, s);
        return;
    }
    kf_buf_addc(out, '"');
    for (; *s; s++) {
        if (*s == '"')
            kf_buf_addc(out, '"');
        kf_buf_addc(out, *s);
    }
    kf_buf_addc(out, '"');
}

/* A JSON value as a field: strings as they are, numbers in full precision,
 * booleans as true/false, null and absent as empty. */
static void value(kf_buf *out, const json_t *v)
{
    char num[64];
    if (json_is_string(v)) {
        field(out, json_string_value(v), 0);
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        field(out, num, 0);
    } else if (json_is_real(v) && isfinite(json_real_value(v))) {
        snprintf(num, sizeof num, "%.9g", json_real_value(v));
        field(out, num, 0);
    } else if (json_is_boolean(v)) {
        field(out, json_is_true(v) ? "true" : "false", 0);
    } else {
        field(out, NULL, 0);
    }
}

/* "k=v;k=v" in the JSON's (the sweep's) order. */
static void params(kf_buf *out, const json_t *p)
{
    kf_buf s = KF_BUF_INIT;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)p, k, v)
    {
        kf_buf_addf(&s, "%s%s=%lld", s.len ? ";" : "", k, (long long)json_integer_value(v));
    }
    field(out, s.data ? s.data : "", 0);
    kf_buf_release(&s);
}

static void joined(kf_buf *out, const json_t *arr)
{
    kf_buf s = KF_BUF_INIT;
    size_t i;
    json_t *v;
    json_array_foreach((json_t *)arr, i, v)
    {
        kf_buf_addf(&s, "%s%s", i ? ";" : "", json_string_value(v) ? json_string_value(v) : "");
    }
    field(out, s.data ? s.data : "", 0);
    kf_buf_release(&s);
}

static const char *const prov_keys[] = {
    "gpu_uuid",      "driver_version", "compiler",      "kernel_hash",
    "artifact_hash", "sass_archs",     "agent_version", NULL};

int kf_report_csv(const json_t *report, int provenance, kf_buf *out)
{
    const json_t *rows = json_object_get(report, "rows");
    if (!json_is_array(rows))
        return KF_EINVAL;
    static const char *const head[] = {"kernel",
                                       "params",
                                       "node",
                                       "device",
                                       "validation",
                                       "max_abs_err",
                                       "samples",
                                       "median_s",
                                       "ci95_lo_s",
                                       "ci95_hi_s",
                                       "min_s",
                                       "max_s",
                                       "noise_pct",
                                       "gbps",
                                       "gflops",
                                       "pct_copy_ceiling",
                                       "pct_bf16_ceiling",
                                       "speedup",
                                       "speedup_err",
                                       "discarded_samples",
                                       "sm_clock_median_mhz",
                                       "power_median_w",
                                       "flags",
                                       "rank",
                                       NULL};
    for (int i = 0; head[i]; i++)
        field(out, head[i], i == 0);
    for (int i = 0; provenance && prov_keys[i]; i++)
        field(out, prov_keys[i], 0);
    /* A problem sweep's rows are a leaderboard's: each says its verdict and
     * the reference it was judged by (the same on every line, so a
     * spreadsheet filtered to a row still says it). */
    const json_t *prob = json_object_get(report, "problem");
    const json_t *pol = json_object_get(prob, "seed_policy");
    static const char *const prob_head[] = {
        "verdict", "problem", "problem_hash", "seed_pool", "seed_renew_s", "seed_generation", NULL};
    for (int i = 0; json_is_object(prob) && prob_head[i]; i++)
        field(out, prob_head[i], 0);
    kf_buf_adds(out, "\r\n");
    size_t i;
    json_t *r;
    json_array_foreach((json_t *)rows, i, r)
    {
        const json_t *v = json_object_get(r, "validation"), *p = json_object_get(r, "profile");
        const json_t *ci = json_object_get(p, "median_ci95_s");
        field(out, json_string_value(json_object_get(r, "kernel")), 1);
        params(out, json_object_get(r, "params"));
        value(out, json_object_get(r, "node"));
        value(out, json_object_get(r, "device"));
        field(out,
              !v || json_is_null(v)                        ? NULL
              : json_is_true(json_object_get(v, "passed")) ? "pass"
              : json_is_false(json_object_get(v, "passed"))
                  ? "fail"
                  : json_string_value(json_object_get(v, "state")),
              0);
        value(out, json_object_get(v, "max_abs_err"));
        value(out, json_object_get(p, "samples"));
        value(out, json_object_get(p, "median_s"));
        value(out, json_array_get(ci, 0));
        value(out, json_array_get(ci, 1));
        value(out, json_object_get(p, "min_s"));
        value(out, json_object_get(p, "max_s"));
        value(out, json_object_get(p, "noise_pct"));
        value(out, json_object_get(p, "gbps"));
        value(out, json_object_get(p, "gflops"));
        value(out, json_object_get(p, "pct_copy_ceiling"));
        value(out, json_object_get(p, "pct_bf16_ceiling"));
        value(out, json_object_get(r, "speedup"));
        value(out, json_object_get(r, "speedup_err"));
        value(out, json_object_get(p, "discarded_samples"));
        value(out, json_object_get(p, "sm_clock_median_mhz"));
        value(out, json_object_get(p, "power_median_w"));
        joined(out, json_object_get(r, "flags"));
        value(out, json_object_get(r, "rank"));
        const json_t *pv = json_object_get(r, "provenance");
        for (int k = 0; provenance && prov_keys[k]; k++)
            value(out, json_object_get(pv, prov_keys[k]));
        if (json_is_object(prob)) {
            value(out, json_object_get(r, "verdict"));
            value(out, json_object_get(prob, "name"));
            value(out, json_object_get(prob, "hash"));
            value(out, json_object_get(pol, "pool_size"));
            value(out, json_object_get(pol, "renew_s"));
            value(out, json_object_get(pol, "generation"));
        }
        kf_buf_adds(out, "\r\n");
    }
    return KF_OK;
}
