/* h2_conn.h — an accepted connection followed as HTTP/2 (prior-knowledge h2c: the client
 * preface as its first bytes, or a server whose first write is a SETTINGS frame; Upgrade: h2c:
 * from a 101 answer on, stream 1 being the upgraded request): the bytes the
 * program reads go through h2_frames.c and hpack.c, each stream's request headers giving its
 * traceparent; the frame headers of what it writes end streams (END_STREAM, RST_STREAM, GOAWAY).
 *
 * The streams are mapped onto the connection's request numbers (http_conn.h) so that the
 * thread notes of http_thread.c work unchanged, and the never-wrong rule holds per stream: a
 * stream is a request (shown to the thread that read its HEADERS) only while it is the
 * connection's one open stream. A second stream opening ends it for every thread, and no stream
 * opened while another was open is ever shown (which of them a thread works on is unknown).
 *
 * The entry points are "bytes read / bytes written on connection c": whatever delivers the
 * plaintext (the read and write hooks; later TLS) calls them the same way. */
#ifndef PROFLINK_H2_CONN_H
#define PROFLINK_H2_CONN_H

#include <stddef.h>
#include <stdint.h>

#include "h2_frames.h"
#include "http_conn.h"

/* Streams one connection may have open at once: gRPC's and Node's default
 * SETTINGS_MAX_CONCURRENT_STREAMS is 100 (nghttpd's too). A connection with more is no longer
 * followed. */
#define H2_CONN_STREAMS 128

/* c->h2 values: the connection's protocol, decided by its first bytes in either direction. */
enum h2_mode {
    H2_MODE_UNDECIDED = 0,
    H2_MODE_HTTP1 = 1, /* read through http_scan (the first bytes read were not the preface) */
    H2_MODE_H2 = 2,
    H2_MODE_CLAIMED = 3, /* being decided by one thread: another that finds it so gives up c */
};

struct h2_conn {
    _Atomic uint8_t lock; /* the open-stream set: a try-lock, never waited for */
    uint32_t nopen;
    uint32_t open[H2_CONN_STREAMS];
    _Atomic uint32_t table_limit; /* the server's SETTINGS_HEADER_TABLE_SIZE + 1, 0: none new */
    uint8_t settings_due;         /* after a 101: the server's first frame must be SETTINGS */
    uint8_t written;              /* bytes the server wrote as HTTP/2 (counted up to 4) */
    struct h2_frames req;         /* what the program reads */
    struct h2_frames resp;        /* what it writes (frame headers only: its HPACK part unused) */
};

/* The first bytes the program reads on c: 1 when they begin the client preface (a prefix of
 * it), 0 otherwise. */
int h2_conn_is_preface(const uint8_t *p, size_t n);
/* The first bytes the program writes on c, before reading anything: 1 when they begin a
 * SETTINGS frame (what an HTTP/2 server sends first, before the client's preface arrives). */
int h2_conn_is_server_first(const uint8_t *p, size_t n);
/* Makes c an HTTP/2 connection (its state mapped on first use, reused by later connections of
 * the same descriptor). 0, or -1 out of memory. */
int h2_conn_start(struct http_conn *c);

/* The program answered c's one open request with 101 Switching Protocols (Upgrade: h2c, after
 * h2_conn_start): the request is stream 1, shown as before until its response ends. proflink
 * does not read the Upgrade header: another protocol (WebSocket) fails the readers at its
 * first bytes (the server's first frame must be SETTINGS, the client's first bytes the
 * preface), which gives c up and ends the request. */
void h2_conn_upgraded(struct http_conn *c);
/* Bytes the program read (under c->busy): *newest is the request number of a stream this read
 * opened and that is still the connection's only open stream, 0 if none. Returns 0; 1 when
 * the reading thread cannot know which stream it works on (a stream opened beside another,
 * which neither shows; the client reset an open stream, whose work may go on; c has streams
 * open that are not shown, whose bytes these may be); -1 when c must
 * be given up (not HTTP/2, HPACK out of step, a block too large, too many streams, another
 * thread changing the streams). */
int h2_conn_read(struct http_conn *c, const uint8_t *p, size_t n, uint32_t *newest);
/* Bytes the program wrote (under c->wbusy): 0; 1 when c has streams open that are not shown
 * (before or after the write: the writing thread works on one of them); -1 when c must be
 * given up. */
int h2_conn_wrote(struct http_conn *c, const uint8_t *p, size_t n);

#endif
