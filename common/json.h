/* json — what every JSON document kfleet writes goes through (issue 44),
 * over jansson: a string is never dropped or replaced for not being UTF-8
 * (its odd bytes are written "\xff", the rest kept), and no document
 * carries a raw control character: jansson escapes C0, kf_json_dumps the
 * rest (DEL, C1, the Unicode controls that reorder or break a line:
 * common/text.h). A kernel's error or an agent's hostname in a report, a
 * status or a stream is then the text it was, to a program, and inert to
 * whatever shows the file. */
#ifndef KF_JSON_H
#define KF_JSON_H

#include <jansson.h>

/* A JSON string of s (NULL: JSON null); bytes of s that are not UTF-8 are
 * written as the text "\xff". NULL only when out of memory, as jansson. */
json_t *kf_json_str(const char *s);
/* json_dumps(j, flags), then kf_text_json_escape: the caller frees the
 * text; NULL when out of memory or j cannot be written. */
char *kf_json_dumps(const json_t *j, size_t flags);

#endif
