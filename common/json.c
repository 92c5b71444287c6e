/* json — see json.h. */
#include "common/json.h"
#include "common/buf.h"
#include "common/text.h"

#include <stdlib.h>
#include <string.h>

json_t *kf_json_str(const char *s)
{
    if (!s)
        return json_null();
    json_t *v = json_string(s);
    if (v)
        return v;
    kf_buf b = KF_BUF_INIT;
    kf_text_utf8_n(&b, s, strlen(s));
    v = json_stringn(b.data, b.len);
    kf_buf_release(&b);
    return v;
}

char *kf_json_dumps(const json_t *j, size_t flags)
{
    char *raw = json_dumps(j, flags);
    if (!raw)
        return NULL;
    kf_buf b = KF_BUF_INIT;
    kf_text_json_escape(&b, raw, strlen(raw));
    free(raw);
    return kf_buf_detach(&b);
}
