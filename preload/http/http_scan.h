/* http_scan.h — an incremental scanner of one HTTP/1.x connection's bytes, in either
 * direction. Requests (what a server reads; http_request_scan.c): where each request head
 * starts and ends, the W3C `traceparent` header (version 00) of the head, and the body
 * (Content-Length or chunked) skipped, so that the next request of a keep-alive or pipelined
 * connection is evaluated afresh. Responses (what it writes back, http_scan_init_response;
 * http_response_scan.c): status line, interim 1xx heads, and the framing of the final
 * response's body (none for a HEAD request, 204 and 304; Content-Length; chunked; until the
 * connection closes), so that the end of each response, which ends its request, is known.
 * Both halves run one state machine (http_scan_machine.h).
 *
 * Pure: no system calls, no allocation, no global state. Any byte sequence, cut anywhere, gives
 * the same result as when fed at once (tests/fuzz/fuzz_http_scan.c and fuzz_http_resp.c check
 * it). */
#ifndef PROFLINK_HTTP_SCAN_H
#define PROFLINK_HTTP_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "leaves/ids.h"

/* Only the first 8 KiB of a head are read: enough for any real request head carrying a
 * traceparent (nginx's and Node's default limits for one header line / a whole head are 8 KiB
 * and 16 KiB), and it bounds the work per request. A longer head gives no context and ends the
 * scanning of the connection (its body length might lie beyond the limit). */
#define HTTP_HEAD_MAX 8192
/* Response heads carry more than request heads (cookies, security policies); still bounded so
 * that a stream that is not HTTP stops being followed. Fits head_len. */
#define HTTP_RESPONSE_HEAD_MAX 32768
/* Request methods are short tokens (the longest registered one is 17 bytes). */
#define HTTP_METHOD_MAX 32
/* A version-00 traceparent is exactly 55 bytes; room for a few more shows it is too long. */
#define HTTP_TP_BUF 60

enum http_scan_event {
    HTTP_SCAN_NONE,       /* every byte given was consumed without an event */
    HTTP_SCAN_HEAD_START, /* the first byte of a request line */
    HTTP_SCAN_HEAD_END,   /* the empty line ending a head: *ctx holds the request's context
                           * (responses: an interim head, or a final one whose body follows) */
    HTTP_SCAN_MESSAGE_END, /* responses only: the last byte of a final response */
};

struct http_scan {
    uint8_t state;
    uint8_t pos;         /* within the method, the version, or the header name */
    uint8_t names;       /* bit set: header names the current name can still become */
    uint8_t field;       /* which header the current line is (enum in http_scan.c) */
    uint8_t tp_count;    /* traceparent lines in this head */
    uint8_t tp_len;      /* bytes of its value so far (HTTP_TP_BUF + 1 = too long) */
    uint8_t tp_ows;      /* whitespace seen after the value's first byte (trailing, or bad) */
    uint8_t te_seen;     /* a Transfer-Encoding header */
    uint8_t cl_seen;     /* a Content-Length header */
    uint8_t cl_digits;   /* digits of the current Content-Length value */
    uint8_t response;    /* 1: follows responses (http_scan_init_response), 0: requests */
    uint8_t method_head; /* requests: the head's method is HEAD (its response has no body) */
    uint8_t no_body;     /* responses: set by the caller before a head ends when the request it
                          * answers was a HEAD (the scanner cannot know) */
    uint16_t head_len;   /* bytes of the current head */
    uint16_t status;     /* responses: the status code of the current head */
    char tp[HTTP_TP_BUF];
    char te_tail[8];     /* the last 7 non-blank bytes of Transfer-Encoding, lowercase */
    uint64_t cl_value;   /* the current Content-Length value */
    uint64_t cl;         /* the head's Content-Length */
    uint64_t left;       /* body bytes (or chunk bytes) still to skip */
};

/* A scanner at the start of a connection. */
void http_scan_init(struct http_scan *s);

/* A scanner at the start of the responses written on a connection. */
void http_scan_init_response(struct http_scan *s);

/* Consumes bytes of p[0..n) up to and including the first event, returns how many. *event
 * says which; on HTTP_SCAN_HEAD_END, *ctx is the head's context (present = 0 without exactly
 * one valid version-00 traceparent). Call again with the rest. */
size_t http_scan_feed(struct http_scan *s, const uint8_t *p, size_t n, enum http_scan_event *event,
                      struct trace_ctx *ctx);

/* http_scan_feed for a scanner known to follow requests (http_scan_init), or responses. */
size_t http_request_feed(struct http_scan *s, const uint8_t *p, size_t n,
                         enum http_scan_event *event, struct trace_ctx *ctx);
size_t http_response_feed(struct http_scan *s, const uint8_t *p, size_t n,
                          enum http_scan_event *event, struct trace_ctx *ctx);

/* 1 between requests: the last head and its body are complete (or nothing was read yet). */
int http_scan_idle(const struct http_scan *s);

/* 1 once the bytes are not HTTP/1.x (or cannot be followed any more): nothing more will come. */
int http_scan_dead(const struct http_scan *s);

/* Bytes were lost (read without being seen): stop following the connection. */
void http_scan_kill(struct http_scan *s);

/* n bytes went by that the caller cannot show (sendfile): taken as body bytes when the scanner
 * is inside a body that holds at least n more (or one that lasts until the connection closes).
 * Returns 1 when they complete a response, 0 otherwise, -1 when they cannot be body bytes
 * (then the scanner is dead: what follows cannot be found). */
int http_scan_skip(struct http_scan *s, uint64_t n);

/* 1 while a response's body lasts until the connection closes (neither a length nor chunked). */
int http_scan_until_close(const struct http_scan *s);

#endif
