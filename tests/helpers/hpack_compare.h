/* hpack_compare.h — decodes one header block with proflink's HPACK decoder
 * (preload/http/hpack.c) and with libnghttp2's inflater, the reference, and compares them field
 * by field. Shared by tests/helpers/unit_hpack.c and tests/fuzz/fuzz_hpack.c. */
#ifndef HPACK_COMPARE_H
#define HPACK_COMPARE_H

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <string.h>

#include "../../preload/http/hpack.c"

#define CMP_FIELDS_MAX 512

struct cmp_field {
    size_t name_len, value_len;
    uint8_t cut;
    uint8_t never_indexed;
    uint8_t name[HPACK_TABLE_MAX], value[HPACK_TABLE_MAX];
};

/* the first CMP_FIELDS_MAX fields of a block are compared whole, the rest counted */
struct cmp_fields {
    size_t n;
    struct cmp_field f[CMP_FIELDS_MAX];
};

static void cmp_take(void *arg, const struct hpack_field *f)
{
    struct cmp_fields *out = arg;
    if (out->n++ >= CMP_FIELDS_MAX)
        return;
    struct cmp_field *c = &out->f[out->n - 1];
    c->name_len = f->name_len;
    c->value_len = f->value_len;
    c->cut = f->name_cut || f->value_cut;
    c->never_indexed = f->never_indexed;
    if (!c->cut) {
        memcpy(c->name, f->name, f->name_len);
        memcpy(c->value, f->value, f->value_len);
    }
}

enum cmp_result {
    CMP_SAME,          /* both decoded it, every field alike */
    CMP_BOTH_REFUSED,  /* neither decoded it */
    CMP_WE_REFUSED,    /* the reference decoded it, proflink refused it (a limit, or a bug) */
    CMP_DIFFERENT,     /* a bug: proflink decoded something else, or what the reference refuses */
};

static struct cmp_fields cmp_ours;

/* Decodes `block` with both; their tables must have been fed the same blocks before. */
static enum cmp_result cmp_block(struct hpack_dec *ours, nghttp2_hd_inflater *ref,
                                 const uint8_t *block, size_t len, int verbose)
{
    cmp_ours.n = 0;
    int mine = hpack_decode(ours, block, len, cmp_take, &cmp_ours);
    /* libnghttp2 does not end an empty block (no FINAL for no input): nothing to compare */
    if (len == 0)
        return mine == 0 && cmp_ours.n == 0 ? CMP_SAME : CMP_DIFFERENT;
    size_t i = 0;
    int ref_ok = 1, differ = 0;
    const uint8_t *in = block;
    size_t left = len;
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t rv = nghttp2_hd_inflate_hd2(ref, &nv, &flags, in, left, 1);
        if (rv < 0) {
            ref_ok = 0;
            break;
        }
        in += rv;
        left -= (size_t)rv;
        if (flags & NGHTTP2_HD_INFLATE_EMIT) {
            if (mine == 0 && !differ && i < CMP_FIELDS_MAX) {
                const struct cmp_field *c = i < cmp_ours.n ? &cmp_ours.f[i] : NULL;
                if (!c || c->name_len != nv.namelen || c->value_len != nv.valuelen ||
                    c->never_indexed != !!(nv.flags & NGHTTP2_NV_FLAG_NO_INDEX) ||
                    (!c->cut && (memcmp(c->name, nv.name, nv.namelen) != 0 ||
                                 memcmp(c->value, nv.value, nv.valuelen) != 0))) {
                    if (verbose)
                        fprintf(stderr, "field %zu differs: reference %.*s: %.*s\n", i,
                                (int)nv.namelen, nv.name, (int)nv.valuelen, nv.value);
                    differ = 1;
                }
            }
            i++;
        }
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(ref);
            break;
        }
        if (rv == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) {
            ref_ok = 0;
            break;
        }
    }
    if (mine != 0)
        return ref_ok ? CMP_WE_REFUSED : CMP_BOTH_REFUSED;
    if (!ref_ok || differ || i != cmp_ours.n) {
        if (verbose)
            fprintf(stderr, "proflink decoded %zu fields, the reference %s %zu\n", cmp_ours.n,
                    ref_ok ? "decoded" : "refused the block after", i);
        return CMP_DIFFERENT;
    }
    return CMP_SAME;
}

#endif
