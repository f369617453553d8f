/* hpack.c — see hpack.h. */
#include "hpack.h"

#include <string.h>

#include "hpack_huffman.h"

/* Arrays, not pointers: the table needs no relocation when the library is loaded. */
struct static_field {
    char name[28], value[14];
};

/* RFC 7541 Appendix A, index 1 first. */
static const struct static_field static_table[HPACK_STATIC_COUNT] = {
    {":authority", ""}, {":method", "GET"}, {":method", "POST"}, {":path", "/"},
    {":path", "/index.html"}, {":scheme", "http"}, {":scheme", "https"}, {":status", "200"},
    {":status", "204"}, {":status", "206"}, {":status", "304"}, {":status", "400"},
    {":status", "404"}, {":status", "500"}, {"accept-charset", ""},
    {"accept-encoding", "gzip, deflate"}, {"accept-language", ""}, {"accept-ranges", ""},
    {"accept", ""}, {"access-control-allow-origin", ""}, {"age", ""}, {"allow", ""},
    {"authorization", ""}, {"cache-control", ""}, {"content-disposition", ""},
    {"content-encoding", ""}, {"content-language", ""}, {"content-length", ""},
    {"content-location", ""}, {"content-range", ""}, {"content-type", ""}, {"cookie", ""},
    {"date", ""}, {"etag", ""}, {"expect", ""}, {"expires", ""}, {"from", ""}, {"host", ""},
    {"if-match", ""}, {"if-modified-since", ""}, {"if-none-match", ""}, {"if-range", ""},
    {"if-unmodified-since", ""}, {"last-modified", ""}, {"link", ""}, {"location", ""},
    {"max-forwards", ""}, {"proxy-authenticate", ""}, {"proxy-authorization", ""},
    {"range", ""}, {"referer", ""}, {"refresh", ""}, {"retry-after", ""}, {"server", ""},
    {"set-cookie", ""}, {"strict-transport-security", ""}, {"transfer-encoding", ""},
    {"user-agent", ""}, {"vary", ""}, {"via", ""}, {"www-authenticate", ""},
};

void hpack_init(struct hpack_dec *d)
{
    d->limit = HPACK_TABLE_MAX;
    d->max = HPACK_TABLE_MAX;
    d->size = 0;
    d->newest = 0;
    d->count = 0;
    d->bytes_head = 0;
    d->bytes_used = 0;
    d->update_due = 0;
}

/* An encoder told of a smaller table must say so at the start of its next block (RFC 7541
 * 4.2); until then the table keeps its size. */
void hpack_set_limit(struct hpack_dec *d, uint32_t settings_value)
{
    d->limit = settings_value;
    if (settings_value < d->max)
        d->update_due = 1;
}

/* An integer with an N-bit prefix (RFC 7541 5.1). 0 and *v set, or -1. */
static int read_int(const uint8_t **p, const uint8_t *end, unsigned prefix_bits, uint32_t *v)
{
    uint32_t mask = (1u << prefix_bits) - 1;
    uint32_t x = **p & mask;
    (*p)++;
    if (x < mask) {
        *v = x;
        return 0;
    }
    for (unsigned shift = 0; *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        x += (uint32_t)(b & 0x7f) << shift;
        if (x > HPACK_INT_MAX)
            return -1;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
        if (shift >= 21)
            return -1;
    }
    return -1;
}

/* Where decoded strings go: at most `cap` bytes kept, the true length counted. */
struct sink {
    uint8_t *out;
    size_t cap, len;
};

static inline void sink_put(struct sink *s, uint8_t b)
{
    if (s->len < s->cap)
        s->out[s->len] = b;
    s->len++;
}

/* Canonical decoding one bit at a time: `code` is the bits read so far for the current symbol;
 * the codes of length L are first..first+count[L]-1 and stand for symbols[index..]. At the end
 * only a prefix of EOS (all ones) shorter than 8 bits may remain (RFC 7541 5.2). */
static int huffman_decode(const uint8_t *p, size_t n, struct sink *s)
{
    uint32_t code = 0, first = 0, index = 0, len = 0;
    int all_ones = 1;
    for (size_t i = 0; i < n; i++) {
        for (int bit = 7; bit >= 0; bit--) {
            uint32_t b = (p[i] >> bit) & 1;
            code = code << 1 | b;
            all_ones &= (int)b;
            len++;
            uint32_t count = hpack_huffman_counts[len];
            if (code - first < count) {
                uint16_t sym = hpack_huffman_symbols[index + code - first];
                if (sym == HPACK_HUFFMAN_EOS)
                    return -1;
                sink_put(s, (uint8_t)sym);
                code = first = index = len = 0;
                all_ones = 1;
                continue;
            }
            index += count;
            first = (first + count) << 1;
            if (len == HPACK_HUFFMAN_MAX_LEN)
                return -1; /* unreachable for a complete code; kept as a bound */
        }
    }
    return len < 8 && all_ones ? 0 : -1;
}

/* A string literal (RFC 7541 5.2) into the sink. */
static int read_string(const uint8_t **p, const uint8_t *end, struct sink *s)
{
    if (*p >= end)
        return -1;
    int huffman = **p & 0x80;
    uint32_t n;
    if (read_int(p, end, 7, &n) != 0 || (size_t)(end - *p) < n)
        return -1;
    const uint8_t *src = *p;
    *p += n;
    if (huffman)
        return huffman_decode(src, n, s);
    size_t keep = n < s->cap ? n : s->cap;
    memcpy(s->out, src, keep);
    s->len = n;
    return 0;
}

static uint16_t ring_index(const struct hpack_dec *d, uint32_t age)
{
    return (uint16_t)((d->newest + HPACK_ENTRIES_MAX - age) % HPACK_ENTRIES_MAX);
}

/* Offset in `bytes` of the entry `age` places older than the newest. */
static uint16_t entry_offset(const struct hpack_dec *d, uint32_t age)
{
    uint32_t after = 0; /* bytes of the entries newer than it */
    for (uint32_t a = 0; a <= age; a++) {
        const struct hpack_entry *e = &d->entries[ring_index(d, a)];
        after += e->name_len + e->value_len;
    }
    return (uint16_t)((d->bytes_head + HPACK_TABLE_MAX - after) % HPACK_TABLE_MAX);
}

static void copy_out(const struct hpack_dec *d, uint16_t off, uint8_t *out, size_t n)
{
    size_t first = HPACK_TABLE_MAX - off;
    if (first >= n) {
        memcpy(out, d->bytes + off, n);
    } else {
        memcpy(out, d->bytes + off, first);
        memcpy(out + first, d->bytes, n - first);
    }
}

static void evict_oldest(struct hpack_dec *d)
{
    const struct hpack_entry *e = &d->entries[ring_index(d, d->count - 1u)];
    d->size -= e->name_len + e->value_len + HPACK_ENTRY_OVERHEAD;
    d->bytes_used = (uint16_t)(d->bytes_used - e->name_len - e->value_len);
    d->count--;
}

static void shrink_to(struct hpack_dec *d, uint32_t max)
{
    while (d->count && d->size > max)
        evict_oldest(d);
}

/* Adds a field (RFC 7541 4.4): older entries go until it fits; one larger than the table
 * empties it and is not added. */
static void table_add(struct hpack_dec *d, const struct hpack_field *f)
{
    uint32_t need = (uint32_t)(f->name_len + f->value_len) + HPACK_ENTRY_OVERHEAD;
    if (need > d->max) {
        shrink_to(d, 0);
        return;
    }
    shrink_to(d, d->max - need);
    /* it fits in max <= HPACK_TABLE_MAX, so it was decoded whole (never cut) */
    const uint8_t *src[2] = {f->name, f->value};
    size_t len[2] = {f->name_len, f->value_len};
    uint16_t head = d->bytes_head;
    for (int i = 0; i < 2; i++) {
        for (size_t k = 0; k < len[i]; k++) {
            d->bytes[head] = src[i][k];
            head = (uint16_t)((head + 1) % HPACK_TABLE_MAX);
        }
    }
    d->bytes_head = head;
    d->bytes_used = (uint16_t)(d->bytes_used + len[0] + len[1]);
    d->newest = d->count ? (uint16_t)((d->newest + 1) % HPACK_ENTRIES_MAX) : d->newest;
    d->entries[d->newest].name_len = (uint16_t)f->name_len;
    d->entries[d->newest].value_len = (uint16_t)f->value_len;
    d->count++;
    d->size += need;
}

/* Index (1-based, static then dynamic) into the field; name only when value_too is 0. The
 * bytes of a dynamic entry are copied into buf (HPACK_TABLE_MAX bytes). */
static int lookup(const struct hpack_dec *d, uint32_t index, int value_too, uint8_t *buf,
                  struct hpack_field *f)
{
    if (index == 0)
        return -1;
    if (index <= HPACK_STATIC_COUNT) {
        const struct static_field *s = &static_table[index - 1];
        f->name = (const uint8_t *)s->name;
        f->name_len = strlen(s->name);
        if (value_too) {
            f->value = (const uint8_t *)s->value;
            f->value_len = strlen(s->value);
        }
        return 0;
    }
    uint32_t age = index - HPACK_STATIC_COUNT - 1;
    if (age >= d->count)
        return -1;
    const struct hpack_entry *e = &d->entries[ring_index(d, age)];
    uint16_t off = entry_offset(d, age);
    size_t n = e->name_len + (value_too ? e->value_len : 0u);
    copy_out(d, off, buf, n);
    f->name = buf;
    f->name_len = e->name_len;
    if (value_too) {
        f->value = buf + e->name_len;
        f->value_len = e->value_len;
    }
    return 0;
}

int hpack_decode(struct hpack_dec *d, const uint8_t *p, size_t n, hpack_field_fn fn, void *arg)
{
    /* the current field's name and value; an entry that fits in the table fits here whole */
    uint8_t buf[HPACK_TABLE_MAX];
    const uint8_t *end = p + n;
    int fields_seen = 0;
    while (p < end) {
        uint8_t b = *p;
        struct hpack_field f;
        memset(&f, 0, sizeof f);
        if (d->update_due && (b & 0xe0) != 0x20)
            return -1;
        if (b & 0x80) { /* indexed field */
            uint32_t index;
            if (read_int(&p, end, 7, &index) != 0 || lookup(d, index, 1, buf, &f) != 0)
                return -1;
            fn(arg, &f);
            fields_seen = 1;
            continue;
        }
        if ((b & 0xe0) == 0x20) { /* dynamic table size update: only before the first field */
            uint32_t max;
            if (fields_seen || read_int(&p, end, 5, &max) != 0 || max > d->limit ||
                max > HPACK_TABLE_MAX)
                return -1;
            d->max = max;
            d->update_due = 0;
            shrink_to(d, max);
            continue;
        }
        int indexing = (b & 0xc0) == 0x40;
        unsigned prefix = indexing ? 6 : 4;
        f.never_indexed = (b & 0xf0) == 0x10;
        uint32_t index;
        if (read_int(&p, end, prefix, &index) != 0)
            return -1;
        size_t value_at;
        if (index) {
            if (lookup(d, index, 0, buf, &f) != 0)
                return -1;
            value_at = f.name == buf ? f.name_len : 0; /* a dynamic name is in buf */
        } else {
            struct sink s = {buf, sizeof buf, 0};
            if (read_string(&p, end, &s) != 0)
                return -1;
            f.name = buf;
            f.name_len = s.len;
            f.name_cut = s.len > s.cap;
            value_at = f.name_cut ? sizeof buf : s.len;
        }
        struct sink v = {buf + value_at, sizeof buf - value_at, 0};
        if (read_string(&p, end, &v) != 0)
            return -1;
        f.value = v.out;
        f.value_len = v.len;
        f.value_cut = v.len > v.cap;
        fn(arg, &f);
        fields_seen = 1;
        if (indexing)
            table_add(d, &f);
    }
    return 0;
}
