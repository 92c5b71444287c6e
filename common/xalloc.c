/* xalloc — allocate or die; see xalloc.h. */
#include "common/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, size_t n)
{
    fprintf(stderr, "kfleet: out of memory (%s of %zu bytes); stopping\n", what, n);
    abort();
}

void *kf_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        die("malloc", n);
    return p;
}

void *kf_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        die("calloc", count * size);
    return p;
}

void *kf_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        die("realloc", n);
    return q;
}

char *kf_xstrdup(const char *s)
{
    char *p = strdup(s ? s : "");
    if (!p)
        die("strdup", s ? strlen(s) + 1 : 1);
    return p;
}

void *kf_pb_copy(const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = kf_xmalloc(n);
    protobuf_c_message_pack(m, b);
    void *r = protobuf_c_message_unpack(m->descriptor, NULL, n, b);
    free(b);
    if (!r)
        die("message copy", n);
    return r;
}
