/* fuzz_walk — helpers shared by the fuzz targets.
 *
 * kf_fuzz_walk reads every byte that a decoded protobuf-c message points
 * at (strings, bytes, repeated arrays, nested messages, unknown fields) by
 * following the message's own descriptor, so AddressSanitizer sees any
 * dangling or short pointer the decoder hands to a handler. It is generic on
 * purpose: a field added to kfleet.proto is walked without touching this. */
#ifndef KF_FUZZ_WALK_H
#define KF_FUZZ_WALK_H

#include <protobuf-c/protobuf-c.h>

#include <stddef.h>
#include <stdint.h>

/* Walks msg (NULL is fine) and returns a checksum of what it read, which
 * callers fold into a volatile sink so the reads are not optimised away.
 * Aborts when a nested message's descriptor is not the one its field names:
 * that is a broken invariant of the decoder, not bad input. */
uint64_t kf_fuzz_walk(const ProtobufCMessage *msg);

/* Packs msg, unpacks the bytes with the same descriptor, packs again, and
 * aborts unless both encodings are identical: what we decode we must be
 * able to re-encode (the coordinator stores what it received). */
void kf_fuzz_repack(const ProtobufCMessage *msg);

/* A private scratch directory (mkdtemp under $TMPDIR or /tmp) removed with
 * its content at exit. Returns the path (static storage) or aborts. */
const char *kf_fuzz_tmpdir(void);

#endif
