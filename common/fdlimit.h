/* fdlimit — the process's descriptor limit, for the daemons that accept
 * connections from the network (the coordinator, the relay): they raise
 * the soft limit to the hard one at start and size their connection caps
 * from what is left, so that a flood of connections is refused by them
 * rather than by the kernel inside a library (libzmq aborts when its ipc
 * listener gets EMFILE). */
#ifndef KF_FDLIMIT_H
#define KF_FDLIMIT_H

/* Raises the soft RLIMIT_NOFILE to the hard limit (capped at 1<<20, which
 * poll()-sized arrays can afford); returns the soft limit now in force
 * (1024 when it cannot be read). */
long kf_fdlimit_raise(void);

#endif
