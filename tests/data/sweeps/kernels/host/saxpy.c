/* Fixture for tests/unit/test_sweep.c: the sweep parser only checks that
 * this file exists. It is never compiled. */
