/* yamldoc — what kfleet's YAML file parsers (sweep.c, fleet.c) share: loading
 * one document into libyaml's node tree, walking it, and messages that point
 * at a node as "FILE:LINE:COL: what; what to do".
 *
 * A parser embeds a kf_yaml in its own context, fills the fields above `doc`,
 * calls kf_yaml_load, walks the tree from the root it gets, and ends with
 * kf_yaml_unload. Every kf_yaml_* that reports a problem fills y->err and
 * returns the code (KF_EINVAL, KF_ENOMEM), so a parser writes
 * `return kf_yaml_fail(&c->y, n, "...")`.
 *
 * Node accessors take the node's type on trust: a parser checks n->type
 * first (seq_* only on sequences, map_* on mappings, kf_yaml_text on
 * scalars). */
#ifndef KF_YAMLDOC_H
#define KF_YAMLDOC_H

#include "common/buf.h"
#include "common/err.h"

#include <stddef.h>
#include <yaml.h>

typedef struct kf_yaml {
    const char *file; /* names the source in messages */
    const char *text; /* the file's bytes, for positions libyaml gives as offsets */
    size_t len;
    kf_err *err;
    /* What to do, in the parser's words; each ends a message after "; ". */
    const char *nul_fix;         /* "the file contains a NUL byte; " */
    const char *empty_fix;       /* "the file is empty; " */
    const char *second_fix;      /* "a second YAML document starts here; " */
    const char *empty_value_fix; /* "NAME is empty; " (kf_yaml_nonempty_scalar) */
    yaml_document_t *doc;        /* set by kf_yaml_load, cleared by kf_yaml_unload */
} kf_yaml;

/* ---- messages ---- */

/* Fills y->err with "FILE:LINE:COL: ..." at node n's start; returns KF_EINVAL. */
int kf_yaml_fail(kf_yaml *y, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same at a 0-based line and column. */
int kf_yaml_fail_at(kf_yaml *y, size_t line, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fills y->err with "out of memory"; returns KF_ENOMEM. */
int kf_yaml_oom(kf_yaml *y);
/* The file at path (a kernel's source the node names), read whole into
 * out, at most max bytes; else "FILE:LINE:COL: WHAT PATH: why" at n, out
 * released, and KF_EINVAL. */
int kf_yaml_read_named(kf_yaml *y, const yaml_node_t *n, const char *what, const char *path,
                       size_t max, kf_buf *out);

/* ---- loading ---- */

/* Parses y->text (len bytes) as exactly one YAML document into *doc, which
 * the caller provides and which stays in use until kf_yaml_unload; sets
 * y->doc and *root (never NULL on success). A NUL byte, a syntax or encoding
 * error, an empty file or a second document is a located KF_EINVAL, and
 * nothing is left to free. */
int kf_yaml_load(kf_yaml *y, yaml_document_t *doc, yaml_node_t **root);
/* Frees the document kf_yaml_load made; fine to call when none is loaded. */
void kf_yaml_unload(kf_yaml *y);

/* Reads the YAML file at path, a regular file of at most max bytes, into
 * *b (the caller's, released on failure too), and its directory (what
 * relative paths inside it resolve against: "." or "/" or path up to its
 * last '/') into dir. the and a name the file in errors ("the inventory",
 * "an inventory"): KF_EINVAL "PATH: THE is ...; A is a regular file of at
 * most N MiB", or KF_EIO "PATH: cannot read THE: why; check the path". */
int kf_yaml_read_file(const char *path, size_t max, const char *the, const char *a, kf_buf *b,
                      char *dir, size_t dirlen, kf_err *err);

/* ---- the node tree ---- */

size_t kf_yaml_seq_len(const yaml_node_t *n);
yaml_node_t *kf_yaml_seq_item(kf_yaml *y, const yaml_node_t *n, size_t i);
size_t kf_yaml_map_len(const yaml_node_t *n);
yaml_node_t *kf_yaml_map_key(kf_yaml *y, const yaml_node_t *n, size_t i);
yaml_node_t *kf_yaml_map_value(kf_yaml *y, const yaml_node_t *n, size_t i);
/* A scalar's value (NUL-terminated by libyaml). */
const char *kf_yaml_text(const yaml_node_t *n);
/* The node's shape for messages: "a single value", "empty", "a list", ... */
const char *kf_yaml_kind(const yaml_node_t *n);

/* ---- values ---- */

/* The text of scalar n in *out (pointing into the document); `what` names
 * it in the message when n is not a scalar or holds a NUL character. */
int kf_yaml_scalar(kf_yaml *y, const yaml_node_t *n, const char *what, const char **out);
/* The same, and an empty value is refused with y->empty_value_fix. */
int kf_yaml_nonempty_scalar(kf_yaml *y, const yaml_node_t *n, const char *what, const char **out);

/* The nearest of `known` (NULL-terminated) to s within two edits and closer
 * than s is long, or NULL: the "did you mean" of a message. */
const char *kf_yaml_nearest(const char *s, const char *const *known);

/* Checks that every key of mapping `map` is a scalar from `known`
 * (NULL-terminated) and appears once; `where` completes "unknown key 'x' ..."
 * ("in measure"). The message names the known keys and the nearest one. */
int kf_yaml_check_keys(kf_yaml *y, const yaml_node_t *map, const char *where,
                       const char *const *known);

/* The value under `key`, or NULL. Only after kf_yaml_check_keys, which makes
 * sure the keys are scalars. */
yaml_node_t *kf_yaml_map_get(kf_yaml *y, const yaml_node_t *map, const char *key);

#endif
