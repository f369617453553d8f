/* fuzz_attrs — fuzz target for the OTel thread record's attribute writer (preload/context/otel_attrs.c):
 * an input is a program of put/remove operations with random keys, lengths and bytes on a
 * record-sized area, starting from random "fixed" entries. After every operation the area must
 * be well-formed (entries tile attrs-data-size exactly, one entry per key), within its capacity,
 * and equal to a simple model (key -> value); a refused put must leave it byte for byte as it was
 * and happen exactly when the model says it cannot fit.
 *
 * libFuzzer: clang -fsanitize=fuzzer,address,undefined (make fuzz). Without libFuzzer, build
 * with -DFUZZ_STANDALONE: main() feeds seeded random programs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/context/otel_attrs.c"

#define CAP 612 /* a 640-byte record's attribute area: the largest capacity tried */

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_attrs: %s\n", why);
    abort();
}

struct model {
    int present[256];
    uint8_t len[256];
    uint8_t val[256][255];
};

static size_t model_size(const struct model *m)
{
    size_t n = 0;
    for (int k = 0; k < 256; k++)
        if (m->present[k])
            n += 2 + m->len[k];
    return n;
}

static void check(const uint8_t *a, uint16_t size, size_t cap, const struct model *m)
{
    if (size > cap)
        fail("size past capacity");
    if (!otel_attrs_well_formed(a, size))
        fail("malformed area");
    if (size != model_size(m))
        fail("size differs from the model");
    for (size_t at = 0; at < size; at += 2 + a[at + 1]) {
        uint8_t k = a[at];
        if (!m->present[k] || m->len[k] != a[at + 1] || memcmp(m->val[k], a + at + 2, a[at + 1]))
            fail("entry differs from the model");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    static struct model m;
    uint8_t area[CAP + 16], before[CAP + 16];
    uint16_t size = 0;
    memset(&m, 0, sizeof m);
    memset(area, 0xee, sizeof area);
    if (n == 0)
        return 0;
    /* The first byte picks the capacity, so that short inputs reach the limit too. */
    size_t cap = d[0] % 2 ? CAP : (size_t)d[0] * CAP / 256;
    size_t i = 1;
    while (i + 3 <= n) {
        uint8_t op = d[i], key = d[i + 1];
        size_t len = d[i + 2];
        i += 3;
        if (op & 1) {
            int had = m.present[key];
            if (otel_attrs_remove(area, &size, key) != had)
                fail("remove result differs from the model");
            m.present[key] = 0;
        } else {
            if (len > n - i)
                len = n - i;
            size_t need = model_size(&m) - (m.present[key] ? 2 + m.len[key] : 0) + 2 + len;
            memcpy(before, area, sizeof area);
            uint16_t size_before = size;
            int rc = otel_attrs_put(area, &size, cap, key, d + i, len);
            if ((rc == 0) != (need <= cap))
                fail("put refused or accepted against the model");
            if (rc == 0) {
                m.present[key] = 1;
                m.len[key] = (uint8_t)len;
                memcpy(m.val[key], d + i, len);
            } else if (size != size_before || memcmp(before, area, sizeof area))
                fail("a refused put changed the area");
            i += len;
        }
        if (memcmp(area + cap, "\xee\xee\xee\xee\xee\xee\xee\xee\xee\xee\xee\xee\xee\xee\xee\xee", 16))
            fail("wrote past the capacity");
        check(area, size, cap, &m);
    }
    return 0;
}

#ifdef FUZZ_STANDALONE
#include "standalone.h"

int main(int argc, char **argv)
{
    return fuzz_standalone_main(argc, argv, "fuzz_attrs", 4096, 200000ul);
}
#endif
