/* pagecheck — reads the pages of the store's data file itself and checks
 * their structure, before LMDB follows any of them (issue 44).
 *
 * LMDB trusts its pages: it keeps no checksum, and a page whose bytes were
 * overwritten is read as if it were whole. A scribbled node offset makes it
 * read outside the page (SIGSEGV), a branch page left with one key trips an
 * assertion (abort), a child pointer that now names another page serves
 * that page's records, or none, and a table whose root was hit reads as
 * empty: a coordinator then served a damaged store as "no sweep yet". So
 * this walk reads every page that the snapshot's tables reach with pread
 * (never through LMDB's map) and checks each field before using it: the
 * page number every header repeats, the page type, the node table's bounds,
 * each node inside its page, keys in order and inside their parent's
 * range, every leaf at the table's depth, overflow runs whole and inside
 * the file, no page reached twice, no free page also in use, and each
 * table's page and record counts equal to what its record says.
 *
 * What it cannot see: a byte changed inside a record's value, which leaves
 * the structure whole. That needs the record read (kf_store_check's deep
 * mode decodes every record and checks the seals).
 *
 * It knows LMDB 0.9's data format (version 1) on a 64-bit little-endian
 * host, the one kfleet builds on; elsewhere it says so and checks nothing. */
#ifndef KF_PAGECHECK_H
#define KF_PAGECHECK_H

#include "common/buf.h"
#include "common/err.h"

#include <lmdb.h>
#include <stdint.h>

typedef struct kf_pagecheck {
    uint64_t pages;      /* pages read: branch, leaf and overflow runs */
    uint64_t records;    /* records of the tables (not counting the free list) */
    uint64_t free_pages; /* pages the free list holds */
    uint32_t tables;     /* named tables walked */
    uint32_t damaged;    /* problems found */
    int unsupported;     /* 1: not LMDB 0.9's layout on this host: nothing checked */
} kf_pagecheck;

/* Checks the pages of env's newest snapshot, under a read transaction of
 * its own held for the walk (so no writer reuses the pages it reads; the
 * calling thread must have no other transaction open on env): every table
 * and the free list when `every`, else the table of tables and each
 * table's record in it (a page or two: what LMDB reads to open the tables;
 * a table whose record lost its root is caught, the "no sweep
 * yet"). Each problem is one line in problems,
 * at most max of them; the walk stops at the max-th, so an open that needs only a yes or no pays
 * for one. A line names the table, the page and its byte offset, and what is wrong ("table
 * 'samples': page 1234 (byte 5054464): its header says page 98765: the page was overwritten").
 * Returns KF_OK when the file was read (out->damaged counts the problems; 0: whole), or KF_EIO /
 * KF_ESTORE with err when it could not be read at all. */
int kf_pagecheck_run(MDB_env *env, int every, unsigned max, kf_buf *problems, kf_pagecheck *out,
                     kf_err *err);

/* The checks of kf_store_open, in order. The data file in dir, before
 * LMDB opens it: *size is its length, or -1 when there is none yet (a new
 * store); an empty file (taken for new, it would reuse sweep ids) or one
 * that is not a regular file is refused. */
int kf_pagecheck_file(const char *dir, long long *size, kf_err *err);
/* After mdb_env_open, before any page is touched: the file holds the
 * pages its meta page counts (LMDB would map past its end, and die of
 * SIGBUS at the first read there). */
int kf_pagecheck_length(MDB_env *env, const char *dir, long long fsize, kf_err *err);
/* Then the length and kf_pagecheck_run, stopping at the first problem:
 * refused with what is damaged, where, and what to do. fsize < 0 (a new
 * store): nothing to check. The coordinator's open checks every table
 * (about 25 ms for a million samples, docs/storage.md); a reader's (report,
 * compare, a follow's poll) only the table of tables, so that a report
 * stays as cheap as the records it reads. 0, or KF_ESTORE / KF_EIO. */
int kf_pagecheck_open(MDB_env *env, const char *dir, long long fsize, int every, kf_err *err);

#endif
