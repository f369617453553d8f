/* http_conn.h — per-descriptor state of the stream connections the program accepted, for
 * reading their requests' traceparent (PROFLINK_HTTP=1). A two-level table indexed by the
 * descriptor number: a descriptor that is not an accepted stream costs one load of a global
 * counter (none tracked) or the table walk, no lock, no system call. Slots are never freed
 * (they are reused by the next connection with the same number), so a thread still holding one
 * while another closes the descriptor never touches freed memory. */
#ifndef PROFLINK_HTTP_CONN_H
#define PROFLINK_HTTP_CONN_H

#include <stdatomic.h>
#include <stdint.h>

#include "http_scan.h"
#include "ids.h"

/* Descriptors are ints: 2^15 top entries of 2^16 slots each cover them all. A leaf is reserved
 * (not committed) memory; only the pages of descriptors in use are ever touched. */
#define HTTP_CONN_LEAF_BITS 16
#define HTTP_CONN_TOP (1u << (31 - HTTP_CONN_LEAF_BITS))

struct http_conn {
    _Atomic uint8_t tracked; /* an accepted stream socket, not yet closed */
    _Atomic uint8_t busy;    /* one thread scans at a time; the others skip (never wait) */
    _Atomic uint8_t idle;    /* between requests: a read now waits for new work */
    _Atomic uint8_t lost;    /* bytes went by unseen (concurrent readers): stop following */
    _Atomic uint32_t gen;    /* changes with every connection and every request on the slot */
    struct trace_ctx ctx;    /* the current request's context (present = 0: none) */
    struct http_scan scan;
};

/* 1 when PROFLINK_HTTP asked for it and proflink is active (set once at start). Exported so
 * that proflink-inspect can read it from outside (its address is in the dynamic symbol table). */
extern _Atomic uint32_t proflink_http_reading;
/* How many descriptors are tracked: 0 makes every lookup one load. */
extern _Atomic long http_conn_live;

void http_conn_enable(void);

/* The slot of an accepted stream fd, or NULL (most descriptors: the fast path). */
struct http_conn *http_conn_find_slow(int fd);
static inline struct http_conn *http_conn_find(int fd)
{
    if (__builtin_expect(atomic_load_explicit(&http_conn_live, memory_order_relaxed) == 0, 1))
        return 0;
    return http_conn_find_slow(fd);
}

/* fd was just accepted (a stream socket): start tracking it. Silently does nothing when out of
 * memory. */
void http_conn_open(int fd);
/* fd is about to be closed: stop tracking it. */
void http_conn_close(struct http_conn *c);
/* Descriptors lo..hi are about to be closed (close_range, closefrom) or replaced: stop
 * tracking every one of them. Walks only the table's allocated leaves. */
void http_conn_close_range(unsigned lo, unsigned hi);

/* Feeds bytes the program read from c and gives the context the reading thread now has: the
 * current request's (present = 0 while a head is incomplete, without a valid traceparent, or
 * when one read holds parts of two pipelined requests: no context rather than a wrong one) and
 * the slot generation it belongs to. Returns 0, or -1 when another thread is scanning c: this
 * thread does not wait, its bytes are lost to the scanner, which stops following c. */
int http_conn_feed(struct http_conn *c, const uint8_t *p, size_t n, struct trace_ctx *ctx,
                   uint32_t *gen);
/* Bytes were read that could not be seen (MSG_TRUNC on a stream discards them). */
void http_conn_lost(struct http_conn *c);

#endif
