/* fuzz_hpack — fuzz target for the HPACK decoder (preload/http/hpack.c) against libnghttp2's
 * inflater, the reference: for any input, proflink decodes a block only when the reference does,
 * to the same fields (name, value, never-indexed) in the same order; it may refuse a block the
 * reference decodes only beyond its limits (HPACK_TABLE_MAX, HPACK_INT_MAX).
 * Input: bytes 0-1 = the server's SETTINGS_HEADER_TABLE_SIZE (little endian, 0..65535), byte 2 =
 * where the rest is cut into two blocks fed in turn to the same tables (mod the length), then
 * the blocks. libFuzzer as in tests/fuzz.mk; -DFUZZ_STANDALONE gives a seeded random driver. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../helpers/hpack_compare.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct hpack_dec ours;
    if (size < 3)
        return 0;
    uint32_t limit = (uint32_t)data[0] | (uint32_t)data[1] << 8;
    const uint8_t *p = data + 3;
    size_t n = size - 3;
    size_t cut = n ? data[2] % (n + 1) : 0;
    nghttp2_hd_inflater *ref;
    if (nghttp2_hd_inflate_new(&ref) != 0)
        abort();
    hpack_init(&ours);
    nghttp2_hd_inflate_change_table_size(ref, limit);
    hpack_set_limit(&ours, limit);
    enum cmp_result r = cmp_block(&ours, ref, p, cut, 1);
    if (r == CMP_SAME)
        r = cmp_block(&ours, ref, p + cut, n - cut, 1);
    nghttp2_hd_inflate_del(ref);
    if (r == CMP_DIFFERENT) {
        fprintf(stderr, "fuzz_hpack: proflink and libnghttp2 decode differently\n");
        abort();
    }
    /* refusing what the reference decodes is allowed at proflink's limits only */
    if (r == CMP_WE_REFUSED && limit <= HPACK_TABLE_MAX) {
        int big_int = 0;
        for (size_t i = 0; i + 3 < n; i++) /* an integer of four or more continuation bytes */
            big_int |= (p[i] & p[i + 1] & p[i + 2] & p[i + 3]) >> 7;
        if (!big_int) {
            fprintf(stderr, "fuzz_hpack: proflink refused a block within its limits\n");
            abort();
        }
    }
    return 0;
}

#ifdef FUZZ_STANDALONE
#include "standalone.h"
int main(int argc, char **argv)
{
    return fuzz_standalone_main(argc, argv, "fuzz_hpack", 2048, 20000);
}
#endif
