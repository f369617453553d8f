/* attribute_set — cost of proflink_set_attribute on the hot path (key already registered, value
 * of a typical route's length), next to one proflink_set_trace in the same run: both reached
 * through dlsym, as a tracer calls them. Run under the preload.
 * Prints "set_trace_ns X" and "set_attribute_ns Y" (best of several rounds, per call). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ITERS 10000000L
#define ROUNDS 5

typedef void (*set_fn)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t);
typedef int (*attr_fn)(const char *, const char *, size_t);

static uint8_t tid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static uint8_t sid[8] = {1, 2, 3, 4, 5, 6, 7, 8};
static uint8_t xid[8] = {8, 7, 6, 5, 4, 3, 2, 1};
static char route[] = "/api/v1/items/{id}";

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(void)
{
    set_fn set = (set_fn)dlsym(RTLD_DEFAULT, "proflink_set_trace");
    attr_fn attr = (attr_fn)dlsym(RTLD_DEFAULT, "proflink_set_attribute");
    if (!set || !attr) {
        fprintf(stderr, "attribute_set: run me under the proflink preload\n");
        return 1;
    }
    set(tid, sid, xid, 1);
    if (attr("http.route", route, sizeof route - 1) != 0) { /* registers the key: not measured */
        fprintf(stderr, "attribute_set: proflink_set_attribute failed (OTel context off?)\n");
        return 1;
    }
    double best_set = 1e18, best_attr = 1e18;
    for (int round = 0; round < ROUNDS; round++) {
        double t0 = now_ns();
        for (long i = 0; i < ITERS; i++) {
            sid[0] = (uint8_t)i; /* a new span of the same transaction every time */
            set(tid, sid, xid, 1);
        }
        double t1 = now_ns();
        for (long i = 0; i < ITERS; i++) {
            route[14] = (char)('a' + (i & 15)); /* a new value every time */
            attr("http.route", route, sizeof route - 1);
        }
        double t2 = now_ns();
        if ((t1 - t0) / ITERS < best_set)
            best_set = (t1 - t0) / ITERS;
        if ((t2 - t1) / ITERS < best_attr)
            best_attr = (t2 - t1) / ITERS;
    }
    printf("set_trace_ns %.2f\nset_attribute_ns %.2f\n", best_set, best_attr);
    return 0;
}
