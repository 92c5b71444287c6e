/* hostpeak — the host's FLOP ceiling, measured (issue 43): a host row
 * whose FLOP rate passes it by the report's factor is impossible, as a GPU
 * row past its dtype's matrix rate is (coordinator/report/report_rows.c).
 *
 * Single-precision multiply-adds on every lane of the widest vectors the
 * CPU has, 12 independent chains so that the FMA units' latency is hidden,
 * for one core; times the cores this process may use. A core's peak times
 * the core count is above what all cores sustain together (turbo, shared
 * FMA units of hyperthreads): a ceiling, not a figure to reach. fp64
 * kernels are judged by it too (half the lanes): lenient, never unfair. */
#ifndef KF_HOSTPEAK_H
#define KF_HOSTPEAK_H

/* GFLOP/s: AVX-512, else AVX2+FMA, else 16-byte vectors; one core's best
 * of 5 times the cores. */
double kf_host_peak_gflops(void);

#endif
