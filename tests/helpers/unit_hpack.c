/* unit_hpack.c — proflink's HPACK decoder (preload/http/hpack.c) against libnghttp2's inflater.
 *   unit_hpack random SEED BLOCKS   header lists made at random and encoded by libnghttp2's
 *                                   deflater (dynamic table, size updates, never-indexed
 *                                   fields, Huffman where it is shorter): every block must
 *                                   decode to the reference's fields
 *   unit_hpack corrupt SEED BLOCKS  the same blocks with bytes changed or cut: proflink may
 *                                   refuse what the reference decodes, never decode otherwise
 *   unit_hpack blocks FILE          blocks of another encoder (u32 little-endian length, bytes),
 *                                   fed in order to one table: each must decode alike
 * Prints one line of counts; exits 1 at the first difference, 77 without libnghttp2. */
#include "nghttp2_test.h"
#ifndef PROFLINK_NO_NGHTTP2
#include <stdint.h>
#include <stdlib.h>

#include "hpack_compare.h"

static const char *const NAMES[] = {
    ":method", ":path", ":scheme", ":authority", "traceparent", "tracestate", "user-agent",
    "content-type", "accept-encoding", "cookie", "x-request-id", "grpc-timeout", "te",
    "content-length", "authorization", "x-custom-header-with-a-long-name",
};

#define FIELDS_MAX 40
static uint8_t values[FIELDS_MAX][6000];
static uint8_t names[FIELDS_MAX][64];

static size_t make_block(nghttp2_hd_deflater *def, uint8_t *out, size_t cap)
{
    nghttp2_nv nv[FIELDS_MAX];
    size_t n = 1 + rnd(FIELDS_MAX - 1);
    for (size_t i = 0; i < n; i++) {
        size_t nl;
        if (rnd(4)) {
            const char *s = NAMES[rnd(sizeof NAMES / sizeof NAMES[0])];
            nl = strlen(s);
            memcpy(names[i], s, nl);
        } else {
            nl = 1 + rnd(40);
            for (size_t k = 0; k < nl; k++)
                names[i][k] = (uint8_t)('a' + rnd(26));
        }
        size_t vl = rnd(10) == 0 ? rnd(6000) : rnd(80);
        int kind = (int)rnd(3);
        for (size_t k = 0; k < vl; k++)
            values[i][k] = kind == 0 ? (uint8_t)rnd(256)
                         : kind == 1 ? (uint8_t)('0' + rnd(10))
                                     : (uint8_t)(' ' + rnd(95));
        if (rnd(3) == 0 && i > 0) { /* a repeat: the dynamic table serves it */
            memcpy(names[i], names[i - 1], 64);
            memcpy(values[i], values[i - 1], sizeof values[i]);
            nl = nv[i - 1].namelen;
            vl = nv[i - 1].valuelen;
        }
        nv[i] = (nghttp2_nv){names[i], values[i], nl, vl,
                             rnd(8) == 0 ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE};
    }
    ssize_t len = nghttp2_hd_deflate_hd(def, out, cap, nv, n);
    if (len < 0) {
        fprintf(stderr, "the deflater failed: %zd\n", len);
        exit(2);
    }
    return (size_t)len;
}

static int run_random(int corrupt, uint64_t seed, long blocks)
{
    static uint8_t block[FIELDS_MAX * 6200];
    struct hpack_dec *ours = malloc(sizeof *ours);
    nghttp2_hd_deflater *def;
    nghttp2_hd_inflater *ref;
    rng = seed | 1;
    long counts[4] = {0};
    long reset = 1;
    for (long b = 0; b < blocks; b++) {
        if (reset) {
            hpack_init(ours);
            if (b)
                nghttp2_hd_deflate_del(def), nghttp2_hd_inflate_del(ref);
            nghttp2_hd_deflate_new(&def, 4096);
            nghttp2_hd_inflate_new(&ref);
            uint32_t limit = rnd(4) ? 4096 : rnd(4097);
            hpack_set_limit(ours, limit);
            nghttp2_hd_inflate_change_table_size(ref, limit);
            if (limit != 4096)
                nghttp2_hd_deflate_change_table_size(def, limit);
            reset = 0;
        }
        if (rnd(16) == 0) /* the encoder changes its table size: a size update leads the block */
            nghttp2_hd_deflate_change_table_size(def, rnd(4097));
        size_t len = make_block(def, block, sizeof block);
        if (corrupt) {
            if (rnd(2) && len)
                len = rnd((uint32_t)len);
            for (int k = (int)rnd(4); k >= 0 && len; k--)
                block[rnd((uint32_t)len)] ^= (uint8_t)(1 + rnd(255));
        }
        enum cmp_result r = cmp_block(ours, ref, block, len, 1);
        counts[r]++;
        if (r == CMP_DIFFERENT || (!corrupt && r != CMP_SAME)) {
            fprintf(stderr, "block %ld (seed %llu): %s:", b, (unsigned long long)seed,
                    r == CMP_DIFFERENT ? "decoded differently" : "refused by proflink only");
            for (size_t k = 0; k < len && k < 64; k++)
                fprintf(stderr, " %02x", block[k]);
            fprintf(stderr, "%s\n", len > 64 ? " ..." : "");
            return 1;
        }
        if (r != CMP_SAME || corrupt)
            reset = 1; /* a refused or changed block leaves the tables apart */
    }
    printf("%ld same, %ld refused by both, %ld refused by proflink only\n", counts[CMP_SAME],
           counts[CMP_BOTH_REFUSED], counts[CMP_WE_REFUSED]);
    nghttp2_hd_deflate_del(def);
    nghttp2_hd_inflate_del(ref);
    free(ours);
    return 0;
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return perror(path), 2;
    struct hpack_dec *ours = malloc(sizeof *ours);
    nghttp2_hd_inflater *ref;
    hpack_init(ours);
    nghttp2_hd_inflate_new(&ref);
    static uint8_t block[1 << 20];
    long same = 0;
    uint8_t h[4];
    while (fread(h, 1, 4, f) == 4) {
        uint32_t len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                       (uint32_t)h[3] << 24;
        if (len > sizeof block || fread(block, 1, len, f) != len)
            return fprintf(stderr, "%s: truncated\n", path), 2;
        if (cmp_block(ours, ref, block, len, 1) != CMP_SAME) {
            fprintf(stderr, "block %ld of %s: not decoded alike\n", same, path);
            return 1;
        }
        same++;
    }
    printf("%ld same\n", same);
    nghttp2_hd_inflate_del(ref);
    free(ours);
    fclose(f);
    return same ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "blocks"))
        return run_file(argv[2]);
    if (argc == 4 && (!strcmp(argv[1], "random") || !strcmp(argv[1], "corrupt")))
        return run_random(argv[1][0] == 'c', strtoull(argv[2], NULL, 10), atol(argv[3]));
    fprintf(stderr, "usage: unit_hpack random|corrupt SEED BLOCKS | blocks FILE\n");
    return 2;
}
#endif
