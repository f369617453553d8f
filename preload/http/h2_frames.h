/* h2_frames.h — follows one direction of an HTTP/2 connection (RFC 9113) as a server reads or
 * writes it, cut anywhere across calls, and reports what decides which request a thread works
 * on: a stream's request headers with their traceparent (requests: the client preface, then
 * HEADERS and CONTINUATION decoded by hpack.c, padding and priority fields skipped), the end of
 * a stream's response (END_STREAM in what the server writes), a stream reset by either side,
 * GOAWAY, and the header table size the server allows the client's encoder (SETTINGS).
 *
 * Pure: no system calls, no allocation, no global state. Anything that is not HTTP/2 as the
 * RFC frames it (a bad preface, a CONTINUATION out of place, a header block over H2_BLOCK_MAX,
 * a block hpack.c refuses) fails the reader for good: the caller then stops trusting the
 * connection. */
#ifndef PROFLINK_H2_FRAMES_H
#define PROFLINK_H2_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "hpack.h"
#include "leaves/ids.h"

/* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", what a client sends first. */
#define H2_PREFACE_LEN 24
#define H2_FRAME_HEADER_LEN 9
/* A request's header block (HEADERS and its CONTINUATIONs) is read whole, up to this size: the
 * default SETTINGS_MAX_FRAME_SIZE, far above real request heads (nginx refuses request header
 * lists over 16 KiB by default too). A larger block fails the reader. */
#define H2_BLOCK_MAX 16384

enum h2_side {
    H2_REQUESTS,  /* the bytes the server reads */
    H2_RESPONSES, /* the bytes the server writes */
};

enum h2_event_type {
    H2_EV_REQUEST,     /* a stream's request headers: ctx (present or not), end_stream */
    H2_EV_STREAM_END,  /* responses: the stream's response is complete (END_STREAM) */
    H2_EV_RESET,       /* RST_STREAM on the stream, from either side */
    H2_EV_GOAWAY,      /* stream: the last one the sender processed or will */
    H2_EV_TABLE_LIMIT, /* responses: SETTINGS_HEADER_TABLE_SIZE = value (for the requests side) */
};

struct h2_event {
    uint8_t type;
    uint8_t end_stream; /* H2_EV_REQUEST: no body follows */
    uint32_t stream;
    uint32_t value;
    struct trace_ctx ctx;
};

typedef void (*h2_event_fn)(void *arg, const struct h2_event *ev);

struct h2_frames {
    uint8_t side;
    uint8_t failed;
    uint8_t preface_left;  /* requests: bytes of the preface still to come */
    uint8_t hdr_len;       /* bytes of the current frame header so far */
    uint8_t hdr[H2_FRAME_HEADER_LEN];
    uint8_t type, flags;
    uint8_t small_len;     /* bytes of `small` so far */
    uint8_t small[8];      /* a fixed field being read: a setting, RST_STREAM, GOAWAY, priority */
    uint32_t stream, len;  /* the current frame */
    uint32_t done;         /* its payload bytes read so far */
    uint32_t pad;          /* its padding length */
    uint32_t last_request; /* requests: the highest stream that sent request headers */
    uint8_t in_block;      /* a header block is open: only CONTINUATION on block_stream may come */
    uint8_t block_end_stream;
    uint8_t block_new;     /* requests: the block opens a request (not trailers) */
    uint32_t block_stream;
    uint32_t block_len;
    uint8_t limit_pending; /* requests: the server set a table size the client has not acked */
    uint32_t pending_limit;
    struct hpack_dec hpack;      /* requests */
    uint8_t block[H2_BLOCK_MAX]; /* requests: the header block being gathered */
};

void h2_frames_init(struct h2_frames *f, enum h2_side side);
/* Requests: the server sent SETTINGS_HEADER_TABLE_SIZE = value (H2_EV_TABLE_LIMIT of its
 * responses). The client's encoder is bound by it from its SETTINGS acknowledgement on. */
void h2_frames_table_limit(struct h2_frames *f, uint32_t value);
/* Feeds n bytes; events go to fn as they are complete. 0, or -1 once the reader has failed. */
int h2_frames_feed(struct h2_frames *f, const uint8_t *p, size_t n, h2_event_fn fn, void *arg);

#endif
