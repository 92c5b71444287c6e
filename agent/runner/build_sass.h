/* build_sass — what machine code an artifact holds and where it runs: the
 * toolkit's cuobjdump listing read, and the rule for which GPU runs which
 * SASS. Pure functions of their text, split from build.c (which runs the
 * tools) so each can be tested alone. */
#ifndef KF_BUILD_SASS_H
#define KF_BUILD_SASS_H

#include <stddef.h>

/* Parses `cuobjdump --list-elf --list-ptx` output into a comma-separated
 * list of SASS archs ("sm_90a") and whether PTX is present. */
void kf_build_parse_cuobjdump(const char *text, char *archs, size_t len, int *has_ptx);

/* Whether machine code for `sass` ("sm_90a", "sm_80") runs natively on a
 * GPU of compute capability major.minor: the same major and a minor not
 * above the GPU's; an arch-specific "a" target only on exactly that one. */
int kf_build_sass_runs_on(const char *sass, int major, int minor);

#endif
