/* log — key=value event lines on stderr; see log.h. */
#include "common/log.h"
#include "common/text.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
    char program[32];
    kf_log_level level;
    FILE *file; /* a second sink, NULL: none */
    kf_log_level file_level;
    int fd; /* the first sink: stderr, or a runner's log descriptor */
} g_log = {"kfleet", KF_LOG_INFO, NULL, KF_LOG_OFF, 2};

void kf_log_set_fd(int fd)
{
    g_log.fd = fd;
}

int kf_log_to_file(const char *path, kf_log_level level)
{
    if (g_log.file)
        fclose(g_log.file);
    g_log.file = NULL;
    g_log.file_level = KF_LOG_OFF;
    if (!path)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || !(g_log.file = fdopen(fd, "a"))) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    setvbuf(g_log.file, NULL, _IOLBF, 0);
    g_log.file_level = level;
    return 0;
}

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
    int to_err = level >= g_log.level, to_file = g_log.file && level >= g_log.file_level;
    if (level >= KF_LOG_OFF || (!to_err && !to_file))
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
    /* The fields may hold what a kernel or an agent wrote (an error, a
     * name): made inert, so a log line stays one line and an ESC in it
     * cannot rewrite the terminal that shows the log. */
    char raw[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    kf_buf esc = KF_BUF_INIT;
    kf_text_inert(&esc, raw, KF_TEXT_LINE);
    snprintf(line + n, sizeof line - (size_t)n, "%s", esc.data);
    kf_buf_release(&esc);
    /* One write per line, so lines of concurrent processes do not interleave. */
    size_t len = strlen(line);
    if (len < sizeof line - 1) {
        line[len++] = '\n';
        line[len] = '\0';
    }
    for (size_t off = 0; to_err && off < len;) {
        ssize_t w = write(g_log.fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* a log that cannot be written is not worth a failure */
        off += (size_t)w;
    }
    if (to_file)
        fputs(line, g_log.file);
}
