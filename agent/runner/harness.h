/* harness — runs one task (build, validate or profile) inside a runner
 * process, a child of the agent, so that a kernel that crashes or hangs
 * takes down only the runner.
 *
 * The runner reads one TaskAssign (protobuf) from stdin and writes a stream
 * of frames to `out_fd`: each frame is a u32 little-endian length followed by
 * a packed Kfleet__Envelope whose body is `samples` (SampleBatch, any number,
 * sequence numbers contiguous from 0) or `result` (Result, exactly one, last).
 * Diagnostics go to stderr, which the agent keeps.
 *
 * Files, under the agent's work dir:
 *   cache/<key>.so    build artifacts, key = BLAKE2b(kernel_hash, compiler
 *                     version, arch); written by rename, so a reader never
 *                     sees a partial file
 *   cache/<key>.json  what built it (compiler, flags, artifact hash)
 *   tmp/<task>-<attempt>/  scratch: sources, compiler output
 */
#ifndef KF_HARNESS_H
#define KF_HARNESS_H

#include "common/err.h"
#include "proto/kfleet.pb-c.h"

/* Defaults (issue 32): stop once the median is known to 0.5 % at 95 %,
 * after at least 20 samples and 10 ms of them (the thermal protocol's
 * warm-up, thermal.h, comes before: the floor need not be long for the GPU
 * to settle), or at the 15 s timeout. Replayed on the samples of
 * examples/gpu.yaml on an H200 (989,700 samples, 42 of 62 profiles at the
 * timeout), the rule needed 6,525 and moved no median by more than 1.2 %
 * except GEMMs started on a cool GPU, which the warm-up is for. The noise
 * (spread) limit no longer stops a profile; above it a row is flagged
 * noisy. */
#define KF_DEFAULT_MIN_SAMPLES 20
#define KF_DEFAULT_MIN_TIME_S 0.01
/* Unless the sweep sets min_time, this many samples also meet the time
 * floor (issue 45): a kernel of 2.3 us took ~4,300 samples to reach 10 ms,
 * each ~0.5-0.8 ms of host work around it (fresh inputs, the guard, launch
 * and sync), so its samples already spanned seconds of wall time: the
 * floor bought no settling, only samples. With the median also precise
 * within one tick of the timer (common/stats.h), bench/gpu/replay_floor.py
 * on the stored samples of 95 Triton candidates' profiles on an H200
 * (2026-11-29/30, 561,129 samples): past 1,000 samples 4.4-6.5x fewer a
 * sweep, past 300 14.7-23.9x, medians moved by at most one tick of CUPTI's
 * 32 ns (worst 1.41 % at 2.27 us; past 1,000 1.29 %); on examples/gpu.yaml's
 * 62 rows (four runs) 300 moved none by over 0.28 %. On the GPU (2026-11-30,
 * docs/benchmarks.md): medians within one tick of 1,000's. */
#define KF_DEFAULT_TIME_FLOOR_SAMPLES 300
/* No least span of a profile's samples by default (measure: min_span sets
 * one): 300 ms on every GPU profile cost examples/gpu.yaml 20 s on an H200
 * (46.9 -> 66.9 s) and did not make a GEMM's median independent of what ran
 * before (forward against reversed 2.35 % without, 4.60 % with): its SM
 * clock follows the GPU's power state over seconds, not over the span. */
#define KF_DEFAULT_PRECISION_PCT 0.5
#define KF_DEFAULT_MAX_NOISE_PCT 0.5
#define KF_DEFAULT_TIMEOUT_S 15.0
#define KF_DEFAULT_SEEDS 3
/* The throttle policy's threshold, nvbench's: a sample whose mean SM clock
 * (measured on the device around it) is under this share of the GPU's
 * default clock is discarded. */
#define KF_DEFAULT_THROTTLE_THRESHOLD_PCT 75.0

/* Runs the task and writes its frames to out_fd. Returns 0 when a Result
 * frame was written (whatever the task's outcome), else a KF_E* code. */
int kf_harness_run(const Kfleet__TaskAssign *assign, const char *workdir, int out_fd);

/* Entry point of `kfleet-agent --runner --workdir DIR [--scratch DIR]
 * [--channel]`: reads the TaskAssign, runs it, writes its frames (above,
 * on the descriptors of channel.h with --channel).
 * With a scratch dir (the agent always gives one) the runner is sandboxed
 * (confine.h): a validate or profile before its kernel is loaded, a
 * build's tools each. spawn_ns: when the agent started it
 * (CLOCK_MONOTONIC; 0 for unknown), its first task's "start" phase. */
int kf_runner_main(const char *workdir, const char *scratch, int channel, uint64_t spawn_ns);

/* Entry point of `kfleet-agent --runner --serve --workdir DIR`: a runner
 * that serves one kernel. Tasks come as frames (u32 little-endian length,
 * packed TaskAssign) on the task socket, each run as kf_runner_main runs
 * its one; a descriptor passed with a frame's header (SCM_RIGHTS) is a
 * candidate's new checker socket, placed at KF_RUNNER_FD_CHECKER (the
 * candidate's next task fails without one, candidate.c). The runner
 * keeps the kernel loaded and its CUDA context between them, and leaves at
 * EOF or after a task whose Result says runner_stays = false. Returns the
 * exit status. */
int kf_runner_serve(const char *workdir, const char *scratch, int channel, uint64_t spawn_ns);

/* Writes one framed envelope to fd (handles short writes). */
int kf_harness_write_frame(int fd, Kfleet__Envelope *env);

#endif
