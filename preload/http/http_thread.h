/* http_thread.h — which requests read from HTTP (PROFLINK_HTTP=1) the calling thread has open,
 * and the context that gives it: a thread shows a request's context only while exactly one
 * connection has requests it read (or a response it is writing) still open; then it shows the
 * oldest open request of that connection (responses go in request order). With none open, or
 * open requests on two connections or more (which one the thread works on is unknown), it
 * shows none. A request another thread answers ends here at this thread's next hooked call.
 * A thread that touches a connection it cannot account for (no room for its note, lost,
 * framing out of step) is unsure: it shows no request until it next waits with nothing open,
 * since what it works on may be a request proflink never saw while its notes name another.
 * The tracer API, once it touched the thread, wins over all of this. */
#ifndef PROFLINK_HTTP_THREAD_H
#define PROFLINK_HTTP_THREAD_H

#include <stdint.h>

#include "http_conn.h"

/* Connections one thread keeps notes on. An event loop reading more connections' requests than
 * this before answering them makes the extra connections lost (never followed again, never
 * shown), so that no note is dropped while its request is open. */
#define HTTP_THREAD_CONNS 32

/* Set by every context call of the public API: from then on the tracer owns this thread's
 * context and HTTP reading never writes it again (a tracer knows the real span; proflink only
 * knows the caller's). Hidden, initial-exec: one %fs-relative load on the API's hot path. */
extern __thread uint8_t http_thread_api_owned
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* How many connections this thread has notes on (0: nothing to check, the hot path). */
extern __thread uint8_t http_thread_notes
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* 1 while the thread is unsure (see above). */
extern __thread uint8_t http_thread_unsure
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

/* A load and a branch rather than a store on every call: stores bound the API's hot path (the
 * set+clear pair is about a store per cycle, make bench). */
static inline void http_thread_api_took(void)
{
    if (__builtin_expect(!http_thread_api_owned, 0))
        http_thread_api_owned = 1;
}

/* The thread read the head of request seq (generation gen) on c. */
void http_thread_read(struct http_conn *c, uint32_t gen, uint32_t seq);
/* The thread read from or wrote to c (after http_conn_feed / http_conn_wrote): a lost c, a
 * call that left it not knowing which request it works on (http_conn_unsure), or a TLS
 * connection whose plaintext is not followed (http_conn_dark) makes it unsure. */
void http_thread_lost_touched(void);
static inline void http_thread_touched(struct http_conn *c)
{
    if (__builtin_expect((atomic_load_explicit(&c->lost, memory_order_acquire) |
                          http_conn_unsure) != 0, 0) ||
        __builtin_expect(http_conn_dark(c), 0)) {
        http_conn_unsure = 0;
        http_thread_lost_touched();
    }
}
/* A wait (before and after it): notes of ended requests dropped, and an unsure thread with
 * none open is sure again. */
void http_thread_waited(void);
/* Adoption: a thread with no notes that writes on a connection with exactly one open
 * request takes that request until its response ends (a worker answering what another thread
 * read), and not past it: the note goes once the connection is between responses after this
 * thread's write, whatever the requests' numbers say. Before the write: the request the thread would take (0: none) and its generation;
 * after the write (http_conn_wrote): takes it if its response is still incomplete, and drops
 * what the write ended. */
uint32_t http_thread_adoptable(struct http_conn *c, uint32_t *gen);
/* c->heads as http_thread_adoptable found it, before the write (for http_conn_wrote). */
extern __thread uint32_t http_thread_heads_before
    __attribute__((tls_model("initial-exec"), visibility("hidden")));
/* between: http_conn_wrote's answer for the write's last bytes */
void http_thread_wrote(struct http_conn *c, uint32_t gen, uint32_t adopt, int between);
/* the same as http_thread_adoptable for a TLS connection's plaintext (SSL_write); the plain
 * one adopts nothing on a TLS connection */
uint32_t http_thread_adoptable_tls(struct http_conn *c, uint32_t *gen);

void http_thread_refresh(void);
/* Drops the notes of requests that ended (answered, closed, lost, by any thread) and shows
 * what remains: called around waits and after closes. */
static inline void http_thread_sync(void)
{
    if (__builtin_expect(http_thread_notes != 0, 0))
        http_thread_refresh();
}

#endif
