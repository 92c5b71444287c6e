/* util — clocks, directories, file locks and hashing: small OS helpers that
 * both daemons and the CLI share. */
#ifndef KF_UTIL_H
#define KF_UTIL_H

#include "common/err.h"

#include <stddef.h>
#include <stdint.h>

/* Wall-clock nanoseconds (CLOCK_REALTIME): for records people read. */
uint64_t kf_now_ns(void);
/* Monotonic nanoseconds: for timeouts and durations. */
uint64_t kf_mono_ns(void);
/* 64 bits from getrandom(), which a kernel under test cannot predict (its
 * input seeds, a runner's kernel names); the clock and pid only where
 * getrandom() fails. */
uint64_t kf_unpredictable_u64(void);
/* Sleeps `seconds` (nothing when not > 0); returns the seconds it took by
 * the monotonic clock, which a short sleep overshoots by the timer's slack. */
double kf_sleep_s(double seconds);

/* mkdir -p with `mode` for every directory it creates. */
int kf_mkdirs(const char *path, unsigned mode, kf_err *err);

/* Makes directory path (0700) unless it exists, then checks it as
 * kf_check_private_dir does. */
int kf_private_dir(const char *path, kf_err *err);

/* Removes path and everything beneath it, following no link; a path that
 * does not exist is no error. Returns 0 or -1 (errno set). */
int kf_remove_tree(const char *path);
/* KF_OK when path is a directory (not a symlink) owned by this user that no
 * other user can write; KF_ENOTFOUND when it does not exist; else
 * KF_EINVAL with a message naming the owner, the mode and what to do. A
 * directory of keys, sockets and the store is trusted by nothing else than
 * that (a second local user could have made /tmp/kfleet-UID for us). */
int kf_check_private_dir(const char *path, kf_err *err);

/* Takes an exclusive, non-blocking flock on path (created 0600, never
 * through a symlink) and returns
 * the fd, which holds the lock until closed; KF_EBUSY when another process
 * holds it. */
int kf_lock_file(const char *path, kf_err *err);

/* BLAKE2b-256 of the concatenation of `n` parts, as 64 hex chars + NUL. */
typedef struct kf_hash_part {
    const void *data;
    size_t len;
} kf_hash_part;
void kf_hash_hex(const kf_hash_part *parts, size_t n, char out[65]);

/* Free bytes available to an unprivileged user on the filesystem of path. */
int kf_free_bytes(const char *path, uint64_t *out);

/* Finds an executable: `name` itself when it has a '/', else the first
 * PATH entry that holds it. Fills out and returns 1, or returns 0. */
int kf_find_exe(const char *name, char *out, size_t len);

/* Directory of the running executable (from /proc/self/exe). */
int kf_exe_dir(char *out, size_t len);

/* Writes all n bytes to fd, again after EINTR and short writes: KF_OK, or
 * KF_EIO with errno saying why. */
int kf_write_all(int fd, const void *p, size_t n);

/* The most descriptors kf_send_fds passes in one message. */
#define KF_SEND_FDS_MAX 8

/* Sends the n bytes at p as one sendmsg on Unix socket sock, with the nfds
 * descriptors of fds passed beside them (SCM_RIGHTS; at most
 * KF_SEND_FDS_MAX), again after EINTR, never raising SIGPIPE: KF_OK when
 * all n went, else KF_EIO with errno saying why (a stream socket's short
 * send is an error: the descriptors went with what was sent). */
int kf_send_fds(int sock, const void *p, size_t n, const int *fds, size_t nfds);

/* A new anonymous memory file (memfd_create, close-on-exec) named `name`
 * in /proc: a buffer two processes map, or a file nobody can reach by
 * path. The descriptor, or -1 with errno. */
int kf_memfd(const char *name);

/* Writes data to path atomically (a temporary made O_EXCL under a random
 * name, then rename), mode applied; a symlink at path is replaced, never
 * followed. */
int kf_write_file(const char *path, const void *data, size_t len, unsigned mode, kf_err *err);

/* Whether s is 1..max characters, each a letter, a digit or one of extra,
 * and does not start with '-' (nothing that reads as an option on a command
 * line): the check for names that end up on a remote shell's command line. */
int kf_word_ok(const char *s, const char *extra, size_t max);

/* Compares dotted version numbers ("2.35" < "2.39" < "2.100", "12.4" < "13.0"):
 * <0, 0, >0. */
int kf_version_cmp(const char *a, const char *b);

/* Parses a duration "250ms", "2s", "1.5m", "1h" or a bare number of seconds. */
int kf_parse_duration(const char *s, double *seconds);

/* Parses a size in bytes: digits with an optional K, M, G or T suffix
 * (powers of 1024; "16G", "16GiB", "512MB", "4096"). 0, or KF_EINVAL. */
int kf_parse_size(const char *s, uint64_t *bytes);

#endif
