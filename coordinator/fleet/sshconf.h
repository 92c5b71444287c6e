/* sshconf — reads OpenSSH's client config (~/.ssh/config) for one Host
 * alias, for the inventory's ssh_alias (fleet.c).
 *
 * It knows what OpenSSH does for the options kfleet uses: Host lines with *
 * and ? patterns and !negation, matched case-insensitively; the first value
 * of each keyword wins; Include (globs, relative to the top config's
 * directory, ~ for the home) is followed up to 16 deep; Match blocks are not
 * evaluated (their options are skipped; only `Match all` applies). Of the
 * options only HostName, Port, User, IdentityFile, ProxyJump and ProxyCommand
 * are kept; the caller decides what to refuse. */
#ifndef KF_SSHCONF_H
#define KF_SSHCONF_H

#include "common/err.h"

/* The options kept, for kf_sshconf_value / _where / _expand. */
enum {
    KF_SSHCONF_HOSTNAME,
    KF_SSHCONF_PORT,
    KF_SSHCONF_USER,
    KF_SSHCONF_IDENTITYFILE,
    KF_SSHCONF_PROXYJUMP,
    KF_SSHCONF_PROXYCOMMAND,
    KF_SSHCONF_NKEYS
};

typedef struct kf_sshconf kf_sshconf;

/* Reads the config at path (and what it includes) for `alias`; home (NULL
 * when unknown) expands "~" and %d and is copied. On success *out is the
 * caller's, freed with kf_sshconf_destroy. KF_EINVAL when a file cannot be
 * read or a line is broken, with "FILE:LINE: what; what to do" (or "cannot
 * read the ssh config PATH: ...") in err, kept under 700 bytes so callers can
 * wrap it; KF_ENOMEM. A config where no Host matches is not an error:
 * see kf_sshconf_matched. */
int kf_sshconf_read(const char *path, const char *alias, const char *home, kf_sshconf **out,
                    kf_err *err);

/* Whether a Host line other than a bare "Host *" matched the alias: a config
 * with only global options or "Host *" does not describe it. */
int kf_sshconf_matched(const kf_sshconf *self);

/* The first value of option `key` (KF_SSHCONF_*) as written, or NULL. */
const char *kf_sshconf_value(const kf_sshconf *self, int key);
/* "FILE:LINE" of that value, for messages; "" when it is not set. */
const char *kf_sshconf_where(const kf_sshconf *self, int key);

/* The value of `key` (which must be set) with a leading "~" and the tokens
 * %%, %d (home), %h (host) and %r (user) expanded, in *out (the caller
 * frees it). host or user NULL: that token is refused, as OpenSSH refuses
 * %h in HostName. KF_EINVAL for any other token, with "FILE:LINE: ..." in
 * err (under 700 bytes). */
int kf_sshconf_expand(const kf_sshconf *self, int key, const char *host, const char *user,
                      char **out, kf_err *err);

/* Frees and sets *self to NULL; NULL and *self == NULL are fine. */
void kf_sshconf_destroy(kf_sshconf **self);

#endif
