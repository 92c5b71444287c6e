/* tools — runs a task's kernel a second time under one of NVIDIA's tools:
 * Nsight Compute (ncu) for the metrics a sweep asks for, compute-sanitizer
 * (memcheck, racecheck) for validations with `sanitize: true`.
 *
 * The tool starts this same binary as a nested runner (`--runner`) on a
 * copy of the task with `ncu_pass` set: the nested runner launches the
 * kernel a few times between cuProfilerStart/Stop and streams nothing, so
 * ncu sees only the kernel's own launches (not the input generators of its
 * setup) and the agent sees only the outer runner's frames. ncu runs with
 * --clock-control none: the GPU's clocks are left as they are, as for the
 * timed samples.
 *
 * The tools are found beside the nvcc that builds (…/cuda/bin) or on PATH. */
#ifndef KF_TOOLS_H
#define KF_TOOLS_H

#include "common/buf.h"
#include "common/err.h"
#include "proto/kfleet.pb-c.h"

#include <stddef.h>

/* Launches of the kernel the nested ncu run profiles. */
#define KF_TOOLS_NCU_RUNS 5

/* Finds a toolkit tool ("ncu", "compute-sanitizer"): beside nvcc, in the
 * toolkit's usual place, or on PATH. Returns 1 and fills out, or 0. */
int kf_tools_find(const char *name, char *out, size_t len);

/* Runs `tool_argv... RUNNER --runner --workdir WORKDIR` (RUNNER: `runner`,
 * or this process's own binary when NULL) with the task
 * (ncu_pass set) on stdin and the runner's frames discarded; the tool's
 * output is left in log (its --log-file). The task reaches the nested
 * runner's stdin from a memory file; its scratch dir (--scratch) is made
 * in tmpdir, or WORKDIR/tmp when NULL (then it runs unsandboxed). Returns the tool's exit status
 * (>= 0), or a KF_E* code with err filled when it could not be started. */
int kf_tools_run_nested(const char *runner, const char *workdir, const char *tmpdir,
                        const Kfleet__TaskAssign *ta, char *const tool_argv[], size_t ntool,
                        int *exit_status, kf_err *err);

/* The tools a task's nested run goes under. */
typedef enum { KF_TOOL_NCU, KF_TOOL_MEMCHECK, KF_TOOL_RACECHECK, KF_TOOL_COUNT } kf_tool;

/* The log tool writes for ta in dir: DIR/ncu-0xTASK-ATTEMPT.csv or
 * DIR/sanitize-TOOL-0xTASK-ATTEMPT.log. */
void kf_tools_log_path(kf_tool tool, const char *dir, const Kfleet__TaskAssign *ta, char *out,
                       size_t len);

/* Runs tool on ta's nested run (kf_tools_run_nested, this binary as the
 * runner, dir as tmpdir): its command line made here from ta's measure
 * settings, its log at kf_tools_log_path(tool, dir, ta). Returns as
 * kf_tools_run_nested, or KF_ENOTFOUND when the tool is not on this node. */
int kf_tools_run(kf_tool tool, const char *workdir, const char *dir, const Kfleet__TaskAssign *ta,
                 int *exit_status, kf_err *err);

/* Parses ncu's --csv output: per (kernel, metric) the median over the
 * launches, plus, per metric, the total over all kernels divided by `runs`
 * under the kernel name "(per run)" — what one run() costs when it launches
 * several kernels. *out is a malloc'd array of malloc'd Metrics (free with
 * kf_tools_free_metrics). Returns 0, or KF_EINVAL (err filled) when the
 * text has no metric rows. */
int kf_tools_parse_ncu_csv(const char *text, unsigned runs, Kfleet__Metric ***out, size_t *n,
                           kf_err *err);
void kf_tools_free_metrics(Kfleet__Metric **m, size_t n);

/* compute-sanitizer's first error block, verbatim (its "=========" prefix
 * kept): from the first line that names an error (after the tool's banner)
 * up to the host backtrace or the block's end, then the ERROR SUMMARY line.
 * What a person needs first ("Invalid __global__ write of size 4 ... by
 * thread (0,0,0) in block (1023,0,0) ... out of bounds"), not the log's tail
 * (host frames). With no error block: the summary line, else the last line. */
void kf_tools_first_error_block(const char *log, char *out, size_t len);

#endif
