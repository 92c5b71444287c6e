/* yamldoc — the YAML document helpers of kfleet's file parsers; see
 * yamldoc.h.
 *
 * How: libyaml's document API loads the whole file into a node tree. The
 * files are small, and every node keeps its start mark, which is what each
 * message points at. Parsers walk the tree top-down with one expected shape
 * per level and never follow anything deeper, so aliases cannot make a walk
 * loop or grow exponentially, which keeps the parsers safe to fuzz.
 *
 * Mappings are checked against their known keys before they are read, so a
 * typo is an error naming the keys we know (and the nearest one) instead of
 * a setting silently left at its default. */
#include "core/yamldoc.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- messages ---- */

static int vfail(kf_yaml *y, size_t line, size_t col, const char *fmt, va_list ap)
{
    char what[900];
    vsnprintf(what, sizeof what, fmt, ap);
    return kf_err_set(y->err, KF_EINVAL, "%s:%zu:%zu: %s", y->file, line + 1, col + 1, what);
}

int kf_yaml_fail(kf_yaml *y, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(y, n->start_mark.line, n->start_mark.column, fmt, ap);
    va_end(ap);
    return rc;
}

int kf_yaml_fail_at(kf_yaml *y, size_t line, size_t col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail(y, line, col, fmt, ap);
    va_end(ap);
    return rc;
}

int kf_yaml_oom(kf_yaml *y)
{
    return kf_err_set(y->err, KF_ENOMEM, "out of memory");
}

int kf_yaml_read_named(kf_yaml *y, const yaml_node_t *n, const char *what, const char *path,
                       size_t max, kf_buf *out)
{
    char why[160];
    if (kf_buf_read_file_max(out, path, max, why, sizeof why) == KF_OK)
        return KF_OK;
    kf_buf_release(out);
    return kf_yaml_fail(y, n, "%s %s: %s", what, path, why);
}

/* ---- the node tree ---- */

static yaml_node_t *node(kf_yaml *y, int index)
{
    return yaml_document_get_node(y->doc, index);
}

size_t kf_yaml_seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

yaml_node_t *kf_yaml_seq_item(kf_yaml *y, const yaml_node_t *n, size_t i)
{
    return node(y, n->data.sequence.items.start[i]);
}

size_t kf_yaml_map_len(const yaml_node_t *n)
{
    return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

yaml_node_t *kf_yaml_map_key(kf_yaml *y, const yaml_node_t *n, size_t i)
{
    return node(y, n->data.mapping.pairs.start[i].key);
}

yaml_node_t *kf_yaml_map_value(kf_yaml *y, const yaml_node_t *n, size_t i)
{
    return node(y, n->data.mapping.pairs.start[i].value);
}

const char *kf_yaml_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

const char *kf_yaml_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return n->data.scalar.length ? "a single value" : "empty";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

/* ---- values ---- */

int kf_yaml_scalar(kf_yaml *y, const yaml_node_t *n, const char *what, const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return kf_yaml_fail(y, n, "%s must be a single value, not %s; write it as one value", what,
                            kf_yaml_kind(n));
    /* A "\0" escape would cut the string short everywhere it is used. */
    if (strlen(kf_yaml_text(n)) != n->data.scalar.length)
        return kf_yaml_fail(y, n, "%s contains a NUL character; remove it", what);
    *out = kf_yaml_text(n);
    return KF_OK;
}

int kf_yaml_nonempty_scalar(kf_yaml *y, const yaml_node_t *n, const char *what, const char **out)
{
    int rc = kf_yaml_scalar(y, n, what, out);
    if (rc == KF_OK && **out == '\0')
        return kf_yaml_fail(y, n, "%s is empty; %s", what, y->empty_value_fix);
    return rc;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), row[33];
    if (la > 32 || lb > 32)
        return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *kf_yaml_nearest(const char *s, const char *const *known)
{
    size_t bestd = 3;
    const char *best = NULL;
    for (size_t j = 0; known[j]; j++) {
        size_t d = edit_distance(s, known[j]);
        if (d < bestd && d < strlen(s))
            bestd = d, best = known[j];
    }
    return best;
}

static void join(const char *const *known, char *out, size_t n)
{
    size_t off = 0;
    out[0] = '\0';
    for (size_t j = 0; known[j] && off < n; j++)
        off += (size_t)snprintf(out + off, n - off, "%s%s", j ? ", " : "", known[j]);
}

int kf_yaml_check_keys(kf_yaml *y, const yaml_node_t *map, const char *where,
                       const char *const *known)
{
    size_t n = kf_yaml_map_len(map);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = kf_yaml_map_key(y, map, i);
        const char *s = NULL;
        int rc = kf_yaml_scalar(y, k, "a key", &s);
        if (rc)
            return rc;
        size_t j = 0;
        while (known[j] && strcmp(known[j], s) != 0)
            j++;
        if (!known[j]) {
            char list[512];
            join(known, list, sizeof list);
            const char *best = kf_yaml_nearest(s, known);
            if (best)
                return kf_yaml_fail(y, k,
                                    "unknown key '%.80s' %s; did you mean '%s'? (known keys: %s)",
                                    s, where, best, list);
            return kf_yaml_fail(y, k, "unknown key '%.80s' %s; use one of the known keys: %s", s,
                                where, list);
        }
        for (j = 0; j < i; j++) {
            yaml_node_t *prev = kf_yaml_map_key(y, map, j);
            if (strcmp(kf_yaml_text(prev), s) == 0)
                return kf_yaml_fail(y, k, "key '%s' appears twice %s (first at %zu:%zu); keep one",
                                    s, where, prev->start_mark.line + 1,
                                    prev->start_mark.column + 1);
        }
    }
    return KF_OK;
}

yaml_node_t *kf_yaml_map_get(kf_yaml *y, const yaml_node_t *map, const char *key)
{
    for (size_t i = 0; i < kf_yaml_map_len(map); i++)
        if (strcmp(kf_yaml_text(kf_yaml_map_key(y, map, i)), key) == 0)
            return kf_yaml_map_value(y, map, i);
    return NULL;
}

/* ---- loading ---- */

/* libyaml's reader reports a byte offset, not a mark. */
static void offset_mark(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
    *line = *col = 0;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n')
            *line += 1, *col = 0;
        else if (((unsigned char)text[i] & 0xC0) != 0x80)
            *col += 1;
    }
}

static int syntax_error(kf_yaml *y, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return kf_yaml_oom(y);
    size_t line = p->problem_mark.line, col = p->problem_mark.column;
    if (p->error == YAML_READER_ERROR) {
        offset_mark(y->text, y->len, p->problem_offset, &line, &col);
        return kf_yaml_fail_at(y, line, col,
                               "the file is not valid UTF-8 text (%s); save it as UTF-8",
                               p->problem ? p->problem : "unreadable");
    }
    /* The composer's problems are anchors and aliases, not layout. */
    const char *hint = p->error == YAML_COMPOSER_ERROR
                           ? "define each anchor (&name) before an alias (*name) uses it"
                           : "check the indentation, colons and quotes here";
    if (p->context)
        return kf_yaml_fail_at(y, line, col, "YAML syntax error: %s %s that starts at %zu:%zu; %s",
                               p->problem ? p->problem : "", p->context, p->context_mark.line + 1,
                               p->context_mark.column + 1, hint);
    return kf_yaml_fail_at(y, line, col, "YAML syntax error: %s; %s",
                           p->problem ? p->problem : "unknown problem", hint);
}

int kf_yaml_load(kf_yaml *y, yaml_document_t *doc, yaml_node_t **root)
{
    yaml_parser_t p;
    yaml_document_t extra;
    int rc;
    const char *nul = memchr(y->text, '\0', y->len);
    if (nul) {
        size_t line, col;
        offset_mark(y->text, y->len, (size_t)(nul - y->text), &line, &col);
        return kf_yaml_fail_at(y, line, col, "the file contains a NUL byte; %s", y->nul_fix);
    }
    if (!yaml_parser_initialize(&p))
        return kf_yaml_oom(y);
    yaml_parser_set_input_string(&p, (const unsigned char *)y->text, y->len);
    if (!yaml_parser_load(&p, doc)) {
        rc = syntax_error(y, &p);
        goto out;
    }
    y->doc = doc;
    *root = yaml_document_get_root_node(doc);
    if (!*root) {
        rc = kf_yaml_fail_at(y, 0, 0, "the file is empty; %s", y->empty_fix);
        goto out;
    }
    /* A second document would otherwise be ignored without a word. */
    if (!yaml_parser_load(&p, &extra)) {
        rc = syntax_error(y, &p);
        goto out;
    }
    yaml_node_t *second = yaml_document_get_root_node(&extra);
    rc = second ? kf_yaml_fail(y, second, "a second YAML document starts here; %s", y->second_fix)
                : KF_OK;
    yaml_document_delete(&extra);
out:
    if (rc)
        kf_yaml_unload(y);
    yaml_parser_delete(&p);
    return rc;
}

void kf_yaml_unload(kf_yaml *y)
{
    if (y->doc) {
        yaml_document_delete(y->doc);
        y->doc = NULL;
    }
}

int kf_yaml_read_file(const char *path, size_t max, const char *the, const char *a, kf_buf *b,
                      char *dir, size_t dirlen, kf_err *err)
{
    char why[160];
    int rc = kf_buf_read_file_max(b, path, max, why, sizeof why);
    if (rc != KF_OK) {
        kf_buf_release(b);
        if (rc == KF_EINVAL)
            return kf_err_set(err, KF_EINVAL, "%s: %s %s; %s is a regular file of at most %zu MiB",
                              path, the, why, a, max >> 20);
        return kf_err_set(err, KF_EIO, "%s: cannot read %s: %s; check the path", path, the, why);
    }
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, dirlen, ".");
    else if (slash == path)
        snprintf(dir, dirlen, "/");
    else
        snprintf(dir, dirlen, "%.*s", (int)(slash - path), path);
    return KF_OK;
}
