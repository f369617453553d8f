/* unit_endpoint.c — the endpoint names of preload/http/endpoint.c: methods, and path templates
 * on a table of request targets with the template each must give; then random targets, whose
 * templates must be bounded, printable, start with '/' (or be "*"), and stay as they are when
 * templated again. Prints "N cases, M random targets, F failures"; exits 1 on a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/http/endpoint.c"

static const char *const cases[][2] = {
    {"/", "/"},
    {"/users/42", "/users/{id}"},
    {"/users/42/orders/7?page=2#top", "/users/{id}/orders/{id}"},
    {"/api/v1/items", "/api/v1/items"},
    {"/files/3f2a9c1d0e", "/files/{id}"},
    {"/files/deadbeef", "/files/deadbeef"},
    {"/blob/DEADBEEF01", "/blob/{id}"},
    {"/o/123e4567-e89b-12d3-a456-426614174000/x", "/o/{id}/x"},
    {"/o/123e4567-e89b-12d3-a456-42661417400", "/o/123e4567-e89b-12d3-a456-42661417400"},
    {"/add/cafe", "/add/cafe"},
    {"//double//slash/", "//double//slash/"},
    {"?q=1", "/"},
    {"", "/"},
    {"*", "*"},
    {"http://example.com/a/12?x", "/a/{id}"},
    {"https://example.com", "/"},
    {"/a b/\x01", "/a_b/_"},
    {"/v2/7/a%20b", "/v2/{id}/a%20b"},
};

static const char *const method_cases[][2] = {
    {"GET", "GET"}, {"PATCH", "PATCH"}, {"OPTIONS", "OPTIONS"}, {"get", "_OTHER"},
    {"PROPFIND", "_OTHER"}, {"", "_OTHER"}, {"GETX", "_OTHER"},
};

int main(void)
{
    int failures = 0;
    char out[ENDPOINT_TEMPLATE_MAX + 1], again[ENDPOINT_TEMPLATE_MAX + 1];
    size_t ncases = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < ncases; i++) {
        size_t n = endpoint_template((const uint8_t *)cases[i][0], strlen(cases[i][0]), out);
        if (strcmp(out, cases[i][1]) != 0 || n != strlen(out)) {
            printf("template of \"%s\": \"%s\", want \"%s\"\n", cases[i][0], out, cases[i][1]);
            failures++;
        }
    }
    for (size_t i = 0; i < sizeof method_cases / sizeof method_cases[0]; i++) {
        const char *m = method_cases[i][0];
        if (strcmp(endpoint_method((const uint8_t *)m, strlen(m)), method_cases[i][1]) != 0) {
            printf("method \"%s\": want %s\n", m, method_cases[i][1]);
            failures++;
        }
    }
    /* a long path is cut after its last whole segment and marked */
    char longp[600] = "";
    for (int i = 0; i < 40; i++)
        strcat(longp, "/segment");
    size_t n = endpoint_template((const uint8_t *)longp, strlen(longp), out);
    if (n > ENDPOINT_TEMPLATE_MAX || strcmp(out + n - 12, "/segment/...") != 0) {
        printf("long path: \"%s\"\n", out);
        failures++;
    }
    uint64_t r = 88172645463325252ull;
    long randoms = 200000;
    static const char alphabet[] = "/0123456789abcdefABCDEF-?#:_xyz% \x01\xff";
    for (long k = 0; k < randoms; k++) {
        uint8_t t[400];
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        size_t len = r % sizeof t;
        for (size_t i = 0; i < len; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            t[i] = (uint8_t)alphabet[r % (sizeof alphabet - 1)];
        }
        n = endpoint_template(t, len, out);
        int ok = n <= ENDPOINT_TEMPLATE_MAX && n == strlen(out) && (out[0] == '/' || !strcmp(out, "*"));
        for (size_t i = 0; i < n; i++)
            ok &= out[i] > 0x20 && out[i] < 0x7f;
        size_t m = endpoint_template((const uint8_t *)out, n, again);
        ok &= m == n && !strcmp(out, again);
        if (!ok) {
            printf("random target %ld: \"%s\" -> \"%s\"\n", k, out, again);
            failures++;
            break;
        }
    }
    printf("%zu cases, %ld random targets, %d failures\n", ncases, randoms, failures);
    return failures ? 1 : 0;
}
