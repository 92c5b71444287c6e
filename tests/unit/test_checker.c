/* test_checker — a candidate's judge (runner/checker.c) as the agent runs
 * it: a process of its own, its references files it maps and verifies, a
 * socket to the runner on which it answers PASS or FAIL only, and its
 * numbers on the agent's pipe. Right outputs pass, wrong ones fail with
 * the element that breaks the bound, spot checks are answered and a failed
 * one is a verdict, allclose tolerances judge element by element, a
 * reference file that is not its digest is refused, and the summary is
 * written before FINISH is answered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/util.h"
#include "runner/checker.h"
#include "runner/reffile.h"
#include "runner/sandbox.h"

#include <fcntl.h>
#include <sodium.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096

static char dir[] = "/tmp/kf-test-checker.XXXXXX";

typedef struct judge {
    pid_t pid;
    kf_checker *c;
    int verdicts;
} judge;

/* References of N elements: ref0[i] = 1 + i/N, ref1[i] = -2 + i/7. */
static void make_refs(char digests[2][KF_REFFILE_DIGEST_HEX], kf_dtype dtype)
{
    double *ref = malloc(N * sizeof *ref);
    char path[256];
    kf_err err;
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < N; i++)
            ref[i] = k == 0 ? 1.0 + (double)i / N : -2.0 + (double)i / 7.0;
        snprintf(path, sizeof path, "%s/ref%d", dir, k);
        unlink(path);
        assert_int_equal(kf_reffile_write(path, ref, N, dtype, digests[k], &err), KF_OK);
    }
    free(ref);
}

/* Starts the checker as the agent does (checkers.c), on the config text. */
static judge start(const char *config)
{
    judge j;
    int sv[2], vp[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
    assert_int_equal(pipe(vp), 0);
    int cfg = kf_memfd("test-config");
    assert_true(cfg >= 0);
    assert_int_equal(kf_write_all(cfg, config, strlen(config)), 0);
    lseek(cfg, 0, SEEK_SET);
    j.pid = fork();
    assert_true(j.pid >= 0);
    if (j.pid == 0) {
        char path[256];
        int place[7] = {cfg, open("/dev/null", O_WRONLY), 2, sv[0], vp[1], -1, -1};
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "%s/ref%d", dir, k);
            place[5 + k] = open(path, O_RDONLY);
        }
        if (kf_sandbox_place_fds(place, 7) != 0)
            _exit(99);
        _exit(kf_checker_main());
    }
    close(cfg);
    close(sv[0]);
    close(vp[1]);
    kf_err err;
    j.c = kf_checker_connect(sv[1], &err);
    assert_non_null(j.c);
    j.verdicts = vp[0];
    return j;
}

/* FINISH (the shared buffer moved into keep unless it is NULL), then
 * everything the checker wrote, and its exit status. */
static int finish_keep(judge *j, char *out, size_t len, kf_checker_stage *keep)
{
    int rc = keep ? kf_checker_finish_keep(&j->c, keep) : kf_checker_finish(&j->c);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < len && (r = read(j->verdicts, out + got, len - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(j->verdicts);
    int st = 0;
    waitpid(j->pid, &st, 0);
    return rc == KF_OK && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int finish(judge *j, char *out, size_t len)
{
    return finish_keep(j, out, len, NULL);
}

static void config(char *out, size_t len, const char *tol, char digests[2][KF_REFFILE_DIGEST_HEX],
                   int verify)
{
    snprintf(out, len, "%s\nref %d %s %d\nref %d %s %d\n", tol, N, digests[0], verify, N,
             digests[1], verify);
}

static void test_judged_outside(void **state)
{
    (void)state;
    char digests[2][KF_REFFILE_DIGEST_HEX], cfg[512], text[8192];
    make_refs(digests, KF_DTYPE_F64);
    config(cfg, sizeof cfg, "tol 1e-5 1e-5 0 0 0", digests, 1);
    judge j = start(cfg);
    float *right = malloc(N * sizeof *right), *zeros = calloc(N, sizeof *zeros);
    for (size_t i = 0; i < N; i++)
        right[i] = (float)(1.0 + (double)i / N);
    kf_err err;
    int passed = -1;
    assert_int_equal(kf_checker_check(j.c, 0, right, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 1);
    assert_int_equal(kf_checker_check(j.c, 0, zeros, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 0);
    /* Against the other reference, the right output of the first is wrong. */
    assert_int_equal(kf_checker_check(j.c, 1, right, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 0);
    /* Another element count: not the problem's output. */
    assert_int_equal(kf_checker_check(j.c, 0, right, KF_DTYPE_F32, N - 1, &passed, &err),
                     KF_EINVAL);
    /* Spot checks: the values at secret positions. */
    uint64_t at[3] = {0, 17, N - 1};
    double vals[3] = {1.0, 1.0 + 17.0 / N, 1.0 + (N - 1.0) / N};
    assert_int_equal(kf_checker_spot(j.c, 0, at, vals, 3, &passed, &err), KF_OK);
    assert_int_equal(passed, 1);
    vals[1] = NAN; /* the poison still there */
    assert_int_equal(kf_checker_spot(j.c, 0, at, vals, 3, &passed, &err), KF_OK);
    assert_int_equal(passed, 0);
    assert_int_equal(finish(&j, text, sizeof text), 0);
    print_message("%s", text);
    assert_non_null(strstr(text, "verified "));
    assert_non_null(strstr(text, "check 0 ref 0 pass 1 nonfinite 0"));
    assert_non_null(strstr(text, "check 1 ref 0 pass 0 nonfinite 0 max_abs 1.99"));
    /* The broken bound with its element, for the agent only. */
    assert_non_null(strstr(text, "why 1 max abs error 2 (tolerance 1e-05) at element 4095"));
    assert_non_null(strstr(text, "check 3 ref 0 bad"));
    assert_non_null(strstr(text, "spot 1 ref 0 fail of 3 elements at secret positions, 1 still"));
    assert_non_null(strstr(text, "done checks 4 failed 3 spots 2 spot_failed 1"));
    free(right);
    free(zeros);
}

/* KernelBench's check, atol = rtol = 1e-2, on a reference kept in f32: a
 * TF32-like output (1e-3 relative off everywhere) passes, one element off
 * by 2e-2 beyond its bound fails, named. */
static void test_allclose(void **state)
{
    (void)state;
    char digests[2][KF_REFFILE_DIGEST_HEX], cfg[512], text[8192];
    make_refs(digests, KF_DTYPE_F32);
    config(cfg, sizeof cfg, "tol inf 0.5 1 0.01 0.01", digests, 0);
    judge j = start(cfg);
    float *out = malloc(N * sizeof *out);
    for (size_t i = 0; i < N; i++)
        out[i] = (float)((-2.0 + (double)i / 7.0) * (1 + 1e-3));
    kf_err err;
    int passed = -1;
    assert_int_equal(kf_checker_check(j.c, 1, out, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 1);
    /* Element 14 (reference 0): its bound is atol = 1e-2; 2e-2 breaks it. */
    out[14] = 0.02f;
    assert_int_equal(kf_checker_check(j.c, 1, out, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 0);
    /* Zeros: every element of this reference but a few is outside. */
    memset(out, 0, N * sizeof *out);
    assert_int_equal(kf_checker_check(j.c, 1, out, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 0);
    assert_int_equal(finish(&j, text, sizeof text), 0);
    print_message("%s", text);
    assert_non_null(strstr(text, "check 0 ref 1 pass 1 nonfinite 0"));
    assert_non_null(strstr(text, "not_close 0 at "));
    assert_non_null(strstr(text, "check 1 ref 1 pass 0"));
    assert_non_null(strstr(text, "not_close 1 at "));
    assert_non_null(strstr(text, "why 1 1 of 4096 elements are outside atol + rtol |ref| (atol "
                                 "0.01, rtol 0.01); the worst, element 14: 0.0199999996 against "
                                 "0, 2 times its bound"));
    assert_non_null(strstr(text, "done checks 3 failed 2 spots 0 spot_failed 0"));
    free(out);
}

/* A reference file that is not its digest is refused: the checker says so
 * and judges nothing. */
static void test_damaged_reference(void **state)
{
    (void)state;
    char digests[2][KF_REFFILE_DIGEST_HEX], cfg[512], text[4096], path[256];
    make_refs(digests, KF_DTYPE_F64);
    snprintf(path, sizeof path, "%s/ref1", dir);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    double wrong = 42;
    assert_int_equal(pwrite(fd, &wrong, sizeof wrong, KF_REFFILE_HEADER + 8 * 100), 8);
    close(fd);
    config(cfg, sizeof cfg, "tol 1e-5 1e-5 0 0 0", digests, 1);
    judge j = start(cfg);
    int st = finish(&j, text, sizeof text);
    print_message("%s", text);
    assert_int_equal(st, -1); /* no answer to FINISH: it left */
    char want[128];
    snprintf(want, sizeof want, "damaged %s the reference file %s is damaged", digests[1],
             digests[1]);
    assert_non_null(strstr(text, want));
    assert_null(strstr(text, "done checks"));
}

/* A kB of /proc/PID/status's field (RssShmem: the shared pages it maps). */
static long status_kb(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, strlen(field)) == 0)
            kb = atol(line + strlen(field) + 1);
    fclose(f);
    return kb;
}

/* The buffer a runner hands the checker is the candidate's to size: a
 * candidate holding the socket could send one of terabytes, mostly holes.
 * The checker maps it and touches no more than a check reads (the bytes
 * of an output of the reference's size), so the buffer costs it nothing
 * outside the candidate's own memory. */
static void test_buffer_not_touched(void **state)
{
    (void)state;
    char digests[2][KF_REFFILE_DIGEST_HEX], cfg[512], text[8192];
    make_refs(digests, KF_DTYPE_F64);
    config(cfg, sizeof cfg, "tol 1e-5 1e-5 0 0 0", digests, 1);
    judge j = start(cfg);
    kf_err err;
    const size_t big = (size_t)128 << 20;
    long mine = status_kb(getpid(), "RssShmem:");
    float *buf = kf_checker_buffer(j.c, big, &err);
    assert_non_null(buf);
    /* The runner's side has it in memory before any copy (populated on
     * the node's threads at this size), and zero. */
    assert_true(status_kb(getpid(), "RssShmem:") - mine >= (long)(big >> 10) - 64);
    for (size_t i = 0; i < big / sizeof *buf; i += (1u << 18) + 7)
        assert_true(buf[i] == 0);
    long before = status_kb(j.pid, "RssShmem:");
    assert_true(before >= 0);
    assert_true(before < 16 * 1024); /* not the 128 MiB it was handed */
    for (size_t i = 0; i < N; i++)
        buf[i] = (float)(1.0 + (double)i / N);
    int passed = -1;
    assert_int_equal(kf_checker_check(j.c, 0, buf, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 1);
    assert_true(status_kb(j.pid, "RssShmem:") < 16 * 1024);
    assert_int_equal(finish(&j, text, sizeof text), 0);
}

/* A serving runner's next task (the same candidate's profile) gets a new
 * checker and keeps the last one's shared buffer: the same memory, not
 * made again, mapped by the new checker at its first output (it judges
 * what is written there). */
static void test_buffer_kept(void **state)
{
    (void)state;
    char digests[2][KF_REFFILE_DIGEST_HEX], cfg[512], text[8192];
    make_refs(digests, KF_DTYPE_F64);
    config(cfg, sizeof cfg, "tol 1e-5 1e-5 0 0 0", digests, 1);
    kf_err err;
    int passed = -1;
    const size_t big = (size_t)80 << 20;
    judge a = start(cfg);
    float *buf = kf_checker_buffer(a.c, big, &err);
    assert_non_null(buf);
    for (size_t i = 0; i < N; i++)
        buf[i] = (float)(1.0 + (double)i / N);
    assert_int_equal(kf_checker_check(a.c, 0, buf, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 1);
    kf_checker_stage keep = {0};
    assert_int_equal(finish_keep(&a, text, sizeof text, &keep), 0);
    assert_true(keep.p == buf);
    assert_true(keep.len == big);

    judge b = start(cfg);
    kf_checker_adopt(b.c, &keep);
    assert_null(keep.p);
    float *again = kf_checker_buffer(b.c, big, &err);
    assert_true(again == buf);
    assert_true(again[N - 1] == (float)(1.0 + (N - 1.0) / N)); /* what the last task wrote */
    assert_int_equal(kf_checker_check(b.c, 0, again, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 1);
    memset(again, 0, N * sizeof *again);
    assert_int_equal(kf_checker_check(b.c, 0, again, KF_DTYPE_F32, N, &passed, &err), KF_OK);
    assert_int_equal(passed, 0);
    assert_int_equal(finish(&b, text, sizeof text), 0);
    assert_non_null(strstr(text, "check 0 ref 0 pass 1"));
    assert_non_null(strstr(text, "check 1 ref 0 pass 0"));
}

/* The digest as reffile.h defines it, recomputed here from the file's
 * bytes: BLAKE2b-256 of the header and of each 32 MiB piece's BLAKE2b-256. */
static void expected_digest(const char *path, char hex[KF_REFFILE_DIGEST_HEX])
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, 0, SEEK_END), 0);
    size_t len = (size_t)ftell(fp);
    rewind(fp);
    unsigned char *f = malloc(len);
    assert_non_null(f);
    assert_int_equal(fread(f, 1, len, fp), len);
    fclose(fp);
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, f, KF_REFFILE_HEADER);
    const size_t piece = (size_t)32 << 20;
    for (size_t off = KF_REFFILE_HEADER; off < len; off += piece) {
        unsigned char d[32];
        size_t n = len - off < piece ? len - off : piece;
        crypto_generichash(d, sizeof d, f + off, n, NULL, 0);
        crypto_generichash_update(&st, d, sizeof d);
    }
    unsigned char d[32];
    crypto_generichash_final(&st, d, sizeof d);
    sodium_bin2hex(hex, KF_REFFILE_DIGEST_HEX, d, sizeof d);
    free(f);
}

/* A reference of several hashed pieces (f64 as it is, and f32 converted
 * piece by piece on several threads, or written from f32 values, the same
 * file): its digest is the format's, its
 * values are the reference's, a byte changed in its last piece is found,
 * and a file of version 1 (hashed whole) is not taken for one. */
static void test_reference_pieces(void **state)
{
    (void)state;
    const size_t n = (size_t)9 << 20; /* f64: 72 MiB, 3 pieces; f32: 36 MiB, 2 */
    double *ref = malloc(n * sizeof *ref);
    assert_non_null(ref);
    for (size_t i = 0; i < n; i++)
        ref[i] = 0.5 + (double)(i % 1000) / 7.0 + (double)i * 1e-7;
    kf_dtype dts[2] = {KF_DTYPE_F64, KF_DTYPE_F32};
    for (int k = 0; k < 2; k++) {
        char path[256], digest[KF_REFFILE_DIGEST_HEX], want[KF_REFFILE_DIGEST_HEX];
        kf_err err;
        snprintf(path, sizeof path, "%s/pieces%d", dir, k);
        unlink(path);
        assert_int_equal(kf_reffile_write(path, ref, n, dts[k], digest, &err), KF_OK);
        expected_digest(path, want);
        assert_string_equal(digest, want);
        if (dts[k] == KF_DTYPE_F32) { /* values computed in f32: the same file */
            float *f = malloc(n * sizeof *f);
            assert_non_null(f);
            for (size_t i = 0; i < n; i++)
                f[i] = (float)ref[i];
            char p32[300], d32[KF_REFFILE_DIGEST_HEX];
            snprintf(p32, sizeof p32, "%s.f32", path);
            unlink(p32);
            assert_int_equal(kf_reffile_write_f32(p32, f, n, d32, &err), KF_OK);
            assert_string_equal(d32, digest);
            unlink(p32);
            free(f);
        }
        int fd = open(path, O_RDWR);
        assert_true(fd >= 0);
        kf_reffile r;
        assert_int_equal(kf_reffile_map(fd, n, digest, 1, &r, &err), KF_OK);
        assert_int_equal(r.dtype, dts[k]);
        for (size_t i = 0; i < n; i += 1234567)
            assert_true(kf_reffile_at(&r, i) == (k == 0 ? ref[i] : (double)(float)ref[i]));
        assert_true(kf_reffile_at(&r, n - 1) == (k == 0 ? ref[n - 1] : (double)(float)ref[n - 1]));
        kf_reffile_unmap(&r);
        unsigned char byte = 0x5a;
        off_t last = (off_t)(KF_REFFILE_HEADER + n * (k == 0 ? 8 : 4) - 3);
        assert_int_equal(pwrite(fd, &byte, 1, last), 1);
        assert_int_equal(kf_reffile_map(fd, n, digest, 1, &r, &err), KF_EINVAL);
        assert_non_null(strstr(err.msg, "is damaged"));
        unsigned char v1 = 1;
        assert_int_equal(pwrite(fd, &v1, 1, 6), 1); /* "KFREF\0\1\0" */
        assert_int_equal(kf_reffile_map(fd, n, digest, 0, &r, &err), KF_EINVAL);
        assert_non_null(strstr(err.msg, "no reference header"));
        close(fd);
        unlink(path);
    }
    free(ref);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    kf_remove_tree(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judged_outside),     cmocka_unit_test(test_allclose),
        cmocka_unit_test(test_damaged_reference),  cmocka_unit_test(test_reference_pieces),
        cmocka_unit_test(test_buffer_not_touched), cmocka_unit_test(test_buffer_kept),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
