/* log — key=value event lines on stderr; see log.h. */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static struct {
    char program[32];
    kf_log_level level;
} g_log = {"kfleet", KF_LOG_INFO};

void kf_log_setup(const char *program, kf_log_level level)
{
    snprintf(g_log.program, sizeof g_log.program, "%s", program ? program : "kfleet");
    g_log.level = level;
}

kf_log_level kf_log_get_level(void)
{
    return g_log.level;
}

int kf_log_parse_level(const char *s)
{
    static const char *names[] = {"debug", "info", "warn", "error", "off"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

void kf_log(kf_log_level level, const char *event, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < g_log.level || level >= KF_LOG_OFF)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char line[2048];
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s %s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, g_log.program, names[level], event);
    if (n < 0 || (size_t)n >= sizeof line)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    /* One write per line, so lines of concurrent processes do not interleave. */
    size_t len = strlen(line);
    if (len < sizeof line - 1) {
        line[len++] = '\n';
        line[len] = '\0';
    }
    fputs(line, stderr);
}
