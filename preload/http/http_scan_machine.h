/* http_scan_machine.h — the one state machine both halves of the HTTP/1.x scanner run
 * (http_request_scan.c, http_response_scan.c; included by them only): its states, the header
 * fields it looks for (traceparent, Content-Length, Transfer-Encoding), body and chunked
 * framing, and the loop that feeds it. Each state takes the longest run of bytes it can at
 * once (a target, a header name, a value up to its LF) and then the byte that ends the run, so
 * a head cut anywhere goes through the same code as a whole one: there is no second parser to
 * keep equal to this one. A half supplies its first line (request line or status line) and
 * what the end of a head means; http_scan.c holds what does not depend on the direction. */
#ifndef PROFLINK_HTTP_SCAN_MACHINE_H
#define PROFLINK_HTTP_SCAN_MACHINE_H

#include <string.h>

#include "http_scan.h"

/* The head states come first and end with S_END_CR: their bytes count toward the head limit. */
enum state {
    S_IDLE,           /* before a request line (empty lines allowed, RFC 9112 §2.2) */
    S_METHOD,         /* requests */
    S_TARGET,
    S_VERSION,        /* "HTTP/1.x" then CR LF */
    S_STATUS_VERSION, /* responses: "HTTP/1.x" */
    S_STATUS_CODE,    /* three digits */
    S_REASON,         /* the reason phrase, up to the LF */
    S_LINE_CR,        /* CR seen at the end of the request line (or status line) */
    S_FIELD_START,    /* start of a header line, or the empty line ending the head */
    S_NAME,
    S_VALUE,
    S_END_CR,         /* CR of the empty line */
    S_BODY,           /* Content-Length bytes */
    S_CHUNK_SIZE,
    S_CHUNK_EXT,
    S_CHUNK_SIZE_CR,
    S_CHUNK_DATA,
    S_CHUNK_DATA_END,
    S_CHUNK_DATA_CR,
    S_TRAILER_START,
    S_TRAILER_LINE,
    S_TRAILER_END_CR,
    S_UNTIL_CLOSE,    /* a response body that lasts until the connection closes */
    S_DEAD,
};

enum field { F_OTHER, F_TRACEPARENT, F_CONTENT_LENGTH, F_TRANSFER_ENCODING };

/* Header names looked for, lowercase; bit i of `names` stands for scan_names[i]. */
static const char *const scan_names[] = {"traceparent", "content-length", "transfer-encoding"};
static const uint8_t scan_names_len[] = {11, 14, 17};
#define NAMES_ALL 7u
/* By a name's length: the wanted names it can be (whole), or begin (cut where the bytes end). */
static const uint8_t names_fit_whole[18] = {[11] = 1, [14] = 2, [17] = 4};
static const uint8_t names_fit_prefix[18] = {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
                                             6, 6, 6, 4, 4, 4};
#define TP_LEN 55
#define TP_TOO_LONG (HTTP_TP_BUF + 1)
/* Content-Length up to 18 digits cannot overflow 64 bits. */
#define CL_DIGITS_MAX 18
/* Chunk sizes up to 15 hex digits cannot overflow 64 bits. */
#define CHUNK_DIGITS_MAX 15

static const char version_prefix[] = "HTTP/1.";

/* RFC 9110 tchar, by table: this test runs for every byte of methods and header names, and
 * one load is the fewest instructions per byte (callgrind). */
static const uint8_t tchar_table[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
};

static inline int is_tchar(uint8_t c) { return tchar_table[c]; }
static inline uint8_t lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c; }
static inline int is_blank(uint8_t c) { return c == ' ' || c == '\t' || c == '\r'; }

/* The bytes that end a traceparent value's run: blanks and the LF. */
static const uint8_t value_stop[256] = {[' '] = 1, ['\t'] = 1, ['\r'] = 1, ['\n'] = 1};

static inline void start_head(struct http_scan *s)
{
    s->head_len = 0;
    s->tp_count = 0;
    s->tp_len = 0;
    s->te_seen = 0;
    s->cl_seen = 0;
    s->cl = 0;
    s->field = F_OTHER;
    memset(s->te_tail, 0, sizeof s->te_tail);
}

/* Bytes of "HTTP/1.x" (a request line's end, a status line's start) from s->pos on, up to 8:
 * returns how many q[0..lim) gave (the scanner dies at a wrong one); the version is whole once
 * s->pos is 8. */
static inline size_t version_run(struct http_scan *s, const uint8_t *q, size_t lim)
{
    size_t k = 0;
    uint8_t pos = s->pos;
    size_t rest = pos < sizeof version_prefix ? sizeof version_prefix - pos : 0;
    if (rest && lim >= rest && memcmp(q, version_prefix + pos, rest - 1) == 0 &&
        q[rest - 1] >= '0' && q[rest - 1] <= '9') {
        s->pos = sizeof version_prefix; /* the rest of the version at once, as below */
        return rest;
    }
    while (k < lim && pos < sizeof version_prefix) {
        uint8_t c = q[k++];
        if (pos < sizeof version_prefix - 1 ? c != (uint8_t)version_prefix[pos] : c < '0' || c > '9')
            s->state = S_DEAD;
        pos++;
        if (s->state == S_DEAD)
            break;
    }
    s->pos = pos;
    return k;
}

/* The byte after the first line's CR: its LF. */
static inline void line_cr(struct http_scan *s, uint8_t c) { s->state = c == '\n' ? S_FIELD_START : S_DEAD; }

/* The header line just ended (its LF consumed). 0, or -1 when it makes the message unreadable. */
static inline int end_field(struct http_scan *s)
{
    switch (s->field) {
    case F_TRACEPARENT:
        s->tp_count = s->tp_count < 2 ? s->tp_count + 1 : 2;
        break;
    case F_CONTENT_LENGTH:
        /* Several differing lengths make the framing ambiguous (RFC 9112 §6.3): stop. */
        if (s->cl_digits == 0 || (s->cl_seen && s->cl != s->cl_value))
            return -1;
        s->cl = s->cl_value;
        s->cl_seen = 1;
        break;
    default:
        break;
    }
    return 0;
}

/* One byte of a looked-for header's value (not its LF). */
static inline void value_byte(struct http_scan *s, uint8_t c)
{
    switch (s->field) {
    case F_TRACEPARENT:
        if (is_blank(c)) {
            if (s->tp_len)
                s->tp_ows = 1;
        } else if (s->tp_ows || s->tp_len >= HTTP_TP_BUF) {
            s->tp_len = TP_TOO_LONG; /* blank inside the value, or too long */
        } else {
            s->tp[s->tp_len++] = (char)c;
        }
        break;
    case F_CONTENT_LENGTH:
        if (is_blank(c)) {
            if (s->cl_digits)
                s->pos = 1; /* trailing blanks: no more digits allowed */
        } else if (c >= '0' && c <= '9' && !s->pos && s->cl_digits < CL_DIGITS_MAX) {
            s->cl_value = s->cl_value * 10 + (uint64_t)(c - '0');
            s->cl_digits++;
        } else {
            s->state = S_DEAD;
        }
        break;
    case F_TRANSFER_ENCODING:
        if (!is_blank(c)) {
            memmove(s->te_tail, s->te_tail + 1, 6);
            s->te_tail[6] = (char)lower(c);
        }
        break;
    default:
        break;
    }
}

/* The header name ended with ':'. */
static inline void begin_value(struct http_scan *s)
{
    s->field = F_OTHER;
    for (unsigned i = 0; i < 3; i++)
        if ((s->names & (1u << i)) && s->pos == scan_names_len[i])
            s->field = (uint8_t)(F_TRACEPARENT + i);
    s->pos = 0;
    if (s->field == F_TRACEPARENT) {
        s->tp_len = 0;
        s->tp_ows = 0;
    } else if (s->field == F_CONTENT_LENGTH) {
        s->cl_value = 0;
        s->cl_digits = 0;
    } else if (s->field == F_TRANSFER_ENCODING) {
        s->te_seen = 1;
        memset(s->te_tail, 0, sizeof s->te_tail);
    }
    s->state = S_VALUE;
}

/* The end of a Transfer-Encoding value: a final "chunked". */
static inline int te_chunked(const struct http_scan *s) { return memcmp(s->te_tail, "chunked", 7) == 0; }

/* Head bytes q[0..lim) from a header line's start on (S_FIELD_START, S_NAME, S_VALUE,
 * S_END_CR): each state takes the longest run it can, then the byte that ends it, until lim,
 * the scanner's death or the empty line that ends the head (*end set, its LF the last byte
 * taken). Returns the bytes taken. */
static inline size_t field_run(struct http_scan *s, const uint8_t *q, size_t lim, int *end)
{
    size_t k = 0;
    uint8_t c;
    while (k < lim) {
        switch (s->state) {
        case S_FIELD_START:
            c = q[k++];
            if (c == '\r') {
                s->state = S_END_CR;
            } else if (c == '\n') {
                *end = 1;
                return k;
            } else if (c == ' ' || c == '\t') {
                /* obsolete line folding continues the previous field: a folded traceparent is
                 * not one; a folded length or coding makes the framing unreadable */
                if (s->field == F_TRACEPARENT) {
                    s->tp_count = 2;
                } else if (s->field != F_OTHER) {
                    s->state = S_DEAD;
                    return k;
                }
                s->field = F_OTHER;
                s->state = S_VALUE;
            } else if (is_tchar(c)) {
                s->names = NAMES_ALL;
                s->pos = 0;
                s->state = S_NAME;
                k--; /* the name's first byte: S_NAME takes it */
            } else {
                s->state = S_DEAD;
                return k;
            }
            break;
        case S_NAME: {
            /* the run of name bytes here, then the wanted names it still matches: each
             * compared up to its first differing byte (most names differ from all three at
             * their first byte) */
            size_t a = k;
            while (k < lim && is_tchar(q[k]))
                k++;
            size_t run = k - a, len = s->pos + run;
            int whole = k < lim && q[k] == ':';
            uint8_t names = s->names, pos = s->pos;
            if (names) {
                /* first the names the length allows: too long, or (the name ends here) not
                 * as long, rules one out; then the bytes of those left */
                names &= len >= sizeof names_fit_whole ? 0
                         : whole                        ? names_fit_whole[len]
                                                        : names_fit_prefix[len];
                for (unsigned i = 0; i < 3 && names; i++) {
                    if (!(names & (1u << i)))
                        continue;
                    size_t j = 0;
                    /* | 0x20 lowercases a tchar exactly where the wanted names have letters
                     * or '-' (0x0d, the only other byte it maps to '-', is no tchar) */
                    while (j < run && (q[a + j] | 0x20) == (uint8_t)scan_names[i][pos + j])
                        j++;
                    if (j < run)
                        names &= (uint8_t)~(1u << i);
                }
            }
            s->names = names;
            s->pos = (uint8_t)(run < (size_t)(UINT8_MAX - pos) ? pos + run : UINT8_MAX);
            if (k == lim)
                return k;
            if (q[k++] != ':') {
                s->state = S_DEAD;
                return k;
            }
            begin_value(s);
            break;
        }
        case S_VALUE:
            if (s->field == F_OTHER) {
                const uint8_t *nl = memchr(q + k, '\n', lim - k);
                if (!nl)
                    return lim;
                s->state = S_FIELD_START;
                s->pos = 0;
                k = (size_t)(nl - q) + 1;
                break;
            }
            if (s->field == F_TRACEPARENT && !s->tp_ows && s->tp_len < HTTP_TP_BUF) {
                /* the value's run of non-blanks, copied at once */
                size_t a = k, cap = k + (HTTP_TP_BUF - s->tp_len), stop = cap < lim ? cap : lim;
                /* eight bytes at a time while none is a control byte or a space (every byte
                 * that ends the run is one), then byte by byte */
                while (k + 8 <= stop) {
                    uint64_t w;
                    memcpy(&w, q + k, 8);
                    if ((w - 0x2121212121212121ull) & ~w & 0x8080808080808080ull)
                        break;
                    k += 8;
                }
                while (k < stop && !value_stop[q[k]])
                    k++;
                memcpy(s->tp + s->tp_len, q + a, k - a);
                s->tp_len = (uint8_t)(s->tp_len + (k - a));
                if (k == lim)
                    return k;
            }
            c = q[k++];
            if (c == '\n') {
                s->state = end_field(s) == 0 ? S_FIELD_START : S_DEAD;
                s->pos = 0;
            } else {
                value_byte(s, c);
            }
            if (s->state == S_DEAD)
                return k;
            break;
        case S_END_CR:
            if (q[k++] == '\n')
                *end = 1;
            else
                s->state = S_DEAD;
            return k;
        default:
            return k;
        }
    }
    return k;
}

static inline void chunk_size_done(struct http_scan *s)
{
    if (s->pos == 0)
        s->state = S_DEAD;
    else
        s->state = s->left ? S_CHUNK_DATA : S_TRAILER_START;
}

static inline int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One byte of chunked framing (sizes, extensions, the CR LF after data, trailers). 1 when it
 * ends the message (the empty line after the trailers), 0 otherwise. */
static inline int chunk_step(struct http_scan *s, uint8_t c)
{
    switch (s->state) {
    case S_CHUNK_SIZE: {
        int v = hex_value(c);
        if (v >= 0 && s->pos < CHUNK_DIGITS_MAX) {
            s->left = s->left << 4 | (uint64_t)v;
            s->pos++;
        } else if (v < 0 && s->pos > 0 && (c == ';' || c == ' ' || c == '\t')) {
            s->state = S_CHUNK_EXT;
        } else if (c == '\r') {
            s->state = S_CHUNK_SIZE_CR;
        } else if (c == '\n') {
            chunk_size_done(s);
        } else {
            s->state = S_DEAD;
        }
        return 0;
    }
    case S_CHUNK_EXT:
        if (c == '\n')
            chunk_size_done(s);
        return 0;
    case S_CHUNK_SIZE_CR:
        if (c == '\n')
            chunk_size_done(s);
        else
            s->state = S_DEAD;
        return 0;
    case S_CHUNK_DATA_END:
        if (c == '\r' || c == '\n') {
            s->state = c == '\r' ? S_CHUNK_DATA_CR : S_CHUNK_SIZE;
            s->pos = 0;
            s->left = 0;
        } else {
            s->state = S_DEAD;
        }
        return 0;
    case S_CHUNK_DATA_CR:
        s->state = c == '\n' ? S_CHUNK_SIZE : S_DEAD;
        return 0;
    case S_TRAILER_START:
        if (c == '\r') {
            s->state = S_TRAILER_END_CR;
        } else if (c == '\n') {
            s->state = S_IDLE;
            return 1;
        } else {
            s->state = S_TRAILER_LINE;
        }
        return 0;
    case S_TRAILER_LINE:
        if (c == '\n')
            s->state = S_TRAILER_START;
        return 0;
    case S_TRAILER_END_CR:
        s->state = c == '\n' ? S_IDLE : S_DEAD;
        return s->state == S_IDLE;
    default:
        s->state = S_DEAD;
        return 0;
    }
}

/* What a half of the scanner supplies: its first line's states (q[0..lim) are head bytes, at
 * least one; returns how many it took, up to lim, the line's end or the scanner's death), and the
 * event of a head's end (the empty line's LF just taken; sets the state that follows). */
typedef size_t (*scan_first_line_fn)(struct http_scan *s, const uint8_t *q, size_t lim);
typedef enum http_scan_event (*scan_end_head_fn)(struct http_scan *s, struct trace_ctx *ctx);

/* http_scan_feed for one half: response says which (a constant, as are the two functions, so
 * each half gets its own copy of the loop with them inlined). */
static inline __attribute__((always_inline)) size_t
scan_feed(struct http_scan *s, const uint8_t *p, size_t n, enum http_scan_event *event,
          struct trace_ctx *ctx, const int response, scan_first_line_fn first_line,
          scan_end_head_fn end_head)
{
    const unsigned head_max = response ? HTTP_RESPONSE_HEAD_MAX : HTTP_HEAD_MAX;
    size_t i = 0;
    *event = HTTP_SCAN_NONE;
    while (i < n) {
        uint8_t st = s->state;
        if (st == S_BODY || st == S_CHUNK_DATA) {
            uint64_t take = n - i < s->left ? n - i : s->left;
            i += take;
            s->left -= take;
            if (s->left == 0 && st == S_CHUNK_DATA) {
                s->state = S_CHUNK_DATA_END;
            } else if (s->left == 0) {
                s->state = S_IDLE;
                if (response) {
                    *event = HTTP_SCAN_MESSAGE_END;
                    return i;
                }
            }
            continue;
        }
        if (st == S_DEAD || st == S_UNTIL_CLOSE)
            return n;
        if (st > S_END_CR) {
            if (chunk_step(s, p[i++]) && response) {
                *event = HTTP_SCAN_MESSAGE_END;
                return i;
            }
            continue;
        }
        if (st == S_IDLE) {
            uint8_t c = p[i++];
            if (c == '\r' || c == '\n')
                continue;
            if (response ? c != 'H' : !is_tchar(c)) {
                s->state = S_DEAD;
                continue;
            }
            start_head(s);
            s->head_len = 1;
            s->pos = 1;
            s->method_head = c == 'H';
            s->state = response ? S_STATUS_VERSION : S_METHOD;
            *event = HTTP_SCAN_HEAD_START;
            return i;
        }
        /* a head: never past its limit, so the byte that passes it ends the scanning exactly
         * where it passes, however the head was cut */
        size_t room = head_max - s->head_len;
        if (room == 0) {
            s->head_len++;
            s->state = S_DEAD;
            i++;
            continue;
        }
        size_t lim = n - i < room ? n - i : room, k;
        int end = 0;
        k = st < S_FIELD_START ? first_line(s, p + i, lim) : 0;
        if (k < lim && s->state >= S_FIELD_START && s->state <= S_END_CR)
            k += field_run(s, p + i + k, lim - k, &end);
        s->head_len = (uint16_t)(s->head_len + k);
        i += k;
        if (end) {
            s->pos = 0;
            s->left = 0;
            *event = end_head(s, ctx);
            return i;
        }
    }
    return n;
}

#endif
