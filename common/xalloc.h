/* xalloc — kfleet's one out-of-memory policy, as git's and Redis's: an
 * allocation that fails ends the process with a message naming what was
 * being allocated, through these wrappers, everywhere. kfleet's daemons
 * cannot do anything useful without the memory they ask for (a half-built
 * record is worse than a restart, which reloads from the store), and a
 * KF_ENOMEM path nobody tests is a path that breaks. Input sizes are bounded
 * where they are read (sweeps, frames, files), so what is asked for here is
 * proportional to work the process accepted. */
#ifndef KF_XALLOC_H
#define KF_XALLOC_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

void *kf_xmalloc(size_t n);
void *kf_xcalloc(size_t count, size_t size);
void *kf_xrealloc(void *p, size_t n);
/* strdup; NULL is copied as "". */
char *kf_xstrdup(const char *s);
/* A deep copy of a protobuf-c message (packed, then unpacked: the copy
 * protobuf-c offers), freed with its type's free_unpacked(copy, NULL). */
void *kf_pb_copy(const ProtobufCMessage *m);

#endif
