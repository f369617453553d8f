/* http_scan.c — the HTTP/1.x request scanner (see http_scan.h). A byte-at-a-time state machine
 * for heads (so a head may be cut anywhere), bulk skipping for bodies. Anything that is not a
 * well-formed HTTP/1.x request ends the scanning of the connection ("dead"): a server speaking
 * another protocol, TLS or HTTP/2 is never misread as carrying a trace. */
#include "http_scan.h"

#include <string.h>

enum state {
    S_IDLE,          /* before a request line (empty lines allowed, RFC 9112 §2.2) */
    S_METHOD,
    S_TARGET,
    S_VERSION,       /* "HTTP/1.x" then CR LF */
    S_LINE_CR,       /* CR seen at the end of the request line (or status line) */
    S_STATUS_VERSION, /* responses: "HTTP/1.x" */
    S_STATUS_CODE,   /* three digits */
    S_REASON,        /* the reason phrase, up to the LF */
    S_FIELD_START,   /* start of a header line, or the empty line ending the head */
    S_NAME,
    S_VALUE,
    S_END_CR,        /* CR of the empty line */
    S_BODY,          /* Content-Length bytes */
    S_CHUNK_SIZE,
    S_CHUNK_EXT,
    S_CHUNK_SIZE_CR,
    S_CHUNK_DATA,
    S_CHUNK_DATA_END,
    S_CHUNK_DATA_CR,
    S_TRAILER_START,
    S_TRAILER_LINE,
    S_TRAILER_END_CR,
    S_UNTIL_CLOSE,   /* a response body that lasts until the connection closes */
    S_DEAD,
};

enum field { F_OTHER, F_TRACEPARENT, F_CONTENT_LENGTH, F_TRANSFER_ENCODING };

/* Header names we look for, lowercase; bit i of `names` stands for names_wanted[i]. */
static const char *const names_wanted[] = {"traceparent", "content-length", "transfer-encoding"};
static const uint8_t names_len[] = {11, 14, 17};
#define NAMES_ALL 7u
#define TP_LEN 55
#define TP_TOO_LONG (HTTP_TP_BUF + 1)
/* Content-Length up to 18 digits cannot overflow 64 bits. */
#define CL_DIGITS_MAX 18
/* Chunk sizes up to 15 hex digits cannot overflow 64 bits. */
#define CHUNK_DIGITS_MAX 15

static const char version_prefix[] = "HTTP/1.";

void http_scan_init(struct http_scan *s)
{
    memset(s, 0, sizeof *s);
    s->state = S_IDLE;
}

void http_scan_init_response(struct http_scan *s)
{
    http_scan_init(s);
    s->response = 1;
}

int http_scan_until_close(const struct http_scan *s) { return s->state == S_UNTIL_CLOSE; }

int http_scan_skip(struct http_scan *s, uint64_t n)
{
    if (s->state == S_UNTIL_CLOSE)
        return 0;
    if ((s->state != S_BODY && s->state != S_CHUNK_DATA) || n > s->left) {
        s->state = S_DEAD;
        return -1;
    }
    s->left -= n;
    if (s->left)
        return 0;
    if (s->state == S_CHUNK_DATA) {
        s->state = S_CHUNK_DATA_END;
        return 0;
    }
    s->state = S_IDLE;
    return s->response;
}

int http_scan_idle(const struct http_scan *s) { return s->state == S_IDLE; }
int http_scan_dead(const struct http_scan *s) { return s->state == S_DEAD; }
void http_scan_kill(struct http_scan *s) { s->state = S_DEAD; }

/* RFC 9110 tchar, as a bit map: this test runs for every byte of methods and header names. */
static const uint32_t tchar_map[8] = {
    0,
    0x03ff6cfa, /* ! # $ % & ' * + - . 0-9 */
    0xc7fffffe, /* A-Z ^ _ */
    0x57ffffff, /* ` a-z | ~ */
};

static int is_tchar(uint8_t c) { return (tchar_map[c >> 5] >> (c & 31)) & 1; }

static uint8_t lower(uint8_t c) { return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c; }
static int is_blank(uint8_t c) { return c == ' ' || c == '\t' || c == '\r'; }

static int hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Lowercase hex digits, by table (value + 1; 0 = not one): the 50 digits of a traceparent are
 * decoded on every traced request, and the comparisons this replaces were a sixth of the
 * scanner's time once heads were read in one pass (perf). */
static const uint8_t hex_lower_plus1[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,
    ['6'] = 7,  ['7'] = 8,  ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
    ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

static int hex_lower(char c) { return hex_lower_plus1[(uint8_t)c] - 1; }

/* n bytes from 2n lowercase hex digits; 0 ok, -1 otherwise. */
static int decode_lower(const char *hex, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int hi = hex_lower(hex[2 * i]), lo = hex_lower(hex[2 * i + 1]);
        if ((hi | lo) < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* W3C trace-context, version 00 only: exactly 55 bytes "00-<32>-<16>-<2>", lowercase hex, ids
 * not all zero. Decoded here rather than through traceparent_parse (which also takes the later
 * versions and uppercase a TRACEPARENT variable may hold): this runs on every request. */
static void head_context(const struct http_scan *s, struct trace_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    const char *t = s->tp;
    if (s->tp_count != 1 || s->tp_len != TP_LEN || t[0] != '0' || t[1] != '0' || t[2] != '-' ||
        t[35] != '-' || t[52] != '-')
        return;
    struct trace_ctx c = {0};
    if (decode_lower(t + 3, c.trace_id, 16) || decode_lower(t + 36, c.span_id, 8) ||
        decode_lower(t + 53, &c.trace_flags, 1) || bytes_all_zero(c.trace_id, 16) ||
        bytes_all_zero(c.span_id, 8))
        return;
    memcpy(c.transaction_id, c.span_id, 8);
    c.present = 1;
    *ctx = c;
}

static void start_head(struct http_scan *s)
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

/* The header line just ended (its LF consumed). 0, or -1 when it makes the request unreadable. */
static int end_field(struct http_scan *s)
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

static void value_byte(struct http_scan *s, uint8_t c)
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
static void begin_value(struct http_scan *s)
{
    s->field = F_OTHER;
    for (unsigned i = 0; i < 3; i++)
        if ((s->names & (1u << i)) && s->pos == names_len[i])
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

static void name_byte(struct http_scan *s, uint8_t c)
{
    c = lower(c);
    for (unsigned i = 0; i < 3; i++)
        if (s->pos >= names_len[i] || names_wanted[i][s->pos] != c)
            s->names &= (uint8_t)~(1u << i);
    if (s->pos < UINT8_MAX)
        s->pos++;
}

/* The empty line ended a response head (RFC 9112 §6.3): what follows, and whether the response
 * is complete already. */
static enum http_scan_event end_response_head(struct http_scan *s, struct trace_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    s->left = 0;
    s->pos = 0;
    if (s->status == 101) {
        s->state = S_DEAD; /* another protocol follows */
        return HTTP_SCAN_HEAD_END;
    }
    if (s->status < 200) {
        s->state = S_IDLE; /* interim: the final response is still to come */
        return HTTP_SCAN_HEAD_END;
    }
    if (s->no_body || s->status == 204 || s->status == 304) {
        s->state = S_IDLE;
        return HTTP_SCAN_MESSAGE_END;
    }
    if (s->te_seen) {
        s->state = memcmp(s->te_tail, "chunked", 7) == 0 ? S_CHUNK_SIZE : S_UNTIL_CLOSE;
    } else if (s->cl_seen) {
        s->left = s->cl;
        s->state = s->cl ? S_BODY : S_IDLE;
        if (!s->cl)
            return HTTP_SCAN_MESSAGE_END;
    } else {
        s->state = S_UNTIL_CLOSE;
    }
    return HTTP_SCAN_HEAD_END;
}

/* The empty line ended the head: what follows is its body. */
static enum http_scan_event end_head(struct http_scan *s, struct trace_ctx *ctx)
{
    if (s->response)
        return end_response_head(s, ctx);
    head_context(s, ctx);
    s->left = 0;
    s->pos = 0;
    if (s->te_seen) {
        /* Any transfer coding but a final "chunked" means "until the connection closes". */
        s->state = memcmp(s->te_tail, "chunked", 7) == 0 ? S_CHUNK_SIZE : S_DEAD;
    } else if (s->cl_seen && s->cl > 0) {
        s->left = s->cl;
        s->state = S_BODY;
    } else {
        s->state = S_IDLE;
    }
    return HTTP_SCAN_HEAD_END;
}

static void chunk_size_done(struct http_scan *s)
{
    if (s->pos == 0)
        s->state = S_DEAD;
    else
        s->state = s->left ? S_CHUNK_DATA : S_TRAILER_START;
}

static unsigned head_max(const struct http_scan *s)
{
    return s->response ? HTTP_RESPONSE_HEAD_MAX : HTTP_HEAD_MAX;
}

/* One byte at s->pos of "HTTP/1.x" (a request line's end, a status line's start): 1 while the
 * version takes it (the scanner dies on a wrong one), 0 once the version is whole. */
static int in_version(struct http_scan *s, uint8_t c)
{
    if (s->pos > sizeof version_prefix - 1)
        return 0;
    if (s->pos < sizeof version_prefix - 1 ? c != (uint8_t)version_prefix[s->pos]
                                           : c < '0' || c > '9')
        s->state = S_DEAD;
    s->pos++;
    return 1;
}

/* A response's status line, after its first byte: "HTTP/1.x", a space, three digits, then a
 * space and a reason phrase, or the line's end. */
static void status_byte(struct http_scan *s, uint8_t c)
{
    switch (s->state) {
    case S_STATUS_VERSION:
        if (!in_version(s, c)) {
            s->pos = 0;
            s->status = 0;
            s->state = c == ' ' ? S_STATUS_CODE : S_DEAD;
        }
        break;
    case S_STATUS_CODE:
        if (s->pos < 3 && c >= '0' && c <= '9') {
            s->status = (uint16_t)(s->status * 10 + (c - '0'));
            s->pos++;
        } else if (s->pos < 3 || s->status < 100 || s->status > 599) {
            s->state = S_DEAD;
        } else if (c == ' ') {
            s->state = S_REASON;
        } else if (c == '\r') {
            s->state = S_LINE_CR;
        } else if (c == '\n') {
            s->state = S_FIELD_START;
        } else {
            s->state = S_DEAD;
        }
        break;
    default: /* S_REASON */
        if (c == '\n')
            s->state = S_FIELD_START;
        break;
    }
}

/* One byte of a head or of chunk framing. Returns the event it completes. */
static enum http_scan_event step(struct http_scan *s, uint8_t c, struct trace_ctx *ctx)
{
    if (s->state <= S_END_CR && s->state != S_IDLE && ++s->head_len > head_max(s)) {
        s->state = S_DEAD;
        return HTTP_SCAN_NONE;
    }
    switch (s->state) {
    case S_IDLE:
        if (c == '\r' || c == '\n')
            break;
        if (s->response ? c != 'H' : !is_tchar(c)) {
            s->state = S_DEAD;
            break;
        }
        start_head(s);
        s->head_len = 1;
        s->pos = 1;
        s->method_head = c == 'H';
        s->state = s->response ? S_STATUS_VERSION : S_METHOD;
        return HTTP_SCAN_HEAD_START;
    case S_METHOD:
        if (c == ' ' && s->pos > 0) {
            s->method_head = s->method_head && s->pos == 4;
            s->state = S_TARGET;
        } else if (is_tchar(c) && s->pos < HTTP_METHOD_MAX) {
            s->method_head = s->method_head && s->pos < 4 && c == (uint8_t)"HEAD"[s->pos];
            s->pos++;
        } else {
            s->state = S_DEAD;
        }
        break;
    case S_STATUS_VERSION:
    case S_STATUS_CODE:
    case S_REASON:
        status_byte(s, c);
        break;
    case S_TARGET:
        if (c == ' ') {
            s->pos = 0;
            s->state = S_VERSION;
        } else if (c <= 0x20 || c == 0x7f) {
            s->state = S_DEAD; /* HTTP/0.9 or not HTTP */
        }
        break;
    case S_VERSION:
        if (!in_version(s, c))
            s->state = c == '\r' ? S_LINE_CR : c == '\n' ? S_FIELD_START : S_DEAD;
        break;
    case S_LINE_CR:
        s->state = c == '\n' ? S_FIELD_START : S_DEAD;
        break;
    case S_FIELD_START:
        if (c == '\r') {
            s->state = S_END_CR;
        } else if (c == '\n') {
            return end_head(s, ctx);
        } else if (c == ' ' || c == '\t') {
            /* obsolete line folding continues the previous field: a folded traceparent is not
             * one; a folded length or coding makes the framing unreadable */
            if (s->field == F_TRACEPARENT)
                s->tp_count = 2;
            else if (s->field != F_OTHER)
                s->state = S_DEAD;
            if (s->state != S_DEAD) {
                s->field = F_OTHER;
                s->state = S_VALUE;
            }
        } else if (is_tchar(c)) {
            s->names = NAMES_ALL;
            s->pos = 0;
            name_byte(s, c);
            s->state = S_NAME;
        } else {
            s->state = S_DEAD;
        }
        break;
    case S_NAME:
        if (c == ':')
            begin_value(s);
        else if (is_tchar(c))
            name_byte(s, c);
        else
            s->state = S_DEAD;
        break;
    case S_VALUE:
        if (c == '\n') {
            s->state = end_field(s) == 0 ? S_FIELD_START : S_DEAD;
            s->pos = 0;
        } else {
            value_byte(s, c);
        }
        break;
    case S_END_CR:
        if (c != '\n') {
            s->state = S_DEAD;
            break;
        }
        return end_head(s, ctx);
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
        break;
    }
    case S_CHUNK_EXT:
        if (c == '\n')
            chunk_size_done(s);
        break;
    case S_CHUNK_SIZE_CR:
        if (c == '\n')
            chunk_size_done(s);
        else
            s->state = S_DEAD;
        break;
    case S_CHUNK_DATA_END:
        if (c == '\r' || c == '\n') {
            s->state = c == '\r' ? S_CHUNK_DATA_CR : S_CHUNK_SIZE;
            s->pos = 0;
            s->left = 0;
        } else {
            s->state = S_DEAD;
        }
        break;
    case S_CHUNK_DATA_CR:
        s->state = c == '\n' ? S_CHUNK_SIZE : S_DEAD;
        break;
    case S_TRAILER_START:
        if (c == '\r') {
            s->state = S_TRAILER_END_CR;
        } else if (c == '\n') {
            s->state = S_IDLE;
            return s->response ? HTTP_SCAN_MESSAGE_END : HTTP_SCAN_NONE;
        } else {
            s->state = S_TRAILER_LINE;
        }
        break;
    case S_TRAILER_LINE:
        if (c == '\n')
            s->state = S_TRAILER_START;
        break;
    case S_TRAILER_END_CR:
        s->state = c == '\n' ? S_IDLE : S_DEAD;
        return s->state == S_IDLE && s->response ? HTTP_SCAN_MESSAGE_END : HTTP_SCAN_NONE;
    default:
        s->state = S_DEAD;
        break;
    }
    return HTTP_SCAN_NONE;
}

/* How many of the next bytes can be taken at once: the long runs of a head that need no
 * decision (the request target, a name no longer matching any wanted one, values of other
 * headers, the traceparent value itself, copied whole). Never past the head limit, so the byte
 * that passes it still goes through step() and ends the scanning exactly where byte-by-byte
 * scanning would; the fuzz target checks that both agree. */
static size_t bulk(struct http_scan *s, const uint8_t *p, size_t n)
{
    size_t room = head_max(s) - s->head_len, max = n < room ? n : room, k = 0;
    switch (s->state) {
    case S_TARGET:
        while (k < max && p[k] > 0x20 && p[k] != 0x7f)
            k++;
        return k;
    case S_NAME:
        if (s->names)
            return 0;
        while (k < max && p[k] != ':' && is_tchar(p[k]))
            k++;
        if (s->pos < UINT8_MAX)
            s->pos = (uint8_t)(k < (size_t)(UINT8_MAX - s->pos) ? s->pos + k : UINT8_MAX);
        return k;
    case S_VALUE:
        if (s->field == F_OTHER) {
            const uint8_t *nl = memchr(p, '\n', max);
            return nl ? (size_t)(nl - p) : max;
        }
        if (s->field == F_TRACEPARENT && !s->tp_ows && s->tp_len < HTTP_TP_BUF) {
            size_t cap = HTTP_TP_BUF - s->tp_len;
            while (k < max && k < cap && !is_blank(p[k]) && p[k] != '\n')
                k++;
            memcpy(s->tp + s->tp_len, p, k);
            s->tp_len = (uint8_t)(s->tp_len + k);
            return k;
        }
        return 0;
    default:
        return 0;
    }
}

/* 1 when p[0..n) is names_wanted[i] in any case. */
static int name_is(const uint8_t *p, size_t n, unsigned i)
{
    if (n != names_len[i])
        return 0;
    for (size_t k = 0; k < n; k++)
        if (lower(p[k]) != (uint8_t)names_wanted[i][k])
            return 0;
    return 1;
}

/* A traceparent line's value v[0..n) (from after the ':' to the LF), taken as value_byte()
 * takes it byte by byte: blanks before it skipped, one run of non-blanks, then blanks only.
 * Copies the run into s->tp (which only tp_len, set by the caller, makes meaningful) and
 * returns its length, or TP_TOO_LONG. */
static uint8_t whole_tp_value(struct http_scan *s, const uint8_t *v, size_t n)
{
    size_t a = 0;
    while (a < n && is_blank(v[a]))
        a++;
    size_t b = a;
    while (b < n && !is_blank(v[b]))
        b++;
    size_t run = b - a;
    while (b < n && is_blank(v[b]))
        b++;
    if (b < n || run > HTTP_TP_BUF)
        return TP_TOO_LONG;
    memcpy(s->tp, v + a, run);
    return (uint8_t)run;
}

/* The common case in one pass: a whole head in p[0..n), of the plainest form (ending in an
 * empty CRLF line, no folding, no Content-Length or Transfer-Encoding: no body), right after its first byte
 * (HTTP_SCAN_HEAD_START). Byte-at-a-time, such a head cost about 3% of a keep-alive request;
 * here each line is found with memchr, names are compared only when their length is one we
 * want, and nothing else is called (memmem for the head's end and memcmp for the version were
 * a third of what remained, perf).
 * Returns the bytes of the head consumed, through its empty line, with the state exactly as
 * step() would leave it (the fuzz target compares both ways on every input); 0 when the head is
 * not of that form or not whole, touching nothing: then the state machine reads it. */
static size_t whole_head(struct http_scan *s, const uint8_t *p, size_t n, struct trace_ctx *ctx)
{
    size_t max = n < HTTP_HEAD_MAX - 1 ? n : HTTP_HEAD_MAX - 1; /* head_len is 1 already */
    /* the request line: the method's other bytes, the target, the version, CR LF; each loop
     * stops at the line's CR at the latest (neither a tchar nor a target byte) */
    const uint8_t *nl = memchr(p, '\n', max);
    if (!nl)
        return 0;
    size_t eol = (size_t)(nl - p), i = 0;
    if (eol < 10 || p[eol - 1] != '\r')
        return 0;
    while (p[i] != ' ') {
        if (!is_tchar(p[i]) || i + 1 >= HTTP_METHOD_MAX)
            return 0;
        i++;
    }
    uint8_t method_head = s->method_head && i == 3 && p[0] == 'E' && p[1] == 'A' && p[2] == 'D';
    for (i++; p[i] != ' '; i++)
        if (p[i] < 0x20 || p[i] == 0x7f)
            return 0;
    i++;
    if (i + 9 != eol) /* "HTTP/1.x\r" is all that is left */
        return 0;
    for (unsigned k = 0; k < sizeof version_prefix - 1; k++)
        if (p[i + k] != (uint8_t)version_prefix[k])
            return 0;
    if (p[i + 7] < '0' || p[i + 7] > '9')
        return 0;
    i = eol + 1;
    uint8_t tp_count = 0, tp_len = 0;
    /* header lines, up to the empty one; a line may end with a bare LF, as the state machine
     * allows (a CR before the LF is a blank of the value to both) */
    for (;;) {
        if (i + 1 >= max)
            return 0; /* not whole */
        if (p[i] == '\r') {
            if (p[i + 1] != '\n')
                return 0;
            break;
        }
        nl = memchr(p + i, '\n', max - i);
        if (!nl)
            return 0;
        size_t name = i, next = (size_t)(nl - p) + 1;
        while (p[i] != ':') /* stops at the LF at the latest */
            if (!is_tchar(p[i++]))
                return 0; /* folding, an empty line of a bare LF, or not a name */
        size_t name_len = i - name;
        if (!name_len || name_is(p + name, name_len, 1) || name_is(p + name, name_len, 2))
            return 0; /* no name; or Content-Length, Transfer-Encoding: a body to follow */
        if (name_is(p + name, name_len, 0)) {
            tp_len = whole_tp_value(s, p + i + 1, next - 1 - (i + 1));
            tp_count = tp_count < 2 ? tp_count + 1 : 2;
        }
        i = next;
    }
    size_t end = i + 2;
    s->method_head = method_head;
    s->tp_count = tp_count;
    s->tp_len = tp_len;
    head_context(s, ctx);
    s->state = S_IDLE;
    s->left = 0;
    s->pos = 0;
    s->head_len = (uint16_t)(1 + end);
    return end;
}

/* A Content-Length value v[0..n) (from after the ':' to the LF) of the plainest form, as
 * value_byte() takes it: blanks, 1 to CL_DIGITS_MAX digits, blanks. The value, or -1. */
static int64_t whole_length(const uint8_t *v, size_t n)
{
    size_t a = 0, b;
    while (a < n && is_blank(v[a]))
        a++;
    uint64_t cl = 0;
    for (b = a; b < n && v[b] >= '0' && v[b] <= '9'; b++)
        cl = cl * 10 + (uint64_t)(v[b] - '0');
    if (b == a || b - a > CL_DIGITS_MAX)
        return -1;
    while (b < n && is_blank(v[b]))
        b++;
    return b == n ? (int64_t)cl : -1;
}

/* whole_head's counterpart for responses: a whole response head in p[0..n) right after its
 * first byte, of the plainest form (a CRLF status line of a final status, CRLF header lines,
 * at most agreeing Content-Length headers, no Transfer-Encoding, no folding), in one pass: byte
 * by byte, the usual 40-byte answer took 150-200 ns, a third of that this way. Returns the
 * bytes consumed through the empty line with *event and the state exactly as step() would
 * leave them (tests/fuzz/fuzz_http_resp.c compares both ways), or 0, touching nothing. */
static size_t whole_response_head(struct http_scan *s, const uint8_t *p, size_t n,
                                  enum http_scan_event *event, struct trace_ctx *ctx)
{
    size_t max = n < HTTP_RESPONSE_HEAD_MAX - 1 ? n : HTTP_RESPONSE_HEAD_MAX - 1;
    const uint8_t *nl = memchr(p, '\n', max);
    if (!nl)
        return 0;
    /* "TTP/1.x SSS" then " reason\r" or "\r" */
    size_t eol = (size_t)(nl - p);
    if (eol < 12 || p[eol - 1] != '\r' || (p[11] != ' ' && eol != 12))
        return 0;
    for (unsigned k = 1; k < sizeof version_prefix - 1; k++)
        if (p[k - 1] != (uint8_t)version_prefix[k])
            return 0;
    if (p[6] < '0' || p[6] > '9' || p[7] != ' ')
        return 0;
    unsigned status = 0;
    for (unsigned k = 8; k < 11; k++) {
        if (p[k] < '0' || p[k] > '9')
            return 0;
        status = status * 10 + (unsigned)(p[k] - '0');
    }
    if (status < 200 || status > 599)
        return 0; /* interim heads, and what step() refuses, go byte by byte */
    size_t i = eol + 1;
    int64_t cl = -1;
    for (;;) {
        if (i + 1 >= max)
            return 0; /* not whole */
        if (p[i] == '\r') {
            if (p[i + 1] != '\n')
                return 0;
            break;
        }
        nl = memchr(p + i, '\n', max - i);
        if (!nl)
            return 0;
        size_t name = i, next = (size_t)(nl - p) + 1;
        while (p[i] != ':')
            if (!is_tchar(p[i++]))
                return 0;
        size_t name_len = i - name;
        if (!name_len || name_is(p + name, name_len, 2))
            return 0; /* no name, or Transfer-Encoding */
        if (name_is(p + name, name_len, 1)) {
            int64_t v = whole_length(p + i + 1, next - 1 - (i + 1));
            if (v < 0 || (cl >= 0 && v != cl))
                return 0;
            cl = v;
        }
        i = next;
    }
    size_t end = i + 2;
    s->status = (uint16_t)status;
    s->cl_seen = cl >= 0;
    s->cl = cl >= 0 ? (uint64_t)cl : 0;
    s->head_len = (uint16_t)(1 + end);
    *event = end_response_head(s, ctx);
    return end;
}

size_t http_scan_feed(struct http_scan *s, const uint8_t *p, size_t n, enum http_scan_event *event,
                      struct trace_ctx *ctx)
{
    size_t i = 0;
    *event = HTTP_SCAN_NONE;
    if (s->state == S_METHOD && s->head_len == 1) {
        size_t k = whole_head(s, p, n, ctx);
        if (k) {
            *event = HTTP_SCAN_HEAD_END;
            return k;
        }
    }
    if (s->state == S_STATUS_VERSION && s->head_len == 1) {
        size_t k = whole_response_head(s, p, n, event, ctx);
        if (k)
            return k;
    }
    while (i < n) {
        if (s->state == S_DEAD || s->state == S_UNTIL_CLOSE)
            return n;
        if (s->state == S_BODY || s->state == S_CHUNK_DATA) {
            uint64_t take = n - i < s->left ? n - i : s->left;
            i += take;
            s->left -= take;
            if (s->left == 0 && s->state == S_CHUNK_DATA) {
                s->state = S_CHUNK_DATA_END;
            } else if (s->left == 0) {
                s->state = S_IDLE;
                if (s->response) {
                    *event = HTTP_SCAN_MESSAGE_END;
                    return i;
                }
            }
            continue;
        }
        /* The long, uninteresting runs of a head (the request target, values of other
         * headers) in bulk; never past the head limit, so the byte that passes it still goes
         * through step() and ends the scanning exactly where byte-by-byte scanning would. */
        /* One byte-wide test of the state: testing `names` here too made gcc load state and
         * names as one 32-bit word right after step() stored them as bytes, a store-forwarding
         * stall that alone took a quarter of the scanner's time (perf annotate); bulk() looks at
         * `names` itself. */
        size_t k = 0;
        uint8_t st = s->state;
        if (st == S_TARGET || st == S_VALUE || st == S_NAME)
            k = bulk(s, p + i, n - i);
        if (k) {
            s->head_len = (uint16_t)(s->head_len + k);
            i += k;
            if (i == n)
                break;
        }
        enum http_scan_event e = step(s, p[i++], ctx);
        if (e != HTTP_SCAN_NONE) {
            *event = e;
            return i;
        }
    }
    return n;
}
