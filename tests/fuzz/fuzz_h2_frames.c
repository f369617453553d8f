/* fuzz_h2_frames — fuzz target for the HTTP/2 frame reader (preload/http/h2_frames.c, with
 * hpack.c): for any input, on either side, the reader reports the same events (type, stream,
 * value, end_stream, context) and fails at the same point whether the bytes come whole, in
 * pieces cut at points taken from the input, or one at a time, and never reads out of bounds
 * (ASan, UBSan). Input: byte 0 = the side (bit 0) and whether the client preface is prepended
 * (bit 1), byte 1 = the piece size when cutting, then the bytes. libFuzzer as in tests/fuzz.mk;
 * -DFUZZ_STANDALONE gives a seeded random driver. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/http/h2_frames.c"
#include "../../preload/http/hpack.c"
#include "../../preload/leaves/ids.c"

#define EVENTS_MAX 2048

struct log {
    size_t n;
    struct h2_event ev[EVENTS_MAX];
};

static void take(void *arg, const struct h2_event *ev)
{
    struct log *l = arg;
    if (l->n < EVENTS_MAX)
        l->ev[l->n] = *ev;
    l->n++;
}

static struct log logs[3];
static struct h2_frames readers[3];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    enum h2_side side = data[0] & 1 ? H2_RESPONSES : H2_REQUESTS;
    size_t piece = 1 + data[1] % 64;
    static uint8_t in[H2_PREFACE_LEN + 8192];
    size_t n = 0;
    if (data[0] & 2 && side == H2_REQUESTS) {
        memcpy(in, preface, H2_PREFACE_LEN);
        n = H2_PREFACE_LEN;
    }
    size_t rest = size - 2 < sizeof in - n ? size - 2 : sizeof in - n;
    memcpy(in + n, data + 2, rest);
    n += rest;
    int rc[3];
    for (int way = 0; way < 3; way++) {
        memset(&logs[way], 0, sizeof logs[way].n);
        logs[way].n = 0;
        h2_frames_init(&readers[way], side);
        size_t step = way == 0 ? n : way == 1 ? piece : 1;
        rc[way] = 0;
        for (size_t at = 0; at < n || (n == 0 && at == 0); at += step) {
            size_t k = n - at < step ? n - at : step;
            rc[way] = h2_frames_feed(&readers[way], in + at, k, take, &logs[way]);
            if (rc[way] || n == 0)
                break;
        }
    }
    for (int way = 1; way < 3; way++) {
        if (rc[way] != rc[0] || logs[way].n != logs[0].n ||
            memcmp(logs[way].ev, logs[0].ev,
                   (logs[0].n < EVENTS_MAX ? logs[0].n : EVENTS_MAX) * sizeof logs[0].ev[0])) {
            fprintf(stderr, "fuzz_h2_frames: cut %s, the reader reports otherwise\n",
                    way == 1 ? "in pieces" : "byte by byte");
            abort();
        }
    }
    return 0;
}

#ifdef FUZZ_STANDALONE
#include "standalone.h"
int main(int argc, char **argv)
{
    return fuzz_standalone_main(argc, argv, "fuzz_h2_frames", 4096, 20000);
}
#endif
