/* pagecheck — see pagecheck.h.
 *
 * LMDB's layout, from its mdb.c (0.9, data version 1, 64-bit host): pages
 * 0 and 1 are meta pages, the newer one (by txnid) the snapshot's start;
 * each holds two table records, the free list's and the main table's,
 * whose leaf records are the named tables (F_SUBDATA). Every other page
 * starts with a 16-byte header (its own page number, flags, and either the
 * node table's lower and upper bounds or an overflow run's page count);
 * branch and leaf pages hold a table of 2-byte node offsets after it and
 * the nodes at the end. A node is 8 bytes (data size or child page number,
 * flags, key size), its key, and on a leaf its value, or the page number of
 * the overflow run holding a big value. These are the only facts used, and
 * each read is bounds-checked first: the file is untrusted input here. */
#include "core/pagecheck.h"
#include "common/xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    HDR = 16,            /* page header */
    NODE = 8,            /* node header */
    DBREC = 48,          /* MDB_db: pad u32, flags u16, depth u16, 5 x u64 */
    META_DBS = HDR + 24, /* after magic u32, version u32, address, mapsize */
    META_LAST = META_DBS + 2 * DBREC,
    META_TXNID = META_LAST + 8,
    META_END = META_TXNID + 8,
    MAX_DEPTH = 32, /* LMDB's CURSOR_STACK: no tree is deeper */
    NAME_MAX_LEN = 63,
};
#define P_BRANCH 0x01u
#define P_LEAF 0x02u
#define P_OVERFLOW 0x04u
#define P_META 0x08u
#define P_TRANSIENT 0x8010u /* P_DIRTY, P_KEEP: in-memory marks, cleared on write */
#define F_BIGDATA 0x01u
#define F_SUBDATA 0x02u
#define F_DUPDATA 0x04u
#define LMDB_MAGIC 0xBEEFC0DEu
#define NO_PAGE UINT64_MAX /* an empty table's root */
/* Table flags kfleet never sets: duplicates, reversed keys. */
#define ODD_TABLE_FLAGS                                                                            \
    (MDB_REVERSEKEY | MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP)

typedef struct dbrec {
    unsigned flags, depth;
    uint64_t branch, leaf, overflow, entries, root;
} dbrec;

enum { T_FREE, T_MAIN, T_TABLE };

/* The tree being walked, and what its pages hold. */
typedef struct tree {
    char name[NAME_MAX_LEN + 40]; /* "table 'samples'" */
    int kind;
    dbrec rec;
    uint64_t branch, leaf, overflow, entries;
} tree;

typedef struct key {
    const uint8_t *p; /* NULL: no bound */
    size_t n;
} key;

typedef struct named {
    char name[NAME_MAX_LEN + 1];
    dbrec rec;
} named;

typedef struct walk {
    int fd;
    uint32_t psize;
    uint64_t npages; /* the snapshot's last page + 1 */
    uint8_t *seen;   /* a bit per page: reached */
    /* The snapshot's pages, mapped read-only once the file is known to
     * hold them all (so no read faults past its end); LMDB never
     * shortens the file. Read in place: a copy a page was a third of the
     * walk's time. */
    const uint8_t *map;
    size_t maplen;
    unsigned max;
    kf_buf *problems;
    kf_pagecheck *out;
    named *tables;
    size_t ntables, cap;
    int io; /* errno of a read that failed (not a short one) */
} walk;

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void rd_dbrec(const uint8_t *p, dbrec *r)
{
    r->flags = rd16(p + 4);
    r->depth = rd16(p + 6);
    r->branch = rd64(p + 8);
    r->leaf = rd64(p + 16);
    r->overflow = rd64(p + 24);
    r->entries = rd64(p + 32);
    r->root = rd64(p + 40);
}

static int stop(const walk *w)
{
    return w->out->damaged >= w->max || w->io;
}

static void problem(walk *w, const tree *t, uint64_t pgno, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem(walk *w, const tree *t, uint64_t pgno, const char *fmt, ...)
{
    if (w->out->damaged++ >= w->max)
        return;
    if (pgno == NO_PAGE) /* the table's record itself */
        kf_buf_addf(w->problems, "%s: ", t->name);
    else
        kf_buf_addf(w->problems, "%s: page %llu (byte %llu): ", t->name, (unsigned long long)pgno,
                    (unsigned long long)pgno * w->psize);
    va_list ap;
    va_start(ap, fmt);
    kf_buf_vaddf(w->problems, fmt, ap);
    va_end(ap);
    kf_buf_addc(w->problems, '\n');
}

/* len bytes at byte off of the file; 0, or 1 with a problem named (short:
 * the file ends first) or w->io set (the read failed). */
static int read_at(walk *w, const tree *t, uint64_t pgno, uint64_t off, uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(w->fd, buf + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            w->io = errno;
            return 1;
        }
        if (n == 0) {
            problem(w, t, pgno, "the file ends before it (%zu of %zu bytes read)", got, len);
            return 1;
        }
        got += (size_t)n;
    }
    return 0;
}

/* Claims pages [pgno, pgno + n) for t: each inside the snapshot and not
 * reached before. 0, or 1 with the problem named. */
static int claim(walk *w, const tree *t, uint64_t pgno, uint64_t n, const char *what)
{
    if (pgno < 2 || pgno >= w->npages || n > w->npages - pgno) {
        problem(w, t, pgno,
                "%s is outside the file's pages (2 to %llu): a page number was "
                "overwritten",
                what, (unsigned long long)w->npages - 1);
        return 1;
    }
    for (uint64_t i = pgno; i < pgno + n; i++)
        if (w->seen[i >> 3] & (1u << (i & 7))) {
            problem(w, t, i, "%s is reached a second time: a page number was overwritten", what);
            return 1;
        }
    for (uint64_t i = pgno; i < pgno + n; i++)
        w->seen[i >> 3] |= (uint8_t)(1u << (i & 7));
    return 0;
}

/* LMDB's order: integer keys (the free list's) as numbers, others as
 * bytes, a shorter key first on a tie. */
static int cmp(const tree *t, key a, key b)
{
    if ((t->rec.flags & MDB_INTEGERKEY) && a.n == 8 && b.n == 8) {
        uint64_t x = rd64(a.p), y = rd64(b.p);
        return x < y ? -1 : x > y;
    }
    int c = memcmp(a.p, b.p, a.n < b.n ? a.n : b.n);
    return c ? c : a.n < b.n ? -1 : a.n > b.n;
}

/* The pages a free-list record names: none outside the file, in use, or
 * named twice. ids: a count, then the page numbers. */
static void check_free_ids(walk *w, const tree *t, uint64_t pgno, const uint8_t *ids, size_t len)
{
    uint64_t n = len >= 8 ? rd64(ids) : 0;
    if (len < 8 || len % 8 || n != len / 8 - 1) {
        problem(w, t, pgno,
                "a free-list record of %zu bytes does not hold the page count it "
                "starts with",
                len);
        return;
    }
    for (uint64_t i = 1; i <= n && !stop(w); i++) {
        uint64_t id = rd64(ids + 8 * i);
        if (claim(w, t, id, 1, "a free page"))
            return;
        w->out->free_pages++;
    }
}

/* The first page of the overflow run holding a value of dsize bytes;
 * for the free list, the value itself is read and checked. */
static void walk_overflow(walk *w, tree *t, uint64_t from, uint64_t pgno, uint32_t dsize)
{
    uint64_t pages = (HDR - 1 + (uint64_t)dsize) / w->psize + 1;
    if (claim(w, t, pgno, pages, "an overflow run"))
        return;
    const uint8_t *h = w->map + pgno * w->psize;
    if (rd64(h) != pgno || (rd16(h + 10) & ~P_TRANSIENT) != P_OVERFLOW || rd32(h + 12) != pages) {
        problem(w, t, pgno,
                "the overflow run of a %u-byte value on page %llu is not one (it says "
                "page %llu, flags 0x%x, %u pages; expected %llu)",
                dsize, (unsigned long long)from, (unsigned long long)rd64(h), rd16(h + 10),
                rd32(h + 12), (unsigned long long)pages);
        return;
    }
    t->overflow += pages;
    w->out->pages += pages;
    if (t->kind != T_FREE)
        return;
    check_free_ids(w, t, pgno, h + HDR, dsize); /* inside the run just claimed */
}

/* A named table found in the main table, walked after it. */
static void add_table(walk *w, tree *t, uint64_t pgno, key k, const uint8_t *rec)
{
    for (size_t i = 0; i < k.n; i++)
        if (k.p[i] < 0x21 || k.p[i] > 0x7e || k.n > NAME_MAX_LEN) {
            problem(w, t, pgno, "a table's name is not a name (%zu bytes)", k.n);
            return;
        }
    if (w->ntables == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->tables = kf_xrealloc(w->tables, w->cap * sizeof *w->tables);
    }
    named *nt = &w->tables[w->ntables++];
    memcpy(nt->name, k.p, k.n);
    nt->name[k.n] = '\0';
    rd_dbrec(rec, &nt->rec);
}

/* A leaf node's value, after its key: inside the page, or an overflow run;
 * a named table's record in the main table; free pages in the free list. */
static void leaf_value(walk *w, tree *t, uint64_t pgno, const uint8_t *p, unsigned off, unsigned i,
                       key k)
{
    const uint8_t *node = p + off;
    unsigned flags = rd16(node + 4);
    uint32_t dsize = rd16(node) | (uint32_t)rd16(node + 2) << 16;
    size_t at = off + NODE + k.n;
    if (flags & ~(F_BIGDATA | F_SUBDATA | F_DUPDATA) || (flags & F_DUPDATA) ||
        ((flags & F_SUBDATA) && (t->kind != T_MAIN || (flags & F_BIGDATA)))) {
        problem(w, t, pgno, "node %u has flags 0x%x, which no kfleet table uses", i, flags);
        return;
    }
    if (t->kind == T_FREE && k.n != 8) {
        problem(w, t, pgno, "node %u's key is %zu bytes; the free list's are 8", i, k.n);
        return;
    }
    if (flags & F_BIGDATA) {
        if (at + 8 > w->psize) {
            problem(w, t, pgno, "node %u's overflow page number runs past the page", i);
            return;
        }
        walk_overflow(w, t, pgno, rd64(p + at), dsize);
        return;
    }
    if (at + dsize > w->psize) {
        problem(w, t, pgno, "node %u's value (%u bytes) runs past the page", i, dsize);
        return;
    }
    if (flags & F_SUBDATA) {
        if (dsize != DBREC)
            problem(w, t, pgno, "node %u is a table record of %u bytes, not %d", i, dsize, DBREC);
        else
            add_table(w, t, pgno, k, p + at);
    } else if (t->kind == T_FREE) {
        check_free_ids(w, t, pgno, p + at, dsize);
    }
}

/* Node i's key, its bounds checked: 0, or 1 with the problem named. */
static int node_key(walk *w, const tree *t, uint64_t pgno, const uint8_t *p, unsigned upper,
                    unsigned i, unsigned *off, key *k)
{
    *off = rd16(p + HDR + 2 * i);
    if (*off < upper || *off % 2 || *off + NODE > w->psize) {
        problem(w, t, pgno, "node %u starts at byte %u, outside the page's nodes (%u to %u)", i,
                *off, upper, w->psize);
        return 1;
    }
    k->p = p + *off + NODE;
    k->n = rd16(p + *off + 6);
    if (*off + NODE + k->n > w->psize) {
        problem(w, t, pgno, "node %u's key (%zu bytes) runs past the page", i, k->n);
        return 1;
    }
    return 0;
}

static void walk_page(walk *w, tree *t, uint64_t pgno, unsigned level, key lo, key hi);

/* A branch's children, each with the key range its separators give it. */
static void walk_children(walk *w, tree *t, uint64_t pgno, const uint8_t *p, unsigned upper,
                          unsigned n, unsigned level, key lo, key hi)
{
    for (unsigned i = 0; i < n && !stop(w); i++) {
        unsigned off, noff;
        key k, next = hi, clo = lo;
        node_key(w, t, pgno, p, upper, i, &off, &k); /* checked by walk_page */
        if (i > 0)
            clo = k;
        if (i + 1 < n)
            node_key(w, t, pgno, p, upper, i + 1, &noff, &next);
        const uint8_t *node = p + off;
        uint64_t child =
            rd16(node) | (uint64_t)rd16(node + 2) << 16 | (uint64_t)rd16(node + 4) << 32;
        if (!claim(w, t, child, 1, "a child page"))
            walk_page(w, t, child, level + 1, clo, next);
    }
}

/* One branch or leaf page of t at level (1: the root), already claimed;
 * every key within [lo, hi). */
static void walk_page(walk *w, tree *t, uint64_t pgno, unsigned level, key lo, key hi)
{
    const uint8_t *p = w->map + pgno * w->psize;
    w->out->pages++;
    unsigned flags = rd16(p + 10) & ~P_TRANSIENT, lower = rd16(p + 12), upper = rd16(p + 14);
    if (rd64(p) != pgno) {
        problem(w, t, pgno, "its header says page %llu: the page was overwritten",
                (unsigned long long)rd64(p));
        return;
    }
    int branch = flags == P_BRANCH;
    if (!branch && flags != P_LEAF) {
        problem(w, t, pgno, "it is not a branch or leaf page (flags 0x%x)", flags);
        return;
    }
    if (branch != (level < t->rec.depth)) {
        problem(w, t, pgno, "a %s page at level %u of a tree %u deep", branch ? "branch" : "leaf",
                level, t->rec.depth);
        return;
    }
    unsigned n = lower >= HDR ? (lower - HDR) / 2 : 0;
    if (lower < HDR || (lower - HDR) % 2 || lower > upper || upper > w->psize ||
        n < (branch && t->kind != T_FREE ? 2u : 1u)) {
        problem(w, t, pgno, "its node table is broken (%u nodes, free space %u to %u of %u)", n,
                lower, upper, w->psize);
        return;
    }
    if (branch)
        t->branch++;
    else
        t->leaf++;
    key prev = {NULL, 0};
    for (unsigned i = 0; i < n && !stop(w); i++) {
        unsigned off;
        key k;
        if (node_key(w, t, pgno, p, upper, i, &off, &k))
            return;
        if (branch && i == 0)
            continue; /* a branch's first key is never compared */
        if (prev.p && cmp(t, prev, k) >= 0) {
            problem(w, t, pgno, "node %u's key is not after node %u's: keys out of order", i,
                    i - 1);
            return;
        }
        /* In order, the keys are all in range when the first and the last
         * are: one comparison a node, not three. */
        if ((lo.p && !prev.p && cmp(t, k, lo) < 0) || (hi.p && i + 1 == n && cmp(t, k, hi) >= 0)) {
            problem(w, t, pgno, "node %u's key is outside the range the parent page gives it", i);
            return;
        }
        prev = k;
        if (!branch) {
            uint32_t before = w->out->damaged;
            leaf_value(w, t, pgno, p, off, i, k);
            if (w->out->damaged != before)
                return; /* one problem a page: the rest of it is not to be trusted */
            t->entries++;
        }
    }
    if (branch && !stop(w))
        walk_children(w, t, pgno, p, upper, n, level, lo, hi);
}

/* A whole tree from its record; its counts compared with what was found. */
/* A table's record on its own, before its tree is read: 1 when there is
 * a tree to walk, 0 when it is empty or the record is damaged (a problem
 * named). Cheap: a reader's open checks every table's record this way. */
static int record_ok(walk *w, const tree *t)
{
    const dbrec *r = &t->rec;
    if (r->root == NO_PAGE) {
        if (r->depth || r->branch || r->leaf || r->overflow || r->entries)
            problem(w, t, NO_PAGE,
                    "its record names no root page, yet counts %llu records on %llu pages: LMDB "
                    "would read it as empty",
                    (unsigned long long)r->entries,
                    (unsigned long long)(r->branch + r->leaf + r->overflow));
        return 0;
    }
    if (r->depth < 1 || r->depth > MAX_DEPTH || r->root < 2 || r->root >= w->npages) {
        problem(w, t, NO_PAGE,
                "its record gives a depth of %u and root page %llu (the file has "
                "pages 2 to %llu)",
                r->depth, (unsigned long long)r->root, (unsigned long long)w->npages - 1);
        return 0;
    }
    if ((r->flags & ODD_TABLE_FLAGS) || (t->kind != T_FREE && (r->flags & MDB_INTEGERKEY))) {
        problem(w, t, NO_PAGE, "its record has flags 0x%x, which kfleet never sets", r->flags);
        return 0;
    }
    return 1;
}

/* A whole tree from its record; its counts compared with what was found. */
static void walk_tree(walk *w, tree *t)
{
    const dbrec *r = &t->rec;
    uint32_t before = w->out->damaged;
    if (!record_ok(w, t))
        return;
    key none = {NULL, 0};
    if (!claim(w, t, r->root, 1, "the root page"))
        walk_page(w, t, r->root, 1, none, none);
    if (w->out->damaged != before || w->io)
        return;
    if (t->branch != r->branch || t->leaf != r->leaf || t->overflow != r->overflow ||
        t->entries != r->entries)
        problem(w, t, r->root,
                "its tree holds %llu records on %llu+%llu+%llu pages, its record says %llu on "
                "%llu+%llu+%llu (branch+leaf+overflow): part of the tree is lost",
                (unsigned long long)t->entries, (unsigned long long)t->branch,
                (unsigned long long)t->leaf, (unsigned long long)t->overflow,
                (unsigned long long)r->entries, (unsigned long long)r->branch,
                (unsigned long long)r->leaf, (unsigned long long)r->overflow);
}

/* The meta page of the snapshot whose txnid is txnid: 0 and its table
 * records; 1 when neither meta page is that snapshot's (a writer has
 * committed twice since the transaction began: begin again); -1 when one
 * cannot be read (a problem named, or w->io set). */
static int read_meta(walk *w, uint64_t txnid, dbrec *freedb, dbrec *maindb)
{
    tree meta = {.name = "meta page"};
    for (uint64_t pg = 0; pg < 2; pg++) {
        uint8_t m[META_END];
        if (read_at(w, &meta, pg, pg * w->psize, m, sizeof m))
            return -1;
        if (rd64(m + META_TXNID) != txnid || rd32(m + HDR) != LMDB_MAGIC ||
            !(rd16(m + 10) & P_META))
            continue;
        rd_dbrec(m + META_DBS, freedb);
        rd_dbrec(m + META_DBS + DBREC, maindb);
        w->npages = rd64(m + META_LAST) + 1;
        return 0;
    }
    return 1;
}

/* The snapshot's tables, the main one first (it names the others), the
 * free list last (its pages must be in no table). */
static void walk_all(walk *w, int every, const dbrec *freedb, const dbrec *maindb)
{
    struct stat st;
    tree t = {.name = "the table of tables", .kind = T_MAIN, .rec = *maindb};
    if (fstat(w->fd, &st) != 0) {
        w->io = errno;
        return;
    }
    if ((uint64_t)st.st_size / w->psize < w->npages) {
        problem(w, &t, w->npages - 1, "the file holds %llu pages, its meta page counts %llu",
                (unsigned long long)st.st_size / w->psize, (unsigned long long)w->npages);
        return;
    }
    w->maplen = (size_t)(w->npages * w->psize);
    void *map = mmap(NULL, w->maplen, PROT_READ, MAP_SHARED, w->fd, 0);
    if (map == MAP_FAILED) {
        w->io = errno;
        return;
    }
    w->map = map;
    w->seen = kf_xcalloc(w->npages / 8 + 1, 1);
    w->seen[0] |= 3; /* the meta pages */
    walk_tree(w, &t);
    for (size_t i = 0; i < w->ntables && !stop(w); i++) {
        tree nt = {.kind = T_TABLE, .rec = w->tables[i].rec};
        snprintf(nt.name, sizeof nt.name, "table '%s'", w->tables[i].name);
        if (every)
            walk_tree(w, &nt);
        else
            record_ok(w, &nt);
        w->out->records += nt.entries;
        w->out->tables++;
    }
    tree ft = {.name = "the free-page list", .kind = T_FREE, .rec = *freedb};
    if (every && !stop(w))
        walk_tree(w, &ft);
    munmap(map, w->maplen);
    w->map = NULL;
}

static int layout_known(void)
{
    int major, minor;
    mdb_version(&major, &minor, NULL);
    uint16_t one = 1;
    uint8_t low;
    memcpy(&low, &one, 1);
    return major == 0 && minor == 9 && sizeof(size_t) == 8 && low == 1;
}

int kf_pagecheck_run(MDB_env *env, int every, unsigned max, kf_buf *problems, kf_pagecheck *out,
                     kf_err *err)
{
    memset(out, 0, sizeof *out);
    if (!layout_known()) {
        out->unsupported = 1;
        return KF_OK;
    }
    walk w = {.max = max ? max : 1, .problems = problems, .out = out};
    MDB_stat st;
    int rc = mdb_env_get_fd(env, &w.fd);
    if (rc == 0)
        rc = mdb_env_stat(env, &st);
    if (rc)
        return kf_err_set(err, KF_ESTORE, "cannot check the store's pages: %s", mdb_strerror(rc));
    w.psize = st.ms_psize;
    for (int tries = 0; tries < 8; tries++) {
        MDB_txn *txn;
        if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)))
            return kf_err_set(err, KF_ESTORE, "cannot check the store's pages: %s",
                              mdb_strerror(rc));
        dbrec freedb, maindb;
        rc = read_meta(&w, mdb_txn_id(txn), &freedb, &maindb);
        if (rc == 0)
            walk_all(&w, every, &freedb, &maindb);
        mdb_txn_abort(txn);
        if (rc != 1)
            break;
    }
    free(w.seen);
    free(w.tables);
    if (rc == 1)
        return kf_err_set(err, KF_ESTORE,
                          "cannot check the store's pages: neither meta page is the snapshot's, "
                          "eight times (a writer commits faster than the check reads them)");
    if (w.io)
        return kf_err_set(err, KF_EIO, "cannot read the store's pages: %s", strerror(w.io));
    return KF_OK;
}

/* ---- at open ---- */

int kf_pagecheck_file(const char *dir, long long *size, kf_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    struct stat st;
    *size = -1;
    if (stat(path, &st) != 0)
        return errno == ENOENT ? KF_OK
                               : kf_err_set(err, errno == EACCES ? KF_EINVAL : KF_ESTORE,
                                            "cannot read the store %s: %s", path, strerror(errno));
    *size = (long long)st.st_size;
    if (!S_ISREG(st.st_mode))
        return kf_err_set(err, KF_ESTORE, "the store %s is not a regular file; move it aside",
                          path);
    if (st.st_size == 0)
        return kf_err_set(err, KF_ESTORE,
                          "the store %s is empty (0 bytes): it was truncated, or its first write "
                          "never finished. kfleet will not take it for a new store (that would "
                          "reuse sweep ids). Restore it from a backup, or move the directory "
                          "aside to start a new one",
                          path);
    return KF_OK;
}

int kf_pagecheck_length(MDB_env *env, const char *dir, long long fsize, kf_err *err)
{
    MDB_envinfo info;
    MDB_stat est;
    mdb_env_info(env, &info);
    /* mdb_env_open read the meta pages with read(), not through the map:
     * compare the file with what they say it holds before any page is
     * touched. The size is read again now, after the meta: a coordinator
     * writing meanwhile grows the file before it writes the meta that
     * needs the growth, so the size read first may be older than the
     * meta (a store read by `kfleet verify` mid-sweep is not damaged). */
    char path[4096];
    struct stat fst;
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    if (stat(path, &fst) == 0)
        fsize = (long long)fst.st_size;
    if (mdb_env_stat(env, &est) != 0)
        return KF_OK;
    unsigned long long need = ((unsigned long long)info.me_last_pgno + 1) * est.ms_psize;
    if ((unsigned long long)fsize >= need)
        return KF_OK;
    return kf_err_set(err, KF_ESTORE,
                      "the store %s/data.mdb is damaged: %lld bytes on disk, its records need "
                      "%llu (the file was truncated or copied while written). Restore it from a "
                      "backup, or move the directory aside to start a new one",
                      dir, fsize, need);
}

int kf_pagecheck_open(MDB_env *env, const char *dir, long long fsize, int every, kf_err *err)
{
    if (fsize < 0)
        return KF_OK; /* a new store */
    int rc = kf_pagecheck_length(env, dir, fsize, err);
    if (rc)
        return rc;
    kf_buf first = KF_BUF_INIT;
    kf_pagecheck pc;
    rc = kf_pagecheck_run(env, every, 1, &first, &pc, err);
    if (rc == KF_OK && pc.damaged) {
        if (first.len && first.data[first.len - 1] == '\n')
            first.data[--first.len] = '\0';
        rc = kf_err_set(err, KF_ESTORE,
                        "the store %s/data.mdb is damaged: %s. kfleet will not read it: read as "
                        "it is, it could crash kfleet, or show sweeps as missing (and a "
                        "coordinator would reuse their ids). Nothing in it was changed. `kfleet "
                        "verify --store` lists all the damage; restore "
                        "the store from a backup, or move the directory aside (mv %s %s.damaged) "
                        "to start a new one",
                        dir, first.data, dir, dir);
    }
    kf_buf_release(&first);
    return rc;
}
