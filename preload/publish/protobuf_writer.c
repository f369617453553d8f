/* protobuf_writer.c — see protobuf_writer.h. */
#include "protobuf_writer.h"

#include <string.h>

void pb_init(struct pb_writer *w, void *buf, size_t cap)
{
    w->buf = buf;
    w->cap = buf ? cap : 0;
    w->len = 0;
    w->overflow = 0;
}

int pb_status(const struct pb_writer *w) { return w->overflow ? -1 : 0; }

size_t pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* Claims n bytes at the end of the output, or marks the writer overflowed. */
static uint8_t *claim(struct pb_writer *w, size_t n)
{
    if (w->overflow || n > w->cap - w->len) {
        w->overflow = 1;
        return NULL;
    }
    uint8_t *p = w->buf + w->len;
    w->len += n;
    return p;
}

/* Little-endian base-128, low group first, high bit = "more follows". */
static size_t encode_varint(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

int pb_put_varint(struct pb_writer *w, uint64_t v)
{
    uint8_t *p = claim(w, pb_varint_size(v));
    if (!p)
        return -1;
    encode_varint(p, v);
    return 0;
}

int pb_put_tag(struct pb_writer *w, uint32_t field, enum pb_wire_type type)
{
    return pb_put_varint(w, (uint64_t)field << 3 | (uint64_t)type);
}

int pb_put_raw(struct pb_writer *w, const void *data, size_t n)
{
    uint8_t *p = claim(w, n);
    if (!p)
        return -1;
    if (n)
        memcpy(p, data, n);
    return 0;
}

int pb_put_uint64_field(struct pb_writer *w, uint32_t field, uint64_t v)
{
    pb_put_tag(w, field, PB_WIRE_VARINT);
    return pb_put_varint(w, v);
}

int pb_put_bytes_field(struct pb_writer *w, uint32_t field, const void *data, size_t n)
{
    pb_put_tag(w, field, PB_WIRE_LEN);
    pb_put_varint(w, n);
    return pb_put_raw(w, data, n);
}

int pb_put_string_field(struct pb_writer *w, uint32_t field, const char *s)
{
    return pb_put_bytes_field(w, field, s, strlen(s));
}

pb_msg pb_begin(struct pb_writer *w, uint32_t field)
{
    pb_put_tag(w, field, PB_WIRE_LEN);
    pb_msg m = w->len;
    claim(w, PB_LEN_RESERVE);
    return m;
}

int pb_end(struct pb_writer *w, pb_msg m)
{
    if (w->overflow)
        return -1;
    size_t body = m + PB_LEN_RESERVE;
    size_t body_len = w->len - body;
    if (body_len > PB_MSG_MAX) {
        w->overflow = 1;
        return -1;
    }
    /* Write the minimal varint where the reservation starts and slide the body down to follow
     * it: readers get canonical protobuf, with no padded varints to trip a strict decoder. */
    size_t n = encode_varint(w->buf + m, body_len);
    if (n < PB_LEN_RESERVE) {
        memmove(w->buf + m + n, w->buf + body, body_len);
        w->len -= PB_LEN_RESERVE - n;
    }
    return 0;
}

/* A mark taken after an overflow is PB_NO_MARK: rolling back to it must not hide the overflow
 * that happened before it. */
#define PB_NO_MARK ((size_t)-1)

size_t pb_mark(const struct pb_writer *w) { return w->overflow ? PB_NO_MARK : w->len; }

void pb_rollback(struct pb_writer *w, size_t mark)
{
    if (mark == PB_NO_MARK || mark > w->len)
        return;
    w->len = mark;
    w->overflow = 0;
}

int pb_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t out = 0;
    const uint8_t *q = *p;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (q >= end)
            return -1;
        uint8_t b = *q++;
        out |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *v = out;
            return 0;
        }
    }
    return -1;
}
