/* nghttp2_test.h — what the drivers that compare proflink's HTTP/2 reading with libnghttp2
 * share: without libnghttp2's headers (-DPROFLINK_NO_NGHTTP2, tests/helpers.mk) a main that
 * says so and exits 77 (the suite skips); with them, a seeded xorshift generator. */
#ifndef NGHTTP2_TEST_H
#define NGHTTP2_TEST_H

#include <stdint.h>
#include <stdio.h>

#ifdef PROFLINK_NO_NGHTTP2
int main(void)
{
    puts("libnghttp2's headers are not installed (libnghttp2-dev)");
    return 77;
}
#else
static uint64_t rng;

/* 0..n-1 (0 for n = 0) */
static uint32_t rnd(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return n ? (uint32_t)(rng % n) : 0;
}
#endif

#endif
