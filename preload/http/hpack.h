/* hpack.h — an HPACK (RFC 7541) decoder for the header blocks a server reads on one HTTP/2
 * connection: integers, strings plain or Huffman-coded, the static table, the dynamic table with
 * its size updates, and every field representation. It hands each decoded field to a callback;
 * what to keep (traceparent, :method, :path) is the caller's choice.
 *
 * Pure: no system calls, no allocation, no global state. A block it cannot decode (malformed, or
 * beyond the limits below) leaves the table in an unknown state: the caller then stops
 * following the connection (tests/fuzz/fuzz_hpack.c compares every field with libnghttp2's
 * inflater). */
#ifndef PROFLINK_HPACK_H
#define PROFLINK_HPACK_H

#include <stddef.h>
#include <stdint.h>

/* The largest dynamic table followed: SETTINGS_HEADER_TABLE_SIZE's default, which nginx,
 * nghttpd, gRPC and Node keep. An encoder told of a larger limit may grow its table with a size
 * update; one above this refuses the block. */
#define HPACK_TABLE_MAX 4096
/* Every entry takes its name and value plus 32 bytes of the table's size. */
#define HPACK_ENTRY_OVERHEAD 32
#define HPACK_ENTRIES_MAX (HPACK_TABLE_MAX / HPACK_ENTRY_OVERHEAD)
/* Static table entries (RFC 7541 Appendix A); dynamic indices start after them. */
#define HPACK_STATIC_COUNT 61
/* An integer above this (a length, an index, a size) refuses the block: no real field is near it. */
#define HPACK_INT_MAX (1u << 24)

struct hpack_entry {
    uint16_t name_len;
    uint16_t value_len;
};

struct hpack_dec {
    uint32_t limit;   /* the largest size the encoder may set (the server's setting, capped) */
    uint32_t max;     /* the table's current maximum size (the last size update) */
    uint32_t size;    /* sum of the entries' sizes */
    uint16_t newest;  /* ring index of the newest entry */
    uint16_t count;   /* entries in the table */
    uint16_t bytes_head;  /* where the next entry's name and value bytes go in `bytes` */
    uint16_t bytes_used;  /* bytes of the live entries in `bytes` */
    uint8_t update_due;   /* the limit fell below max: the next block starts with a size update */
    struct hpack_entry entries[HPACK_ENTRIES_MAX];
    uint8_t bytes[HPACK_TABLE_MAX]; /* the entries' names and values, oldest first, circular */
};

/* One decoded field. name_len and value_len are the field's true lengths; at most
 * HPACK_TABLE_MAX bytes of name and value together are available (a longer field is never
 * stored in the table): name_cut / value_cut say a string was cut. */
struct hpack_field {
    const uint8_t *name;
    const uint8_t *value;
    size_t name_len, value_len;
    uint8_t name_cut, value_cut;
    uint8_t never_indexed; /* the 0001 representation: intermediaries must not index it */
};

typedef void (*hpack_field_fn)(void *arg, const struct hpack_field *f);

void hpack_init(struct hpack_dec *d);
/* SETTINGS_HEADER_TABLE_SIZE as the server sent it (the limit for the encoder's size updates). */
void hpack_set_limit(struct hpack_dec *d, uint32_t settings_value);
/* Decodes one whole header block (HEADERS plus its CONTINUATIONs, without padding or priority).
 * 0: every field was handed to fn; -1: the block is malformed or beyond the limits. */
int hpack_decode(struct hpack_dec *d, const uint8_t *p, size_t n, hpack_field_fn fn, void *arg);

#endif
