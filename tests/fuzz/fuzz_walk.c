/* fuzz_walk — see fuzz_walk.h. */
#include "fuzz_walk.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t mix(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static size_t scalar_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    default:
        return 4;
    }
}

static uint64_t walk_value(const ProtobufCFieldDescriptor *f, const void *p, uint64_t h)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(const char *const *)p;
        if (s)
            h = mix(h, s, strlen(s) + 1);
        return h;
    }
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *b = p;
        if (b->len && !b->data)
            abort();
        return b->len ? mix(h, b->data, b->len) : h;
    }
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *m = *(const ProtobufCMessage *const *)p;
        if (m && m->descriptor != f->descriptor)
            abort();
        return h ^ kf_fuzz_walk(m);
    }
    default:
        return mix(h, p, scalar_size(f->type));
    }
}

uint64_t kf_fuzz_walk(const ProtobufCMessage *msg)
{
    if (!msg)
        return 0;
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    if (!d || d->magic != PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC)
        abort();
    const char *base = (const char *)msg;
    uint64_t h = 14695981039346656037ull;
    h = mix(h, d->name, strlen(d->name));
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        const void *field = base + f->offset;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            const char *arr = *(const char *const *)field;
            if (n && !arr)
                abort();
            for (size_t k = 0; k < n; k++)
                h = walk_value(f, arr + k * scalar_size(f->type), h);
            continue;
        }
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            uint32_t which = *(const uint32_t *)(base + f->quantifier_offset);
            if (which != f->id)
                continue;
        } else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
                   f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE) {
            if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset))
                continue;
        }
        h = walk_value(f, field, h);
    }
    for (unsigned i = 0; i < msg->n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &msg->unknown_fields[i];
        h = mix(h, &u->tag, sizeof u->tag);
        if (u->len)
            h = mix(h, u->data, u->len);
    }
    h ^= (uint64_t)protobuf_c_message_check(msg);
    return h;
}

void kf_fuzz_repack(const ProtobufCMessage *msg)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *a = malloc(n ? n : 1);
    if (!a)
        abort();
    if (protobuf_c_message_pack(msg, a) != n)
        abort();
    ProtobufCMessage *again = protobuf_c_message_unpack(msg->descriptor, NULL, n, a);
    if (!again)
        abort(); /* we wrote it ourselves: it must decode */
    size_t n2 = protobuf_c_message_get_packed_size(again);
    uint8_t *b = malloc(n2 ? n2 : 1);
    if (!b)
        abort();
    protobuf_c_message_pack(again, b);
    if (n2 != n || memcmp(a, b, n) != 0)
        abort();
    protobuf_c_message_free_unpacked(again, NULL);
    free(a);
    free(b);
}

static char tmpdir[4096];

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[8192];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            struct stat st;
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                rm_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static void cleanup(void)
{
    if (tmpdir[0])
        rm_tree(tmpdir);
}

const char *kf_fuzz_tmpdir(void)
{
    if (tmpdir[0])
        return tmpdir;
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/kf-fuzz-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir))
        abort();
    atexit(cleanup);
    return tmpdir;
}
