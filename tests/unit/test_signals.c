/* signals: SIGINT and SIGTERM reach the handler, SIGPIPE is ignored when
 * asked, and restore puts back exactly what was there. */
#include "common/signals.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static volatile sig_atomic_t hits;

static void on_sig(int sig)
{
    (void)sig;
    hits++;
}

static void on_other(int sig)
{
    (void)sig;
}

static void test_catch_and_restore(void **state)
{
    (void)state;
    struct sigaction before, now;
    struct sigaction mine;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = on_other;
    sigaction(SIGINT, &mine, NULL);
    signal(SIGPIPE, SIG_DFL);

    kf_sigsave old;
    kf_signals_catch(on_sig, KF_SIGNALS_KEEP_PIPE, &old);
    raise(SIGTERM);
    raise(SIGINT);
    assert_int_equal(hits, 2);
    sigaction(SIGPIPE, NULL, &now);
    assert_ptr_equal(now.sa_handler, SIG_DFL);

    kf_signals_restore(&old);
    sigaction(SIGINT, NULL, &before);
    assert_ptr_equal(before.sa_handler, on_other);
    sigaction(SIGTERM, NULL, &before);
    assert_ptr_equal(before.sa_handler, SIG_DFL);

    kf_signals_catch(on_sig, KF_SIGNALS_IGNORE_PIPE, NULL);
    sigaction(SIGPIPE, NULL, &now);
    assert_ptr_equal(now.sa_handler, SIG_IGN);
    raise(SIGPIPE); /* ignored: the test goes on */
    assert_int_equal(hits, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catch_and_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
