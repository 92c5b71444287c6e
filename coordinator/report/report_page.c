/* report_page — what the HTML page (report_html.c) and its charts
 * (report_svg.c) share; see report_page.h. */
#include "report/report_page.h"
#include "common/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- reading the JSON ---- */

const char *kf_rep_str_at(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* 1 and *v when o[key] is a finite number; 0 for null or absent. */
int kf_rep_num_at(const json_t *o, const char *key, double *v)
{
    const json_t *j = json_object_get(o, key);
    if (!json_is_number(j) || !isfinite(json_number_value(j)))
        return 0;
    *v = json_number_value(j);
    return 1;
}

double kf_rep_num_or(const json_t *o, const char *key, double dflt)
{
    double v;
    return kf_rep_num_at(o, key, &v) ? v : dflt;
}

const json_t *kf_rep_obj_at(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_object(v) ? v : NULL;
}

const char *kf_rep_row_kernel(const json_t *row)
{
    const char *k = kf_rep_str_at(row, "kernel");
    return k ? k : "?";
}

const char *kf_rep_row_node(const json_t *row)
{
    const char *n = kf_rep_str_at(row, "node");
    return n ? n : "";
}

const json_t *kf_rep_result_profile(const json_t *row)
{
    const json_t *p = kf_rep_obj_at(row, "profile"), *v = kf_rep_obj_at(row, "validation");
    const char *ps = p ? kf_rep_str_at(p, "state") : NULL;
    if (!ps || strcmp(ps, "succeeded") != 0)
        return NULL;
    if (v) {
        const char *vs = kf_rep_str_at(v, "state");
        if (!vs || strcmp(vs, "succeeded") != 0)
            return NULL;
    }
    return p;
}

/* 1 when the kernel's rows do not all share key's value. */
static int param_varies(const json_t *rows, const char *kernel, const char *key)
{
    const json_t *first = NULL, *row;
    size_t i;
    json_array_foreach(rows, i, row)
    {
        if (strcmp(kf_rep_row_kernel(row), kernel) != 0)
            continue;
        const json_t *v = json_object_get(json_object_get(row, "params"), key);
        v = v ? v : json_null();
        if (!first)
            first = v;
        else if (!json_equal(first, v))
            return 1;
    }
    return 0;
}

/* "n=1048576 block=32". which: 0 every parameter, 1 only those that vary
 * across the kernel's rows (what tells its bars apart), 2 only the fixed. */
void kf_rep_params_str(const json_t *rows, const json_t *row, int which, char *out, size_t len)
{
    size_t off = 0;
    const char *key;
    json_t *v;
    out[0] = '\0';
    json_object_foreach((json_t *)json_object_get(row, "params"), key, v)
    {
        if (which && param_varies(rows, kf_rep_row_kernel(row), key) != (which == 1))
            continue;
        if (off >= len)
            break;
        const char *sep = off ? " " : "";
        if (json_is_integer(v))
            off += (size_t)snprintf(out + off, len - off, "%s%s=%lld", sep, key,
                                    (long long)json_integer_value(v));
        else if (json_is_string(v))
            off +=
                (size_t)snprintf(out + off, len - off, "%s%s=%s", sep, key, json_string_value(v));
        else if (json_is_number(v))
            off +=
                (size_t)snprintf(out + off, len - off, "%s%s=%g", sep, key, json_number_value(v));
    }
}

/* ---- writing ---- */

/* Three significant digits without an exponent: 1.23, 12.3, 123, 12345. */
void kf_rep_fmt_short(double v, char *out, size_t len)
{
    double a = fabs(v);
    snprintf(out, len, "%.*f", a >= 100 ? 0 : a >= 10 ? 1 : 2, v);
}

/* The multiplier and name of the unit a time reads best in. */
double kf_rep_time_unit(double s, const char **name)
{
    *name = s < 1e-6 ? "ns" : s < 1e-3 ? "\xC2\xB5s" : s < 1 ? "ms" : "s";
    return s < 1e-6 ? 1e9 : s < 1e-3 ? 1e6 : s < 1 ? 1e3 : 1;
}

void kf_rep_fmt_time(double s, char *out, size_t len)
{
    const char *u;
    if (!isfinite(s) || s < 0) {
        snprintf(out, len, "-");
        return;
    }
    double k = kf_rep_time_unit(s, &u);
    snprintf(out, len, "%.3f %s", s * k, u);
}

/* Cuts s in place to at most max columns, with an ellipsis when cut. */
void kf_rep_cut(char *s, size_t len, size_t max)
{
    size_t n = 0, i = 0;
    for (; s[i]; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && ++n > max)
            break;
    if (s[i] && i + 4 <= len)
        strcpy(s + i, "\xE2\x80\xA6");
}

const char *kf_rep_skip_why(const char *error, char *out, size_t len)
{
    if (!error || strncmp(error, "skipped: ", 9) != 0) {
        snprintf(out, len, "skipped: validation did not pass");
        return out;
    }
    size_t n = strcspn(error, "(\n");
    while (n > 9 && error[n - 1] == ' ')
        n--;
    snprintf(out, len, "%.*s", (int)n, error);
    return out;
}
