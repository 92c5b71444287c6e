/* log — one line per event on stderr: `ts level event key=value ...`.
 *
 * The logger's level, program name and optional file are the only
 * process-wide settings (STYLE.md allows them). Never pass a secret: fields are printed verbatim.
 */
#ifndef KF_LOG_H
#define KF_LOG_H

typedef enum { KF_LOG_DEBUG = 0, KF_LOG_INFO, KF_LOG_WARN, KF_LOG_ERROR, KF_LOG_OFF } kf_log_level;

void kf_log_setup(const char *program, kf_log_level level);
/* Also writes every event of at least `level` to the file at path (opened
 * for appending; NULL closes it): `kfleet run` keeps its embedded
 * coordinator's log beside its agents' while the terminal shows progress.
 * 0, or -1 with errno when the file cannot be opened. */
int kf_log_to_file(const char *path, kf_log_level level);
kf_log_level kf_log_get_level(void);
/* Where the events go instead of stderr (descriptor 2): a runner's stderr
 * is its kernel's, so its own events go to the log the agent gave it. */
void kf_log_set_fd(int fd);
/* Parses "debug|info|warn|error|off"; returns -1 when unknown. */
int kf_log_parse_level(const char *s);

void kf_log(kf_log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define kf_debug(ev, ...) kf_log(KF_LOG_DEBUG, ev, __VA_ARGS__)
#define kf_info(ev, ...) kf_log(KF_LOG_INFO, ev, __VA_ARGS__)
#define kf_warn(ev, ...) kf_log(KF_LOG_WARN, ev, __VA_ARGS__)
#define kf_error(ev, ...) kf_log(KF_LOG_ERROR, ev, __VA_ARGS__)

#endif
