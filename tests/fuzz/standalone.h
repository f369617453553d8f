/* standalone.h — the driver of a fuzz target built without libFuzzer (-DFUZZ_STANDALONE, see
 * tests/fuzz.mk): feeds LLVMFuzzerTestOneInput seeded random inputs of random length below
 * max_len. usage: NAME [-runs=N] [-seed=S] */
#ifndef PROFLINK_FUZZ_STANDALONE_H
#define PROFLINK_FUZZ_STANDALONE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The largest max_len a target may ask for. */
#define FUZZ_STANDALONE_MAX_LEN 4096

static int fuzz_standalone_main(int argc, char **argv, const char *name, size_t max_len,
                                unsigned long runs)
{
    static uint8_t buf[FUZZ_STANDALONE_MAX_LEN];
    unsigned long seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-runs=", 6))
            runs = strtoul(argv[i] + 6, NULL, 10);
        else if (!strncmp(argv[i], "-seed=", 6))
            seed = strtoul(argv[i] + 6, NULL, 10);
    }
    if (max_len > sizeof buf)
        max_len = sizeof buf;
    uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
    for (unsigned long run = 0; run < runs; run++) {
        size_t len = 0;
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t total = (size_t)(r % max_len);
        while (len < total) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            buf[len++] = (uint8_t)r;
        }
        LLVMFuzzerTestOneInput(buf, len);
    }
    printf("%s: %lu runs\n", name, runs);
    return 0;
}

#endif
