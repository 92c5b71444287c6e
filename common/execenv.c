/* execenv — a child's environment made before its fork (execenv.h). */
#include "common/execenv.h"

#include "common/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct kf_execenv {
    char **v; /* "NAME=value", NULL-terminated */
    size_t n, cap;
};

static void push(kf_execenv *e, char *s)
{
    if (e->n + 2 > e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        e->v = kf_xrealloc(e->v, e->cap * sizeof *e->v);
    }
    e->v[e->n++] = s;
    e->v[e->n] = NULL;
}

kf_execenv *kf_execenv_new(void)
{
    extern char **environ;
    kf_execenv *e = kf_xcalloc(1, sizeof *e);
    e->cap = 64;
    e->v = kf_xcalloc(e->cap, sizeof *e->v);
    for (char **p = environ; p && *p; p++)
        push(e, kf_xstrdup(*p));
    return e;
}

void kf_execenv_destroy(kf_execenv **self)
{
    kf_execenv *e = *self;
    if (!e)
        return;
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
    free(e);
    *self = NULL;
}

/* The index of `name`'s entry, or e->n. */
static size_t find(const kf_execenv *e, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < e->n; i++)
        if (strncmp(e->v[i], name, len) == 0 && e->v[i][len] == '=')
            return i;
    return e->n;
}

const char *kf_execenv_get(const kf_execenv *e, const char *name)
{
    size_t i = find(e, name);
    return i < e->n ? e->v[i] + strlen(name) + 1 : NULL;
}

void kf_execenv_set(kf_execenv *e, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    char *s = kf_xmalloc(nl + vl + 2);
    memcpy(s, name, nl);
    s[nl] = '=';
    memcpy(s + nl + 1, value, vl + 1);
    size_t i = find(e, name);
    if (i < e->n) {
        free(e->v[i]);
        e->v[i] = s;
    } else {
        push(e, s);
    }
}

void kf_execenv_default(kf_execenv *e, const char *name, const char *value)
{
    if (!kf_execenv_get(e, name))
        kf_execenv_set(e, name, value);
}

static void drop(kf_execenv *e, size_t i)
{
    free(e->v[i]);
    memmove(e->v + i, e->v + i + 1, (e->n - i) * sizeof *e->v); /* the terminator too */
    e->n--;
}

void kf_execenv_unset(kf_execenv *e, const char *name)
{
    size_t i = find(e, name);
    if (i < e->n)
        drop(e, i);
}

void kf_execenv_unset_prefix(kf_execenv *e, const char *prefix)
{
    size_t len = strlen(prefix);
    for (size_t i = 0; i < e->n;) {
        if (strncmp(e->v[i], prefix, len) == 0)
            drop(e, i);
        else
            i++;
    }
}

char **kf_execenv_array(kf_execenv *e)
{
    return e->v;
}

const char *kf_exec_why(int errnum)
{
    switch (errnum) {
    case ENOENT:
        return "No such file or directory";
    case EACCES:
        return "Permission denied";
    case ENOEXEC:
        return "Exec format error";
    case ENOTDIR:
        return "Not a directory";
    case ELOOP:
        return "Too many levels of symbolic links";
    case ENAMETOOLONG:
        return "File name too long";
    case ETXTBSY:
        return "Text file busy";
    case ENOMEM:
        return "Cannot allocate memory";
    case E2BIG:
        return "Argument list too long";
    case EPERM:
        return "Operation not permitted";
    case EBUSY:
        return "Device or resource busy";
    case EINVAL:
        return "Invalid argument";
    case ENOSPC:
        return "No space left on device";
    case EMFILE:
        return "Too many open files";
    case ENFILE:
        return "Too many open files in system";
    case EBADF:
        return "Bad file descriptor";
    case ENODEV:
        return "No such device";
    default:
        return "an error this table does not name";
    }
}

void kf_exec_say(int fd, const char *what, const char *path, const char *why)
{
    const char *parts[] = {what, path, ": ", why, "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        ssize_t w = write(fd, parts[i], strlen(parts[i]));
        (void)w;
    }
}
