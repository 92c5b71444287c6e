/* limits — the bounds on the files kfleet reads, in one place: each is
 * checked before the file is read (kf_buf_read_file_max: regular files
 * only, so a FIFO cannot hang a command and /dev/zero cannot fill memory),
 * and docs/sweep-format.md and docs/inventory.md state them. Together the
 * sources and headers of a sweep stay far under ZeroMQ's message limit. */
#ifndef KF_LIMITS_H
#define KF_LIMITS_H

#define KF_MAX_SWEEP_FILE (4u << 20)     /* a sweep YAML file */
#define KF_MAX_SOURCE_FILE (4u << 20)    /* one kernel source */
#define KF_MAX_HEADER_FILE (1u << 20)    /* one local header a kernel includes */
#define KF_MAX_HEADERS_TOTAL (4u << 20)  /* all the local headers of one kernel */
#define KF_MAX_INVENTORY_FILE (4u << 20) /* a launch inventory */
#define KF_MAX_SSH_CONFIG (1u << 20)     /* an ssh_config file */

#endif
