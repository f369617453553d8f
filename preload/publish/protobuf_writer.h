/* protobuf_writer.h — a minimal protobuf encoder writing into a buffer the caller owns.
 *
 * Enough of the wire format for OTLP-style messages: varints, tags, length-delimited fields
 * (strings, bytes, nested messages). It never allocates. Nested messages are written
 * reserve-then-patch: pb_begin() reserves room for the length prefix, pb_end() writes the real
 * (minimal) varint and slides the body down, so one pass suffices and the output is exactly what
 * a two-pass encoder would produce. The price: while a message is open its reservation occupies
 * up to PB_LEN_RESERVE - 1 bytes more than the final encoding, so a buffer only just as large as
 * the final output may report an overflow.
 *
 * Errors are sticky: the first write that does not fit marks the writer as overflowed and every
 * later write is a no-op, so a caller may emit a whole message and check once at the end.
 * pb_mark()/pb_rollback() undo a partial write (and clear the overflow), which lets a caller try
 * an optional field and drop it if it does not fit. */
#ifndef PROFLINK_PROTOBUF_WRITER_H
#define PROFLINK_PROTOBUF_WRITER_H

#include <stddef.h>
#include <stdint.h>

enum pb_wire_type {
    PB_WIRE_VARINT = 0,
    PB_WIRE_I64 = 1,
    PB_WIRE_LEN = 2,
    PB_WIRE_I32 = 5,
};

struct pb_writer {
    uint8_t *buf;
    size_t cap;   /* bytes the writer may use */
    size_t len;   /* bytes written so far */
    int overflow; /* sticky: a write did not fit */
};

/* An open nested message: where its length prefix was reserved. */
typedef size_t pb_msg;

/* Room reserved for a nested message's length prefix: a 32-bit varint takes at most 5 bytes. */
#define PB_LEN_RESERVE 5
/* Nested messages are limited to what a 32-bit length can describe. */
#define PB_MSG_MAX 0xffffffffu

void pb_init(struct pb_writer *w, void *buf, size_t cap);

/* 0 while every write so far fitted, -1 after an overflow. */
int pb_status(const struct pb_writer *w);

/* Bytes a varint encoding of v takes (1..10). */
size_t pb_varint_size(uint64_t v);

/* Raw building blocks. Each returns 0, or -1 if the writer is (now) overflowed. */
int pb_put_varint(struct pb_writer *w, uint64_t v);
int pb_put_tag(struct pb_writer *w, uint32_t field, enum pb_wire_type type);
int pb_put_raw(struct pb_writer *w, const void *data, size_t n);

/* Whole fields. */
int pb_put_uint64_field(struct pb_writer *w, uint32_t field, uint64_t v);
int pb_put_bytes_field(struct pb_writer *w, uint32_t field, const void *data, size_t n);
int pb_put_string_field(struct pb_writer *w, uint32_t field, const char *s);

/* Nested message: pb_begin writes the tag and reserves the length; pb_end patches it.
 * Messages must be closed innermost first. pb_end returns -1 if the writer overflowed. */
pb_msg pb_begin(struct pb_writer *w, uint32_t field);
int pb_end(struct pb_writer *w, pb_msg m);

/* Checkpoints: pb_rollback(w, pb_mark(w)) forgets everything written after the mark and clears
 * the overflow flag. A mark must not be older than any message still open at the rollback. A
 * mark taken while already overflowed rolls back nothing (the earlier loss stays reported). */
size_t pb_mark(const struct pb_writer *w);
void pb_rollback(struct pb_writer *w, size_t mark);

/* Reads one varint at *p (not beyond end) into *v and advances *p. 0 ok, -1 truncated or longer
 * than 10 bytes. For callers that need to walk what they already wrote. */
int pb_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);

#endif
