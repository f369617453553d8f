/* fuzz_messages — fuzz target for what proflink does with bytes the profiler (or anyone who
 * can write to its socket) sends: the datagram parser, the JSON records made from what it
 * accepts, and the bounded id table fed with arbitrary operations.
 *
 * libFuzzer: clang -fsanitize=fuzzer,address,undefined (make fuzz). Without libFuzzer, build
 * with -DFUZZ_STANDALONE: main() feeds a seeded random corpus (and any files named).
 * Input: first byte even → one datagram (the rest); odd → a program of table operations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/deferral/accum.c"
#include "../../preload/leaves/base64url.c"
#include "../../preload/leaves/clock.c"
#include "../../preload/leaves/fd_safe.c"
#include "../../preload/leaves/json.c"
#include "../../preload/messages/messages.c"
#include "../../preload/leaves/random.c"
#include "../../preload/messages/json_lines.c"
#include "../../preload/leaves/utf8.c"

static void fail(const char *why)
{
    fprintf(stderr, "fuzz_messages: %s\n", why);
    abort();
}

/* ---- a strict JSON checker for one record line ---------------------------------------------- */
struct cur {
    const unsigned char *p, *end;
};

static int value(struct cur *c, int depth);

static void ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int string(struct cur *c)
{
    if (c->p >= c->end || *c->p++ != '"')
        return 0;
    while (c->p < c->end) {
        unsigned char ch = *c->p++;
        if (ch == '"')
            return 1;
        if (ch < 0x20)
            return 0;
        if (ch == '\\') {
            if (c->p >= c->end)
                return 0;
            ch = *c->p++;
            if (ch == 'u') {
                for (int i = 0; i < 4; i++)
                    if (c->p >= c->end || !strchr("0123456789abcdefABCDEF", *c->p++))
                        return 0;
            } else if (!strchr("\"\\/bfnrt", ch) || !ch)
                return 0;
        } else if (ch >= 0x80) {
            size_t n = utf8_seq(c->p - 1, (size_t)(c->end - c->p + 1));
            if (!n)
                return 0;
            c->p += n - 1;
        }
    }
    return 0;
}

static int number(struct cur *c)
{
    const unsigned char *s = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    if (c->p == s || (*s == '0' && c->p - s > 1))
        return 0;
    return 1;
}

static int object(struct cur *c, int depth)
{
    c->p++; /* { */
    ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 1;
    }
    for (;;) {
        ws(c);
        if (!string(c))
            return 0;
        ws(c);
        if (c->p >= c->end || *c->p++ != ':')
            return 0;
        if (!value(c, depth + 1))
            return 0;
        ws(c);
        if (c->p >= c->end)
            return 0;
        if (*c->p == '}') {
            c->p++;
            return 1;
        }
        if (*c->p++ != ',')
            return 0;
    }
}

static int value(struct cur *c, int depth)
{
    ws(c);
    if (c->p >= c->end || depth > 4)
        return 0;
    if (*c->p == '{')
        return object(c, depth);
    if (*c->p == '"')
        return string(c);
    return number(c);
}

static void check_record(const char *line, size_t len)
{
    if (len == 0 || len > RECORD_MAX || line[len - 1] != '\n')
        fail("record length or newline");
    if (memchr(line, '\n', len - 1))
        fail("newline inside a record");
    struct cur c = {(const unsigned char *)line, (const unsigned char *)line + len - 1};
    if (c.p >= c.end || *c.p != '{' || !object(&c, 0) || c.p != c.end)
        fail("record is not one JSON object");
}

static void check_transaction_line(const char *line, size_t len, void *ctx)
{
    (void)ctx;
    check_record(line, len);
}

/* ---- datagrams ----------------------------------------------------------------------------- */
static void one_datagram(const uint8_t *d, size_t n)
{
    proflink_message m;
    enum msg_verdict v = message_parse(d, n, &m);
    if (v != MSG_VALID)
        return;
    if (m.type == PROFLINK_MSG_CORRELATION && n < MSG_CORRELATION_SIZE)
        fail("short correlation accepted");
    if (m.type == PROFLINK_MSG_REGISTRATION && m.u.registration.host_id &&
        (m.u.registration.host_id < (const char *)d + MSG_REGISTRATION_V2_MIN ||
         m.u.registration.host_id + m.u.registration.host_id_len > (const char *)d + n))
        fail("host id outside the datagram");
    char out[RECORD_MAX];
    check_record(out, record_message(out, 12345, &m));
    if (m.type == PROFLINK_MSG_CORRELATION) {
        proflink_stack_count ids[1];
        memcpy(ids[0].stack_trace_id, m.u.correlation.stack_trace_id, 16);
        ids[0].count = m.u.correlation.count;
        record_transaction(1, m.u.correlation.trace_id, m.u.correlation.transaction_id, ids, 1,
                           check_transaction_line, NULL);
    }
}

/* ---- table operations: what goes in comes out (taken or evicted), nothing leaks ------------- */
static void table_program(const uint8_t *d, size_t n)
{
    struct accum a;
    struct accum_limits lim = {4, 12, 5};
    if (accum_init(&a, &lim) != 0)
        return;
    uint64_t added = 0, accounted = 0, now = 0;
    proflink_stack_count out[8];
    for (size_t i = 0; i + 3 <= n; i += 3) {
        uint8_t op = d[i], k = d[i + 1] % 7, s = d[i + 2] % 9;
        uint8_t t[16] = {k}, x[8] = {(uint8_t)(k * 3)}, id[16] = {s};
        now += op & 7;
        switch (op >> 6) {
        case 0:
        case 1:
            added += (uint64_t)(op & 15);
            accounted += accum_add(&a, t, x, id, op & 15, now);
            break;
        case 2: {
            uint64_t ev;
            size_t got = accum_take(&a, t, x, out, (size_t)(op & 7), &ev);
            accounted += ev;
            for (size_t j = 0; j < got; j++)
                accounted += out[j].count;
            break;
        }
        default:
            accounted += accum_expire(&a, now > 20 ? now - 20 : 0);
        }
        if (a.n_keys > lim.max_keys || a.n_nodes > lim.max_ids)
            fail("table over its limits");
    }
    accounted += accum_expire(&a, UINT64_MAX);
    if (added != accounted || a.n_keys || a.n_nodes)
        fail("samples lost or invented by the table");
    accum_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        table_program(data + 1, size - 1);
    else
        one_datagram(data + 1, size - 1);
    return 0;
}

#ifdef FUZZ_STANDALONE
/* Seeded random inputs shaped like datagrams (valid headers, lengths around the limits), for
 * when libFuzzer is not available: usage fuzz_messages [-runs=N] [-seed=S] [FILE…] */
int main(int argc, char **argv)
{
    unsigned long runs = 2000000, seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "-runs=", 6))
            runs = strtoul(argv[i] + 6, NULL, 10);
        else if (!strncmp(argv[i], "-seed=", 6))
            seed = strtoul(argv[i] + 6, NULL, 10);
        else if (argv[i][0] != '-') {
            FILE *f = fopen(argv[i], "rb");
            static uint8_t buf[1 << 16];
            if (f) {
                size_t n = fread(buf, 1, sizeof buf, f);
                fclose(f);
                LLVMFuzzerTestOneInput(buf, n);
            }
        }
    }
    uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
    uint8_t buf[1200];
    for (unsigned long run = 0; run < runs; run++) {
        for (size_t j = 0; j < sizeof buf; j++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            buf[j] = (uint8_t)r;
        }
        size_t len = (size_t)(r % 100) + 1;
        if (!(buf[0] & 1)) {
            uint16_t type = (uint16_t)(r >> 40) % 3, minor = (uint16_t)(r >> 48) % 4;
            memcpy(buf + 1, &type, 2);
            memcpy(buf + 3, &minor, 2);
            if (r >> 60 & 1) {
                uint32_t hl = (uint32_t)(r >> 20) % 64;
                memcpy(buf + 9, &hl, 4);
            }
            if ((r >> 56) % 16 == 0)
                len = (size_t)(r >> 32) % sizeof buf;
        } else
            len = (size_t)(r % sizeof buf);
        LLVMFuzzerTestOneInput(buf, len);
    }
    printf("fuzz_messages: %lu random inputs, no failure\n", runs);
    return 0;
}
#endif
