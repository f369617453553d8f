/* ssl_io.c — interposes OpenSSL's calls through which a server reads requests and writes
 * responses over TLS (SSL_read, SSL_read_ex, SSL_write, SSL_write_ex, SSL_sendfile; SSL_peek and
 * SSL_peek_ex), and those that end or rebind a TLS connection (SSL_free, SSL_clear, SSL_set_fd,
 * SSL_set_rfd, SSL_set_wfd, SSL_set_bio, SSL_set0_rbio, SSL_set0_wbio), for HTTP reading
 * (PROFLINK_HTTP=1): the plaintext goes to the same request/response tracking as what
 * hooks/http_io.c sees on plain connections (http_conn.h, http_thread.h).
 *
 * Which connection: the SSL object's descriptor (SSL_get_rfd, SSL_get_wfd), when it is one the
 * program accepted and whose first bytes were a TLS record (http_conn.c marks it tls: its own
 * reads and writes carry ciphertext, never scanned; with kernel TLS they carry the plaintext
 * SSL_read also returns, and are not scanned either, so no byte counts twice). A server-side SSL
 * object without a descriptor (memory BIOs: Python's asyncio) gets a connection slot of its own
 * here, keyed by the object, from its first read to SSL_free. Client-side ones (a service's own
 * HTTPS calls) and descriptors the program did not accept are not read.
 *
 * libssl is never loaded, linked or looked up by proflink: these definitions are only reached
 * when the program calls them, that is, when its libssl is loaded; the next definitions (and
 * SSL_get_rfd, SSL_get_wfd, SSL_is_server) are found then, for each calling object. A program
 * without libssl never runs any of this, and its start resolves no symbol more.
 *
 * Not seen: bytes read or written through an SSL BIO (BIO_f_ssl: OpenSSL's internal calls),
 * OpenSSL linked into the program (its calls bind inside it), other TLS libraries.
 *
 * Preload builds only (static programs have no symbol precedence to interpose by). */
#ifndef PROFLINK_STATIC
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "http/http_conn.h"
#include "http/http_thread.h"
#include "leaves/export.h"
#include "leaves/runtime_state.h"
#include "leaves/str.h"
#include "leaves/sys_calls.h"

typedef struct ssl_st SSL; /* opaque: no OpenSSL header is needed to build */
typedef struct bio_st BIO;

/* ---- OpenSSL's definitions, found on first use ------------------------------------------- */

/* OpenSSL's definition of name for a call from return address ret: the one the caller would
 * have bound to without this library. There can be several: a libssl loaded as the dependency
 * of a module opened RTLD_LOCAL (Python's _ssl) is not in the global scope that
 * dlsym(RTLD_NEXT) searches, and a process may hold two copies (the system's and one bundled
 * with a Python wheel), each with its own objects. So the calling object is found
 * (dl_iterate_phdr) and the name looked up in its own dependency scope (dlopen with
 * RTLD_NOLOAD: never loads anything), which this library is not part of; a call from the
 * program itself, whose scope is the global one, takes dlsym(RTLD_NEXT). Each symbol keeps
 * the answers for a few calling objects (their address ranges): one compare per call. */
struct caller {
    uintptr_t lo, hi;
    const char *path; /* "" for the program */
};

static int find_caller(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct caller *c = arg;
    uintptr_t want = c->lo, lo = UINTPTR_MAX, hi = 0;
    int in = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr, z = a + ph->p_memsz;
        lo = a < lo ? a : lo;
        hi = z > hi ? z : hi;
        in |= want >= a && want < z;
    }
    if (!in)
        return 0;
    c->lo = lo;
    c->hi = hi;
    c->path = info->dlpi_name ? info->dlpi_name : "";
    return 1;
}

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

static void *lookup_for(const char *name, uintptr_t ret, uintptr_t *lo, uintptr_t *hi)
{
    struct caller c = {ret, 0, 0};
    if (!dl_iterate_phdr(find_caller, &c)) {
        *lo = *hi = 0;
        return dlsym(RTLD_NEXT, name);
    }
    *lo = c.lo;
    *hi = c.hi;
    void *fn = 0;
    if (c.path[0]) {
        /* dlopen and dlclose through dlsym: the library names no symbol more than before, so
         * a program's start resolves no more (they are looked up here only, in a program that
         * calls OpenSSL) */
        dlopen_fn open_ = (dlopen_fn)dlsym(RTLD_DEFAULT, "dlopen");
        dlclose_fn close_ = (dlclose_fn)dlsym(RTLD_DEFAULT, "dlclose");
        void *h = open_ ? open_(c.path, RTLD_LAZY | RTLD_NOLOAD) : 0;
        if (h) {
            fn = dlsym(h, name);
            if (close_)
                close_(h); /* the reference RTLD_NOLOAD took; the object stays */
        }
    }
    return fn ? fn : dlsym(RTLD_NEXT, name);
}

#define SSL_CALLERS 4

struct next_fn {
    _Atomic uintptr_t lo[SSL_CALLERS], hi[SSL_CALLERS];
    void *_Atomic fn[SSL_CALLERS];
    _Atomic unsigned used;
};

static void *next_for(struct next_fn *n, const char *name, uintptr_t ret)
{
    unsigned used = atomic_load_explicit(&n->used, memory_order_acquire);
    for (unsigned i = 0; i < used && i < SSL_CALLERS; i++)
        if (ret >= atomic_load_explicit(&n->lo[i], memory_order_relaxed) &&
            ret < atomic_load_explicit(&n->hi[i], memory_order_relaxed))
            return atomic_load_explicit(&n->fn[i], memory_order_relaxed);
    uintptr_t lo, hi;
    void *fn = lookup_for(name, ret, &lo, &hi);
    if (!fn || hi <= lo)
        return fn;
    /* an entry is claimed, then written, then counted: a reader sees whole entries only. Past
     * SSL_CALLERS callers (or when two threads race for one entry), the answer is looked up
     * again at the next call: slower, never wrong. */
    uintptr_t free_ = 0;
    unsigned i = used;
    if (i < SSL_CALLERS &&
        atomic_compare_exchange_strong_explicit(&n->lo[i], &free_, lo, memory_order_relaxed,
                                                memory_order_relaxed)) {
        atomic_store_explicit(&n->fn[i], fn, memory_order_relaxed);
        atomic_store_explicit(&n->hi[i], hi, memory_order_relaxed);
        atomic_store_explicit(&n->used, i + 1, memory_order_release);
    }
    return fn;
}

/* next_<name>(): OpenSSL's <name> for the caller of the hook that calls it (always_inline:
 * the return address is the hook's). */
#define SSL_NEXT(type, name)                                                                   \
    static struct next_fn next_fn_##name;                                                      \
    __attribute__((always_inline)) static inline type next_##name(uintptr_t ret)               \
    {                                                                                          \
        return (type)next_for(&next_fn_##name, #name, ret);                                    \
    }
/* The range of this library's own code, found once (0, 0 until then). Relaxed: a thread that
 * sees lo before hi takes every caller as outside, as before the range was known. */
static _Atomic uintptr_t self_lo, self_hi;

/* The return address of the hook this thread last entered from outside this library. */
static __thread uintptr_t outer_ret __attribute__((tls_model("initial-exec")));

/* The caller whose OpenSSL a hook must call, from the hook's return address ret. OpenSSL calls
 * its own exported functions through its PLT, so a hook can be entered from inside OpenSSL:
 * SSL_set_fd calls SSL_set_bio, which calls SSL_set0_rbio and SSL_set0_wbio. When such an
 * inner call is a tail call (a jump), its return address is the outer hook's, inside this
 * library, and this library's own scope would find the hook itself: an endless loop. Such a
 * call takes the caller of the hook this thread entered from outside (a thread runs one
 * OpenSSL call chain at a time). */
static uintptr_t caller_of(uintptr_t ret)
{
    uintptr_t lo = atomic_load_explicit(&self_lo, memory_order_relaxed);
    if (__builtin_expect(lo == 0, 0)) {
        struct caller self = {(uintptr_t)&caller_of, 0, 0};
        if (dl_iterate_phdr(find_caller, &self)) {
            atomic_store_explicit(&self_hi, self.hi, memory_order_relaxed);
            atomic_store_explicit(&self_lo, self.lo, memory_order_relaxed);
            lo = self.lo;
        }
    }
    if (ret >= lo && ret < atomic_load_explicit(&self_hi, memory_order_relaxed))
        return outer_ret;
    outer_ret = ret;
    return ret;
}
#define CALLER caller_of((uintptr_t)__builtin_return_address(0))

typedef int (*read_fn)(SSL *, void *, int);
typedef int (*read_ex_fn)(SSL *, void *, size_t, size_t *);
typedef int (*write_fn)(SSL *, const void *, int);
typedef int (*write_ex_fn)(SSL *, const void *, size_t, size_t *);
typedef ssize_t (*sendfile_fn)(SSL *, int, off_t, size_t, int);
typedef void (*free_fn)(SSL *);
typedef int (*clear_fn)(SSL *);
typedef int (*set_fd_fn)(SSL *, int);
typedef void (*set_bio_fn)(SSL *, BIO *, BIO *);
typedef void (*set0_bio_fn)(SSL *, BIO *);
typedef int (*get_fd_fn)(const SSL *);

SSL_NEXT(read_fn, SSL_read)
SSL_NEXT(read_ex_fn, SSL_read_ex)
SSL_NEXT(read_fn, SSL_peek)
SSL_NEXT(read_ex_fn, SSL_peek_ex)
SSL_NEXT(write_fn, SSL_write)
SSL_NEXT(write_ex_fn, SSL_write_ex)
SSL_NEXT(sendfile_fn, SSL_sendfile)
SSL_NEXT(free_fn, SSL_free)
SSL_NEXT(clear_fn, SSL_clear)
SSL_NEXT(set_fd_fn, SSL_set_fd)
SSL_NEXT(set_fd_fn, SSL_set_rfd)
SSL_NEXT(set_fd_fn, SSL_set_wfd)
SSL_NEXT(set_bio_fn, SSL_set_bio)
SSL_NEXT(set0_bio_fn, SSL_set0_rbio)
SSL_NEXT(set0_bio_fn, SSL_set0_wbio)
SSL_NEXT(get_fd_fn, SSL_get_rfd)
SSL_NEXT(get_fd_fn, SSL_get_wfd)
SSL_NEXT(get_fd_fn, SSL_is_server)
typedef BIO *(*get_bio_fn)(const SSL *);
SSL_NEXT(get_bio_fn, SSL_get_rbio)
SSL_NEXT(get_bio_fn, SSL_get_wbio)

/* ---- connections without a descriptor (memory BIOs) --------------------------------------- */

/* An open-addressing table keyed by the SSL object, reserved on first use (mmap, no allocator
 * lock in a hook; MAP_NORESERVE: only the slots used are committed). A slot's key becomes
 * FREED at SSL_free and the slot is reused by a later object; like the descriptor table's,
 * slots are never unmapped, and a thread's note on a reused slot is stale by its generation.
 * An object that finds no room within DETACHED_PROBES slots is not read (missed, never
 * wrong). */
#define DETACHED_SLOTS 8192u
#define DETACHED_PROBES 16u
#define FREED ((uintptr_t)1)

struct detached {
    _Atomic uintptr_t key;
    struct http_conn c;
};

static struct detached *_Atomic detached_table;

static struct detached *detached_slots(int create)
{
    struct detached *t = atomic_load_explicit(&detached_table, memory_order_acquire);
    if (t || !create)
        return t;
    size_t len = sizeof(struct detached) * DETACHED_SLOTS;
    void *m = sys_mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
    if (m == MAP_FAILED)
        return 0;
    struct detached *expected = 0;
    if (atomic_compare_exchange_strong_explicit(&detached_table, &expected, m,
                                                memory_order_acq_rel, memory_order_acquire))
        return m;
    sys_munmap(m, len);
    return expected;
}

static size_t detached_hash(const SSL *s)
{
    uint64_t x = (uint64_t)(uintptr_t)s;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x;
}

/* The slot of s (an object is used by one thread at a time: no other thread adds or frees the
 * same key meanwhile); with create, a new one when it has none. */
static struct detached *detached_find(const SSL *s, int create)
{
    struct detached *t = detached_slots(create);
    if (!t)
        return 0;
    size_t h = detached_hash(s), room = SIZE_MAX;
    for (unsigned i = 0; i < DETACHED_PROBES; i++) {
        size_t at = (h + i) & (DETACHED_SLOTS - 1);
        uintptr_t k = atomic_load_explicit(&t[at].key, memory_order_acquire);
        if (k == (uintptr_t)s)
            return &t[at];
        if ((k == 0 || k == FREED) && room == SIZE_MAX)
            room = at;
        if (k == 0)
            break;
    }
    if (!create || room == SIZE_MAX)
        return 0;
    uintptr_t was = atomic_load_explicit(&t[room].key, memory_order_relaxed);
    if ((was != 0 && was != FREED) ||
        !atomic_compare_exchange_strong_explicit(&t[room].key, &was, (uintptr_t)s,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return 0;
    http_conn_start(&t[room].c, 0);
    atomic_store_explicit(&t[room].c.tls, 2, memory_order_release); /* plaintext only */
    atomic_store_explicit(&http_conn_tls_detached, 1, memory_order_relaxed);
    return &t[room];
}

/* ---- which connection an SSL object's bytes belong to ------------------------------------- */

/* The descriptors of the SSL objects seen, so that each call does not ask OpenSSL again
 * (SSL_get_rfd walks the BIO chain and makes a BIO_ctrl call: 150 instructions, a third of the
 * cost a TLS connection that is not HTTP paid per SSL_read, callgrind on bench/https_io.c). An
 * entry is made at an object's first read or write and dropped where the object's descriptor
 * can change (unbind: SSL_free, SSL_clear, SSL_set_*), before the call; an object whose entry
 * finds no room asks OpenSSL every time. Same layout rules as the detached table. */
#define FDS_SLOTS 16384u
#define FDS_PROBES 8u

struct fds {
    _Atomic uintptr_t key;
    _Atomic int rfd, wfd;
};

static struct fds *_Atomic fds_table;

static struct fds *fds_find(const SSL *s, int create)
{
    struct fds *t = atomic_load_explicit(&fds_table, memory_order_acquire);
    if (!t) {
        if (!create)
            return 0;
        size_t len = sizeof(struct fds) * FDS_SLOTS;
        void *m = sys_mmap(0, len, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return 0;
        struct fds *expected = 0;
        if (atomic_compare_exchange_strong_explicit(&fds_table, &expected, m,
                                                    memory_order_acq_rel, memory_order_acquire))
            t = m;
        else {
            sys_munmap(m, len);
            t = expected;
        }
    }
    size_t h = detached_hash(s), room = SIZE_MAX;
    for (unsigned i = 0; i < FDS_PROBES; i++) {
        size_t at = (h + i) & (FDS_SLOTS - 1);
        uintptr_t k = atomic_load_explicit(&t[at].key, memory_order_acquire);
        if (k == (uintptr_t)s)
            return &t[at];
        if ((k == 0 || k == FREED) && room == SIZE_MAX)
            room = at;
        if (k == 0)
            break;
    }
    if (!create || room == SIZE_MAX)
        return 0;
    uintptr_t was = atomic_load_explicit(&t[room].key, memory_order_relaxed);
    if ((was != 0 && was != FREED) ||
        !atomic_compare_exchange_strong_explicit(&t[room].key, &was, (uintptr_t)s,
                                                 memory_order_acq_rel, memory_order_relaxed))
        return 0;
    atomic_store_explicit(&t[room].rfd, -2, memory_order_relaxed); /* -2: not asked yet */
    atomic_store_explicit(&t[room].wfd, -2, memory_order_relaxed);
    return &t[room];
}

/* s's read (or write) descriptor, -1 for none. */
static int fd_of(SSL *s, int writing, uintptr_t ret)
{
    struct fds *f = fds_find(s, 1);
    int fd = f ? atomic_load_explicit(writing ? &f->wfd : &f->rfd, memory_order_relaxed) : -2;
    if (fd != -2)
        return fd;
    /* SSL_get_rfd of an object without a BIO puts an error on the thread's OpenSSL error
     * queue (BIO_find_type(NULL)), which the program's next SSL_get_error would report as its
     * own: the BIO is looked at first, and an object without one has no descriptor */
    get_bio_fn bio = writing ? next_SSL_get_wbio(ret) : next_SSL_get_rbio(ret);
    get_fd_fn get = writing ? next_SSL_get_wfd(ret) : next_SSL_get_rfd(ret);
    fd = bio && get && bio(s) ? get(s) : -1;
    fd = fd < 0 ? -1 : fd;
    if (f)
        atomic_store_explicit(writing ? &f->wfd : &f->rfd, fd, memory_order_relaxed);
    return fd;
}

/* The connection whose plaintext s carries, or NULL: nothing to read (reading off, a
 * descriptor not accepted or not TLS, a client-side object, a connection no longer followed).
 * *fd: the descriptor (-1: none). A first read of a server-side object without a descriptor
 * starts its slot (create). */
static struct http_conn *conn_of(SSL *s, int writing, int create, int *fd, uintptr_t ret)
{
    if (!atomic_load_explicit(&http_reading, memory_order_relaxed) || !s)
        return 0;
    *fd = fd_of(s, writing, ret);
    struct http_conn *c;
    if (*fd >= 0) {
        c = http_conn_find(*fd);
        if (!c || !atomic_load_explicit(&c->tls, memory_order_relaxed))
            return 0;
    } else {
        get_fd_fn server = next_SSL_is_server(ret);
        if (!server || server(s) != 1)
            return 0;
        struct detached *d = detached_find(s, create);
        if (!d)
            return 0;
        c = &d->c;
    }
    return atomic_load_explicit(&c->lost, memory_order_relaxed) ? 0 : c;
}

/* The TLS stream on descriptor fd ended: its connection is not followed any more, unless the
 * number was closed already and now names another socket (an SSL object freed after its
 * descriptor was closed). */
static void stream_ends(int fd)
{
    struct http_conn *c = fd >= 0 ? http_conn_find(fd) : 0;
    if (!c || !atomic_load_explicit(&c->tls, memory_order_relaxed))
        return;
    struct stat st;
    if (c->ino && !runtime_sandboxed() &&
        (sys_fstat(fd, &st) != 0 || (uint64_t)st.st_ino != c->ino))
        return;
    http_conn_lost(c);
}

/* An SSL object was given descriptor fd (ok: the call's result, returned): a connection the
 * program accepted is TLS from now on, its plaintext followed through OpenSSL (tls 2), before
 * its first bytes (the handshake) are read, so that no thread reading them for OpenSSL is taken
 * for one working on a connection it cannot see (http_conn_dark). */
static int bound(int fd, int ok)
{
    if (ok != 1 || fd < 0 || !atomic_load_explicit(&http_reading, memory_order_relaxed))
        return ok;
    struct http_conn *c = http_conn_find(fd);
    if (c && atomic_load_explicit(&c->tls, memory_order_relaxed) != 2)
        atomic_store_explicit(&c->tls, 2, memory_order_release);
    return ok;
}

/* s was given read BIO r: bound() for its descriptor. A server-side object whose BIO has none
 * (memory BIOs: asyncio) will have its plaintext followed on a slot of its own, so TLS
 * connections never bound are not dark in this process (http_conn_tls_detached), from before
 * the first such object's handshake is read. */
static void bound_bio(SSL *s, BIO *r, uintptr_t ret)
{
    if (!r || !atomic_load_explicit(&http_reading, memory_order_relaxed))
        return;
    get_fd_fn get = next_SSL_get_rfd(ret); /* r is not NULL: asking raises no error */
    int fd = get ? get(s) : -1;
    if (fd >= 0) {
        bound(fd, 1);
        return;
    }
    get_fd_fn server = next_SSL_is_server(ret);
    if (server && server(s) == 1 &&
        !atomic_load_explicit(&http_conn_tls_detached, memory_order_relaxed))
        atomic_store_explicit(&http_conn_tls_detached, 1, memory_order_relaxed);
}

/* s stops carrying its connection's plaintext (SSL_free, SSL_clear, a new descriptor or BIO):
 * a slot of its own is freed, and a descriptor's connection whose TLS stream ends this way is
 * not followed any more (what comes next on it, if anything, is not that stream). Its open
 * requests end. */
static void unbind(SSL *s)
{
    if (!s || !atomic_load_explicit(&http_reading, memory_order_relaxed))
        return;
    int saved = errno;
    /* the descriptors this object had when it last read or wrote (none asked of OpenSSL: an
     * object being set up has no BIO yet, and asking would leave an error on its queue) */
    struct fds *f = fds_find(s, 0);
    int rfd = -1, wfd = -1;
    if (f) {
        rfd = atomic_load_explicit(&f->rfd, memory_order_relaxed);
        wfd = atomic_load_explicit(&f->wfd, memory_order_relaxed);
        atomic_store_explicit(&f->key, FREED, memory_order_release);
    }
    struct detached *d = detached_find(s, 0);
    if (d) {
        http_conn_close(&d->c);
        atomic_store_explicit(&d->key, FREED, memory_order_release);
    } else if (atomic_load_explicit(&http_conn_live, memory_order_relaxed)) {
        stream_ends(rfd);
        if (wfd != rfd)
            stream_ends(wfd);
    }
    http_thread_sync();
    errno = saved;
}

/* ---- around the calls --------------------------------------------------------------------- */

static void after_read(struct http_conn *c, int fd, const void *buf, size_t got)
{
    int saved = errno;
    uint32_t gen = 0, newest = got ? http_conn_feed_tls(c, fd, buf, got, &gen) : 0;
    if (newest)
        http_thread_read(c, gen, newest);
    else
        http_thread_sync();
    errno = saved;
}

static void after_write(struct http_conn *c, const void *buf, size_t put, int unseen,
                        uint32_t gen, uint32_t adopt)
{
    int saved = errno;
    int between = 1;
    if (put && unseen)
        between = http_conn_wrote_unseen_tls(c, put);
    else if (put)
        between = http_conn_wrote_tls(c, buf, put, http_thread_heads_before);
    http_thread_wrote(c, gen, put ? adopt : 0, between);
    errno = saved;
}

PROFLINK_EXPORT int SSL_read(SSL *s, void *buf, int n)
{
    int fd, got = next_SSL_read(CALLER)(s, buf, n);
    struct http_conn *c = got > 0 ? conn_of(s, 0, 1, &fd, CALLER) : 0;
    if (__builtin_expect(c != 0, 0))
        after_read(c, fd, buf, (size_t)got);
    return got;
}

PROFLINK_EXPORT int SSL_read_ex(SSL *s, void *buf, size_t n, size_t *got)
{
    int fd, ok = next_SSL_read_ex(CALLER)(s, buf, n, got);
    struct http_conn *c = ok == 1 && got && *got ? conn_of(s, 0, 1, &fd, CALLER) : 0;
    if (__builtin_expect(c != 0, 0))
        after_read(c, fd, buf, *got);
    return ok;
}

/* Peeked bytes come again: they are seen once, when SSL_read takes them. */
PROFLINK_EXPORT int SSL_peek(SSL *s, void *buf, int n) { return next_SSL_peek(CALLER)(s, buf, n); }

PROFLINK_EXPORT int SSL_peek_ex(SSL *s, void *buf, size_t n, size_t *got)
{
    return next_SSL_peek_ex(CALLER)(s, buf, n, got);
}

/* A write that failed reported nothing written (OpenSSL takes the same buffer again and then
 * reports all of it): only the bytes a call reports are new. */
PROFLINK_EXPORT int SSL_write(SSL *s, const void *buf, int n)
{
    int fd;
    struct http_conn *c = conn_of(s, 1, 0, &fd, CALLER);
    if (__builtin_expect(!c, 1))
        return next_SSL_write(CALLER)(s, buf, n);
    uint32_t gen = 0, adopt = http_thread_adoptable_tls(c, &gen);
    int put = next_SSL_write(CALLER)(s, buf, n);
    after_write(c, buf, put > 0 ? (size_t)put : 0, 0, gen, adopt);
    return put;
}

PROFLINK_EXPORT int SSL_write_ex(SSL *s, const void *buf, size_t n, size_t *put)
{
    int fd;
    struct http_conn *c = conn_of(s, 1, 0, &fd, CALLER);
    if (__builtin_expect(!c, 1))
        return next_SSL_write_ex(CALLER)(s, buf, n, put);
    uint32_t gen = 0, adopt = http_thread_adoptable_tls(c, &gen);
    int ok = next_SSL_write_ex(CALLER)(s, buf, n, put);
    after_write(c, buf, ok == 1 && put ? *put : 0, 0, gen, adopt);
    return ok;
}

/* A file's bytes through kernel TLS: body bytes of the response, counted without being seen
 * (its inner sendfile on the descriptor is not counted: the connection is tls). */
PROFLINK_EXPORT ssize_t SSL_sendfile(SSL *s, int in, off_t off, size_t n, int flags)
{
    int fd;
    struct http_conn *c = conn_of(s, 1, 0, &fd, CALLER);
    if (__builtin_expect(!c, 1))
        return next_SSL_sendfile(CALLER)(s, in, off, n, flags);
    uint32_t gen = 0, adopt = http_thread_adoptable_tls(c, &gen);
    ssize_t put = next_SSL_sendfile(CALLER)(s, in, off, n, flags);
    after_write(c, 0, put > 0 ? (size_t)put : 0, 1, gen, adopt);
    return put;
}

PROFLINK_EXPORT void SSL_free(SSL *s)
{
    unbind(s);
    next_SSL_free(CALLER)(s);
}

PROFLINK_EXPORT int SSL_clear(SSL *s)
{
    unbind(s);
    return next_SSL_clear(CALLER)(s);
}

PROFLINK_EXPORT int SSL_set_fd(SSL *s, int fd)
{
    unbind(s);
    return bound(fd, next_SSL_set_fd(CALLER)(s, fd));
}

PROFLINK_EXPORT int SSL_set_rfd(SSL *s, int fd)
{
    unbind(s);
    return bound(fd, next_SSL_set_rfd(CALLER)(s, fd));
}

PROFLINK_EXPORT int SSL_set_wfd(SSL *s, int fd)
{
    unbind(s);
    return next_SSL_set_wfd(CALLER)(s, fd);
}

PROFLINK_EXPORT void SSL_set_bio(SSL *s, BIO *r, BIO *w)
{
    uintptr_t ret = CALLER;
    unbind(s);
    next_SSL_set_bio(ret)(s, r, w);
    bound_bio(s, r, ret);
}

PROFLINK_EXPORT void SSL_set0_rbio(SSL *s, BIO *r)
{
    uintptr_t ret = CALLER;
    unbind(s);
    next_SSL_set0_rbio(ret)(s, r);
    bound_bio(s, r, ret);
}

PROFLINK_EXPORT void SSL_set0_wbio(SSL *s, BIO *w)
{
    unbind(s);
    next_SSL_set0_wbio(CALLER)(s, w);
}

#else
typedef int ssl_io_not_in_static_builds;
#endif
