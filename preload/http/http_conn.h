/* http_conn.h — per-descriptor state of the stream connections the program accepted, for
 * reading their requests' traceparent (PROFLINK_HTTP=1). A two-level table indexed by the
 * descriptor number: a descriptor that is not an accepted stream costs one load of a global
 * counter (none tracked) or the table walk, no lock, no system call. Slots are never freed
 * (they are reused by the next connection with the same number), so a thread still holding one
 * while another closes the descriptor never touches freed memory.
 *
 * A request is open from the end of its head (read) to the end of its final response
 * (written): requests are numbered per slot (heads: the newest read, dones: the newest
 * answered), so "request seq is still open" is one comparison any thread can make, and
 * pipelined requests wait in a small queue for their responses, which take them in order. */
#ifndef PROFLINK_HTTP_CONN_H
#define PROFLINK_HTTP_CONN_H

#include <stdatomic.h>
#include <stdint.h>

#include "http_scan.h"
#include "leaves/ids.h"

/* Descriptors are ints: 2^15 top entries of 2^16 slots each cover them all. A leaf is reserved
 * (not committed) memory; only the pages of descriptors in use are ever touched. */
#define HTTP_CONN_LEAF_BITS 16
#define HTTP_CONN_TOP (1u << (31 - HTTP_CONN_LEAF_BITS))
/* Requests one connection may have open at once: a pipelining client sends a few ahead. A
 * connection with more is no longer followed (its requests end for every thread). */
#define HTTP_CONN_QUEUE 8

struct http_req {
    struct trace_ctx ctx; /* present = 0: the head had no valid traceparent */
    uint8_t no_body;      /* a HEAD request: its response has no body */
};

struct http_conn {
    _Atomic uint8_t tracked; /* an accepted stream socket, not yet closed */
    _Atomic uint8_t busy;    /* one thread scans reads at a time; the others skip (never wait) */
    _Atomic uint8_t wbusy;   /* the same for writes */
    _Atomic uint8_t lost;    /* bytes went by unseen: stop following, no request is open */
    _Atomic uint8_t tls;     /* a TLS record began it: the plaintext comes from the SSL hooks
                              * (hooks/ssl_io.c, the *_tls calls below); what read and write
                              * move on it (ciphertext, or kTLS plaintext SSL_read also
                              * returns) is never scanned, and a plain write adopts nothing */
    _Atomic uint32_t gen;    /* changes when the slot's connection changes or is lost */
    _Atomic uint32_t heads;  /* number of the newest request head read on the slot */
    _Atomic uint32_t dones;  /* number of the newest request whose response was written */
    uint64_t ino;            /* the socket's inode, recorded at accept (0: not recorded) */
    int64_t checked_ns;      /* when ino was last found on the descriptor (reading thread only) */
    uint32_t reads;          /* reads fed so far (reading thread only) */
    uint32_t head_read;      /* which of them completed the newest head (reading thread only) */
    struct http_req reqs[HTTP_CONN_QUEUE]; /* request n in reqs[n % HTTP_CONN_QUEUE] */
    struct http_scan scan;   /* what the program reads */
    struct http_scan resp;   /* what it writes */
    _Atomic uint8_t h2;      /* enum h2_mode (h2_conn.h): HTTP/1.x or HTTP/2, by the first bytes */
    struct h2_conn *h2state; /* HTTP/2 streams (h2_conn.c), kept for the descriptor's next one */
};

/* 1 when PROFLINK_HTTP asked for it and proflink is active (set once at start). Exported so
 * that proflink-inspect can read it from outside (its address is in the dynamic symbol table). */
extern _Atomic uint32_t proflink_http_reading;
/* the same flag, by the name the library reads it (export.h: PROFLINK_LOCAL_ALIAS) */
extern _Atomic uint32_t http_reading __attribute__((visibility("hidden")));
/* Set once a server-side OpenSSL object behind memory BIOs (no descriptor: asyncio) has been
 * read (ssl_io.c): its plaintext is followed on a connection of its own, which cannot be tied
 * to the socket whose ciphertext the program reads. */
extern _Atomic uint8_t http_conn_tls_detached;
/* How many descriptors are tracked: 0 makes every lookup one load. */
extern _Atomic long http_conn_live;
/* Set by http_conn_feed and http_conn_wrote when the call leaves the calling thread unable to
 * know which request it works on although c is still followed (HTTP/2: a stream opened beside
 * another, a client's reset of an open stream, bytes of a connection whose open streams are not
 * shown; h2_conn.h); http_thread_touched makes the thread unsure and clears it. */
extern __thread uint8_t http_conn_unsure
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

void http_conn_enable(void);

/* The slot of an accepted stream fd, or NULL (most descriptors: the fast path). */
struct http_conn *http_conn_find_slow(int fd);
static inline struct http_conn *http_conn_find(int fd)
{
    if (__builtin_expect(atomic_load_explicit(&http_conn_live, memory_order_relaxed) == 0, 1))
        return 0;
    return http_conn_find_slow(fd);
}

/* fd was just accepted (a stream socket whose inode is ino, 0 if unknown): start tracking it.
 * Silently does nothing when out of memory. */
void http_conn_open(int fd, uint64_t ino);
/* Starts following c as a new connection (the socket's inode ino, 0 if unknown): what
 * http_conn_open does to the descriptor's slot, for a slot of the caller's own (ssl_io.c: a TLS
 * connection behind memory BIOs, which has no descriptor). */
void http_conn_start(struct http_conn *c, uint64_t ino);
/* fd is about to be closed: stop tracking it; its open requests end. */
void http_conn_close(struct http_conn *c);
/* Descriptors lo..hi are about to be closed (close_range, closefrom) or replaced: stop
 * tracking every one of them. Walks only the table's allocated leaves. */
void http_conn_close_range(unsigned lo, unsigned hi);

/* Feeds bytes the program read from c (descriptor fd); more is 0 for the first piece of a
 * call, 1 for the next pieces of the same call (readv). Returns the number of the newest
 * request whose head this read completed, 0 if none, and sets *gen to the slot's generation.
 * A read that is not seen whole (another thread is scanning c: this one does not wait) makes
 * c lost. */
uint32_t http_conn_feed(struct http_conn *c, int fd, const uint8_t *p, size_t n, int more,
                        uint32_t *gen);
/* Feeds bytes the program wrote to c: responses end their requests. heads_before: c->heads
 * before the write began (a response answers a request read before it). Returns 1 when c is
 * between responses after them (or lost, or another thread writes), 0 inside a response. */
int http_conn_wrote(struct http_conn *c, const uint8_t *p, size_t n, uint32_t heads_before);
/* n bytes went to c that cannot be seen (sendfile): body bytes, or c is lost. Returns as
 * http_conn_wrote. */
int http_conn_wrote_unseen(struct http_conn *c, uint64_t n);
/* The same three for the plaintext of a TLS connection (SSL_read, SSL_write, SSL_sendfile):
 * they take only connections marked tls, the plain ones only the others (a call that does not
 * take c returns 1, as for a connection not followed). */
uint32_t http_conn_feed_tls(struct http_conn *c, int fd, const uint8_t *p, size_t n,
                            uint32_t *gen);
int http_conn_wrote_tls(struct http_conn *c, const uint8_t *p, size_t n, uint32_t heads_before);
int http_conn_wrote_unseen_tls(struct http_conn *c, uint64_t n);
/* Bytes of c went by that proflink could not see (MSG_TRUNC on a stream, splice, recvmmsg,
 * stdio): stop following c; its open requests end for every thread. */
void http_conn_lost(struct http_conn *c);

/* 1 when c is a TLS connection whose plaintext is not followed: marked by its first bytes
 * (tls 1) but never fed by SSL_read (tls 2), in a process that reads no OpenSSL object behind
 * memory BIOs. Another TLS library, or OpenSSL reached where no hook sees it: a thread working
 * on it cannot know which request it works on (http_thread_touched). */
static inline int http_conn_dark(struct http_conn *c)
{
    return atomic_load_explicit(&c->tls, memory_order_relaxed) == 1 &&
           !atomic_load_explicit(&http_conn_tls_detached, memory_order_relaxed);
}

/* 1 while request seq of generation gen is open on c. */
static inline int http_conn_open_req(struct http_conn *c, uint32_t gen, uint32_t seq)
{
    return atomic_load_explicit(&c->gen, memory_order_acquire) == gen &&
           !atomic_load_explicit(&c->lost, memory_order_relaxed) &&
           (int32_t)(seq - atomic_load_explicit(&c->dones, memory_order_acquire)) > 0;
}

/* The context of the request c answers next (the oldest open one) into *ctx, its number into
 * *seq; 0, or -1 when no request of generation gen is open. */
int http_conn_current(struct http_conn *c, uint32_t gen, struct trace_ctx *ctx, uint32_t *seq);

#endif
