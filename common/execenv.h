/* execenv — a child's environment made whole before the fork, for its
 * execve. A process with threads (libzmq's I/O thread, the embedded
 * coordinator's) may fork while another thread holds the allocator's lock;
 * its child then hangs in the first setenv or malloc (the test build's
 * ASan allocator keeps no lock across a fork). So the child calls only
 * system calls between fork and exec, and what its environment changes is
 * made here, in the parent. */
#ifndef KF_EXECENV_H
#define KF_EXECENV_H

typedef struct kf_execenv kf_execenv;

/* A copy of this process's environment. */
kf_execenv *kf_execenv_new(void);
void kf_execenv_destroy(kf_execenv **self);

/* The value of `name`, NULL when unset; valid until `name` is next set or
 * unset (read it before setting a value made from it). */
const char *kf_execenv_get(const kf_execenv *e, const char *name);
/* Sets `name` (replaced where set). */
void kf_execenv_set(kf_execenv *e, const char *name, const char *value);
/* Sets `name` unless it is set. */
void kf_execenv_default(kf_execenv *e, const char *name, const char *value);
void kf_execenv_unset(kf_execenv *e, const char *name);
/* Unsets every variable whose name starts with `prefix`. */
void kf_execenv_unset_prefix(kf_execenv *e, const char *prefix);

/* The NULL-terminated array for execve, valid until the next change. */
char **kf_execenv_array(kf_execenv *e);

/* An errno's text from a table, for a child between fork and exec: an
 * exec that failed, a descriptor or mount that could not be made
 * (strerror may translate, and take a lock). */
const char *kf_exec_why(int errnum);
/* Writes "<what><path>: <why>\n" on fd with write(2) alone: what a child
 * whose exec failed says before its _exit. */
void kf_exec_say(int fd, const char *what, const char *path, const char *why);

#endif
