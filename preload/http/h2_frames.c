/* h2_frames.c — see h2_frames.h. */
#include "h2_frames.h"

#include <string.h>

static const uint8_t preface[H2_PREFACE_LEN + 1] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

enum frame_type {
    T_DATA = 0,
    T_HEADERS = 1,
    T_PRIORITY = 2,
    T_RST_STREAM = 3,
    T_SETTINGS = 4,
    T_PUSH_PROMISE = 5,
    T_PING = 6,
    T_GOAWAY = 7,
    T_WINDOW_UPDATE = 8,
    T_CONTINUATION = 9,
};

#define F_END_STREAM 0x1
#define F_ACK 0x1
#define F_END_HEADERS 0x4
#define F_PADDED 0x8
#define F_PRIORITY 0x20

#define SETTINGS_HEADER_TABLE_SIZE 1
#define SETTING_LEN 6
#define PRIORITY_FIELDS_LEN 5

void h2_frames_init(struct h2_frames *f, enum h2_side side)
{
    memset(f, 0, offsetof(struct h2_frames, hpack));
    f->side = (uint8_t)side;
    f->preface_left = side == H2_REQUESTS ? H2_PREFACE_LEN : 0;
    if (side == H2_REQUESTS)
        hpack_init(&f->hpack);
}

void h2_frames_table_limit(struct h2_frames *f, uint32_t value)
{
    f->limit_pending = 1;
    f->pending_limit = value;
}

static uint32_t be32(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void emit(h2_event_fn fn, void *arg, uint8_t type, uint32_t stream, uint32_t value)
{
    struct h2_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = type;
    ev.stream = stream;
    ev.value = value;
    fn(arg, &ev);
}

/* What a request's header block says: its traceparent, when it has exactly one valid one. */
struct request_fields {
    unsigned traceparents;
    struct trace_ctx ctx;
};

static void take_field(void *arg, const struct hpack_field *h)
{
    static const char name[] = "traceparent";
    struct request_fields *r = arg;
    if (h->name_len != sizeof name - 1 || h->name_cut || memcmp(h->name, name, sizeof name - 1))
        return;
    if (r->traceparents++ == 0 && !h->value_cut)
        traceparent_parse_00(h->value, h->value_len, &r->ctx);
}

static int block_end(struct h2_frames *f, h2_event_fn fn, void *arg)
{
    f->in_block = 0;
    if (f->side == H2_RESPONSES) {
        if (f->block_end_stream)
            emit(fn, arg, H2_EV_STREAM_END, f->block_stream, 0);
        return 0;
    }
    struct request_fields r;
    memset(&r, 0, sizeof r);
    /* trailers are decoded too: the dynamic table follows every block */
    if (hpack_decode(&f->hpack, f->block, f->block_len, take_field, &r) != 0)
        return -1;
    if (!f->block_new)
        return 0;
    struct h2_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = H2_EV_REQUEST;
    ev.stream = f->block_stream;
    ev.end_stream = f->block_end_stream;
    if (r.traceparents == 1) /* two traceparents: none, as for HTTP/1.x */
        ev.ctx = r.ctx;
    fn(arg, &ev);
    return 0;
}

/* A frame's header is complete: checks what may come now. */
static int frame_begin(struct h2_frames *f)
{
    if (f->in_block != (f->type == T_CONTINUATION))
        return -1; /* only a CONTINUATION continues a block, and only a block */
    switch (f->type) {
    case T_HEADERS:
        if (f->stream == 0)
            return -1;
        f->in_block = 1;
        f->block_stream = f->stream;
        f->block_len = 0;
        f->block_end_stream = f->flags & F_END_STREAM;
        f->block_new = 0;
        if (f->side == H2_REQUESTS) {
            if (!(f->stream & 1))
                return -1; /* a client's streams are odd */
            if (f->stream > f->last_request) {
                f->block_new = 1;
                f->last_request = f->stream;
            }
        }
        return 0;
    case T_CONTINUATION:
        return f->stream == f->block_stream ? 0 : -1;
    case T_RST_STREAM:
        return f->stream != 0 && f->len == 4 ? 0 : -1;
    case T_SETTINGS:
        return f->stream == 0 && f->len % SETTING_LEN == 0 && !(f->flags & F_ACK && f->len) ? 0
                                                                                          : -1;
    case T_GOAWAY:
        return f->stream == 0 && f->len >= 8 ? 0 : -1;
    case T_PUSH_PROMISE:
        return f->side == H2_RESPONSES ? 0 : -1; /* only servers promise */
    default:
        return 0; /* DATA, PRIORITY, PING, WINDOW_UPDATE, unknown types: skipped */
    }
}

static int frame_end(struct h2_frames *f, h2_event_fn fn, void *arg)
{
    switch (f->type) {
    case T_DATA:
        if (f->side == H2_RESPONSES && f->flags & F_END_STREAM)
            emit(fn, arg, H2_EV_STREAM_END, f->stream, 0);
        return 0;
    case T_HEADERS:
    case T_CONTINUATION:
        return f->flags & F_END_HEADERS ? block_end(f, fn, arg) : 0;
    case T_RST_STREAM:
        emit(fn, arg, H2_EV_RESET, f->stream, 0);
        return 0;
    case T_GOAWAY:
        emit(fn, arg, H2_EV_GOAWAY, be32(f->small) & 0x7fffffffu, 0);
        return 0;
    case T_SETTINGS:
        /* the client acknowledges the server's settings: its encoder now keeps to the table
         * size they set (blocks sent before may still use the old one) */
        if (f->side == H2_REQUESTS && f->flags & F_ACK && f->limit_pending) {
            f->limit_pending = 0;
            hpack_set_limit(&f->hpack, f->pending_limit);
        }
        return 0;
    default:
        return 0;
    }
}

/* The bytes [at, at + n) of the current frame's payload. */
static int payload(struct h2_frames *f, const uint8_t *p, uint32_t at, uint32_t n,
                   h2_event_fn fn, void *arg)
{
    uint32_t end = at + n;
    if (f->type == T_SETTINGS) {
        for (uint32_t i = 0; i < n; i++) {
            f->small[f->small_len++] = p[i];
            if (f->small_len == SETTING_LEN) {
                f->small_len = 0;
                uint16_t id = (uint16_t)(f->small[0] << 8 | f->small[1]);
                if (f->side == H2_RESPONSES && id == SETTINGS_HEADER_TABLE_SIZE)
                    emit(fn, arg, H2_EV_TABLE_LIMIT, 0, be32(f->small + 2));
            }
        }
        return 0;
    }
    if (f->type == T_GOAWAY) {
        for (uint32_t i = at; i < end && i < 4; i++)
            f->small[i] = p[i - at];
        return 0;
    }
    if (f->type != T_HEADERS && f->type != T_CONTINUATION)
        return 0;
    /* a header block fragment: HEADERS may put a pad length before it, priority fields
     * before it and padding after it */
    uint32_t start = 0;
    if (f->type == T_HEADERS) {
        if (f->flags & F_PADDED) {
            if (at == 0) {
                f->pad = p[0];
            }
            start = 1;
        }
        if (f->flags & F_PRIORITY)
            start += PRIORITY_FIELDS_LEN;
        if (start + f->pad > f->len)
            return -1;
    }
    uint32_t stop = f->len - f->pad;
    uint32_t from = at > start ? at : start, to = end < stop ? end : stop;
    if (from >= to || f->side != H2_REQUESTS)
        return 0;
    if (f->block_len + (to - from) > H2_BLOCK_MAX)
        return -1;
    memcpy(f->block + f->block_len, p + (from - at), to - from);
    f->block_len += to - from;
    return 0;
}

int h2_frames_feed(struct h2_frames *f, const uint8_t *p, size_t n, h2_event_fn fn, void *arg)
{
    while (n && !f->failed) {
        if (f->preface_left) {
            const uint8_t *want = preface + (H2_PREFACE_LEN - f->preface_left);
            size_t k = n < f->preface_left ? n : f->preface_left;
            if (memcmp(p, want, k) != 0) {
                f->failed = 1;
                break;
            }
            f->preface_left = (uint8_t)(f->preface_left - k);
            p += k;
            n -= k;
            continue;
        }
        if (f->hdr_len < H2_FRAME_HEADER_LEN) {
            size_t k = H2_FRAME_HEADER_LEN - f->hdr_len;
            if (k > n)
                k = n;
            memcpy(f->hdr + f->hdr_len, p, k);
            f->hdr_len = (uint8_t)(f->hdr_len + k);
            p += k;
            n -= k;
            if (f->hdr_len < H2_FRAME_HEADER_LEN)
                break;
            f->len = (uint32_t)f->hdr[0] << 16 | (uint32_t)f->hdr[1] << 8 | f->hdr[2];
            f->type = f->hdr[3];
            f->flags = f->hdr[4];
            f->stream = be32(f->hdr + 5) & 0x7fffffffu;
            f->done = f->pad = 0;
            f->small_len = 0;
            if (frame_begin(f) != 0) {
                f->failed = 1;
                break;
            }
        } else {
            uint32_t k = f->len - f->done;
            if (k > n)
                k = (uint32_t)n;
            if (payload(f, p, f->done, k, fn, arg) != 0) {
                f->failed = 1;
                break;
            }
            f->done += k;
            p += k;
            n -= k;
        }
        if (f->done == f->len) {
            f->hdr_len = 0;
            if (frame_end(f, fn, arg) != 0)
                f->failed = 1;
        }
    }
    return f->failed ? -1 : 0;
}
