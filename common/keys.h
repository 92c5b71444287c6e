/* keys — the CurveZMQ keys of the agent link, and the list of agent keys
 * the coordinator accepts.
 *
 * A key file holds two lines, the Z85 public key and the Z85 secret key
 * (40 characters each), mode 0600; a file readable by others is refused.
 * The coordinator's is STATE/keys/coordinator.key, with the public half
 * alone in coordinator.pub for agents and launchers. Each agent keeps its
 * own in its work dir (agent.key).
 *
 * The allow list, STATE/keys/agents.allow (0600), is one accepted agent a
 * line: "PUBLIC NAME". The coordinator reads it again whenever it changed
 * (`kfleet agent-key add|revoke` edit it), so a revoked key is refused at
 * the next message. Writers replace the file atomically. */
#ifndef KF_KEYS_H
#define KF_KEYS_H

#include "common/err.h"

#include <stddef.h>
#include <time.h>

#define KF_KEY_Z85 40 /* characters of a Z85 Curve25519 key */

typedef struct kf_keypair {
    char pub[KF_KEY_Z85 + 1];
    char sec[KF_KEY_Z85 + 1];
} kf_keypair;

/* Whether s is a well-formed Z85 key of 40 characters. */
int kf_key_valid(const char *s);

/* Reads the key pair at path; when the file does not exist and create is
 * set, makes a new pair and writes it (0600). KF_ENOTFOUND when it does not
 * exist and !create; KF_EINVAL (with what to do) for a malformed file or
 * one others may read. */
int kf_keys_load(const char *path, int create, kf_keypair *kp, kf_err *err);

/* The coordinator's pair: loads key_path (making it on first use) and
 * (re)writes pub_path with the public half when it is missing or stale, so
 * agents and launchers sharing the machine can read it. */
int kf_keys_coordinator(const char *key_path, const char *pub_path, kf_keypair *kp, kf_err *err);

/* A server key given on a command line: the Z85 key itself, or the path of
 * a key or .pub file holding it. */
int kf_keys_resolve_public(const char *arg, char pub[KF_KEY_Z85 + 1], kf_err *err);

/* The public key in the first line of a key or .pub file. */
int kf_keys_read_public(const char *path, char pub[KF_KEY_Z85 + 1], kf_err *err);

typedef struct kf_allow_entry {
    char pub[KF_KEY_Z85 + 1];
    char name[128];
} kf_allow_entry;

typedef struct kf_allow {
    kf_allow_entry *e;
    size_t n;
    /* BLAKE2b of the file's bytes when read (all zero: no file). Not its
     * mtime: two rewrites within one clock tick of the file system have the
     * same mtime, and a coordinator that trusted it kept refusing a key it
     * had been given (the "silent hang" of issue 11). */
    unsigned char digest[16];
} kf_allow;

/* Reads the allow list (a missing file is an empty list). KF_EINVAL with
 * path:line for a malformed line. Frees what *a held before. */
int kf_allow_load(const char *path, kf_allow *a, kf_err *err);
/* Reads it again and sets *changed when its bytes differ from what a
 * holds (a small file: the coordinator calls this every 200 ms and on every
 * refused handshake). */
int kf_allow_refresh(const char *path, kf_allow *a, int *changed, kf_err *err);
void kf_allow_free(kf_allow *a);
/* The name a public key is accepted under, or NULL. */
const char *kf_allow_find(const kf_allow *a, const char *pub);
/* Adds (or renames) an entry, atomically rewriting the file. KF_EINVAL for
 * a malformed key or a name with blanks; KF_EEXIST when the name is taken
 * by another key. */
int kf_allow_add(const char *path, const char *pub, const char *name, kf_err *err);
/* kf_allow_add, but a name already taken by another key is given to this
 * one: for a machine's own agents (and launched ones), whose work dir may
 * have been wiped and its key made anew. */
int kf_allow_enroll(const char *path, const char *pub, const char *name, kf_err *err);
/* Removes the entries whose name or key is `which`; *removed counts them. */
int kf_allow_remove(const char *path, const char *which, size_t *removed, kf_err *err);

#endif
