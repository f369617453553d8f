/* unit_reader — unit tests of the reader's pure parts, compiled in (ASan/UBSan build):
 * base64url, the datagram parser, the JSON records, the id table (accum) and the deferral
 * ring (txqueue, with a multi-producer stress that checks the wake-up protocol), and the ring
 * between the intake and reader threads (pending, with a producer/consumer stress that sleeps
 * on both sides: every message arrives once, in order, registrations with their host ids).
 * usage: unit_reader            run every check, print "ok N checks", exit 0 (1 on failure)
 *        unit_reader records    print sample records (JSON lines) for an external validator */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../preload/deferral/accum.c"
#include "../../preload/leaves/base64url.c"
#include "../../preload/leaves/clock.c"
#include "../../preload/leaves/fd_safe.c"
#include "../../preload/leaves/json.c"
#include "../../preload/messages/messages.c"
#include "../../preload/messages/pending.c"
#include "../../preload/leaves/random.c"
#include "../../preload/messages/json_lines.c"
#include "../../preload/deferral/txqueue.c"
#include "../../preload/leaves/utf8.c"
#include "../../preload/leaves/wakeup.c"

#include "check.h"

static void unhex(const char *s, uint8_t *out)
{
    for (size_t i = 0; s[2 * i]; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

static void test_base64url(void)
{
    static const struct {
        const char *in, *out;
    } rfc[] = {{"", ""},         {"f", "Zg"},         {"fo", "Zm8"},       {"foo", "Zm9v"},
               {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}};
    char out[64];
    for (size_t i = 0; i < sizeof rfc / sizeof rfc[0]; i++) {
        size_t n = base64url_encode((const uint8_t *)rfc[i].in, strlen(rfc[i].in), out);
        CHECK(n == strlen(rfc[i].out) && memcmp(out, rfc[i].out, n) == 0);
        CHECK(n == BASE64URL_LEN(strlen(rfc[i].in)));
    }
    uint8_t id[16];
    unhex("60b420bb3851d9d47acb933dbe70399b", id);
    CHECK(base64url_encode(id, 16, out) == 22 && memcmp(out, "YLQguzhR2dR6y5M9vnA5mw", 22) == 0);
    unhex("4c9326bb9805fa8f85882c12eae724ce", id);
    CHECK(base64url_encode(id, 16, out) == 22 && memcmp(out, "TJMmu5gF-o-FiCwS6uckzg", 22) == 0);
    const uint8_t url[3] = {0xfb, 0xff, 0xbf}; /* the two URL-safe characters */
    CHECK(base64url_encode(url, 3, out) == 4 && memcmp(out, "-_-_", 4) == 0);
}

static size_t put(uint8_t *b, size_t off, const void *p, size_t n)
{
    memcpy(b + off, p, n);
    return off + n;
}

static size_t correlation(uint8_t *b, uint16_t type, uint16_t minor)
{
    uint8_t ids[40];
    for (int i = 0; i < 40; i++)
        ids[i] = (uint8_t)(i + 1);
    uint16_t count = 513;
    size_t o = put(b, 0, &type, 2);
    o = put(b, o, &minor, 2);
    o = put(b, o, ids, 40);
    return put(b, o, &count, 2);
}

static size_t registration(uint8_t *b, uint16_t minor, uint32_t delay, const char *host,
                           uint32_t host_len)
{
    uint16_t type = 2;
    size_t o = put(b, 0, &type, 2);
    o = put(b, o, &minor, 2);
    o = put(b, o, &delay, 4);
    if (minor >= 2) {
        o = put(b, o, &host_len, 4);
        o = put(b, o, host, strlen(host));
    }
    return o;
}

static void test_parse(void)
{
    uint8_t b[256] = {0};
    proflink_message m;
    for (size_t len = 0; len < 4; len++)
        CHECK(message_parse(b, len, &m) == MSG_TRUNCATED);

    size_t n = correlation(b, 1, 1);
    CHECK(n == 46);
    CHECK(message_parse(b, 45, &m) == MSG_TRUNCATED);
    CHECK(message_parse(b, 4, &m) == MSG_TRUNCATED);
    CHECK(message_parse(b, 46, &m) == MSG_VALID);
    CHECK(m.type == 1 && m.minor == 1 && m.u.correlation.count == 513);
    CHECK(m.u.correlation.trace_id[0] == 1 && m.u.correlation.trace_id[15] == 16);
    CHECK(m.u.correlation.transaction_id[0] == 17 && m.u.correlation.transaction_id[7] == 24);
    CHECK(m.u.correlation.stack_trace_id[0] == 25 && m.u.correlation.stack_trace_id[15] == 40);
    CHECK(message_parse(b, 200, &m) == MSG_VALID); /* a newer minor's tail: ignored */
    correlation(b, 1, 7);
    CHECK(message_parse(b, 60, &m) == MSG_VALID && m.minor == 7);
    correlation(b, 1, 0);
    CHECK(message_parse(b, 46, &m) == MSG_UNKNOWN);
    correlation(b, 3, 1);
    CHECK(message_parse(b, 46, &m) == MSG_UNKNOWN);
    correlation(b, 0, 1);
    CHECK(message_parse(b, 46, &m) == MSG_UNKNOWN);
    correlation(b, 0xFFFF, 0xFFFF);
    CHECK(message_parse(b, 4, &m) == MSG_UNKNOWN);

    n = registration(b, 1, 250, "", 0);
    CHECK(n == 8);
    CHECK(message_parse(b, 7, &m) == MSG_TRUNCATED);
    CHECK(message_parse(b, 8, &m) == MSG_VALID);
    CHECK(m.type == 2 && m.u.registration.samples_delay_ms == 250 &&
          m.u.registration.host_id == NULL && m.u.registration.host_id_len == 0);
    CHECK(message_parse(b, 30, &m) == MSG_VALID && m.u.registration.host_id == NULL);
    registration(b, 0, 250, "", 0);
    CHECK(message_parse(b, 8, &m) == MSG_UNKNOWN);

    n = registration(b, 2, 60, "host-1", 6);
    CHECK(n == 18);
    for (size_t len = 8; len < 18; len++)
        CHECK(message_parse(b, len, &m) == MSG_TRUNCATED);
    CHECK(message_parse(b, 18, &m) == MSG_VALID);
    CHECK(m.u.registration.samples_delay_ms == 60 && m.u.registration.host_id_len == 6 &&
          memcmp(m.u.registration.host_id, "host-1", 6) == 0 &&
          m.u.registration.host_id == (const char *)b + 12);
    CHECK(message_parse(b, 40, &m) == MSG_VALID && m.u.registration.host_id_len == 6);
    n = registration(b, 3, 60, "", 0);
    CHECK(n == 12 && message_parse(b, 12, &m) == MSG_VALID && m.u.registration.host_id_len == 0 &&
          m.u.registration.host_id != NULL);
    registration(b, 2, 60, "abc", 0xFFFFFFFFu);
    CHECK(message_parse(b, 15, &m) == MSG_TRUNCATED);
    registration(b, 2, 60, "abc", 0xFFFFFFF0u);
    CHECK(message_parse(b, 256, &m) == MSG_TRUNCATED);
}

/* Removes the record's "ts_ns":N, field (checked to be a plausible Unix time: after 2020 and
 * not later than now) so that the rest compares exactly. Returns the new length, 0 if absent. */
static size_t strip_ts(char *out, size_t n)
{
    static const char key[] = "\"ts_ns\":";
    char *k = memmem(out, n, key, sizeof key - 1);
    if (!k)
        return 0;
    char *end;
    unsigned long long ts = strtoull(k + sizeof key - 1, &end, 10);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (ts < 1577836800ull * 1000000000ull || ts > (unsigned long long)now.tv_sec * 1000000000ull + 1000000000ull || *end != ',')
        return 0;
    end++;
    memmove(k, end, (size_t)(out + n - end));
    return n - (size_t)(end - k);
}

static void test_records(void)
{
    char out[RECORD_MAX];
    uint8_t b[64];
    proflink_message m;
    records_set_service("svc \"q\"");
    correlation(b, 1, 1);
    message_parse(b, 46, &m);
    unhex("60b420bb3851d9d47acb933dbe70399b", m.u.correlation.stack_trace_id);
    size_t n = strip_ts(out, record_message(out, 42, &m));
    static const char want[] =
        "{\"type\":\"correlation\",\"pid\":42,\"service\":\"svc \\\"q\\\"\",\"trace_id\":\"0102030405060708090a0b0c0d0e0f10\","
        "\"transaction_id\":\"1112131415161718\",\"stack_trace_id\":\"YLQguzhR2dR6y5M9vnA5mw\","
        "\"count\":513}\n";
    CHECK(n == strlen(want) && memcmp(out, want, n) == 0);

    memset(&m, 0, sizeof m);
    m.type = 2;
    m.minor = 1;
    m.u.registration.samples_delay_ms = 1000;
    records_set_service("s");
    n = strip_ts(out, record_message(out, 7, &m));
    static const char want1[] =
        "{\"type\":\"registration\",\"pid\":7,\"service\":\"s\",\"samples_delay_ms\":1000,\"host_id\":\"\"}\n";
    CHECK(n == strlen(want1) && memcmp(out, want1, n) == 0);

    static const char tricky[] = "a\"b\\c\n\x01\x7f\xc3\xa9\xff\xe2\x82";
    m.minor = 2;
    m.u.registration.host_id = tricky;
    m.u.registration.host_id_len = sizeof tricky - 1;
    n = strip_ts(out, record_message(out, 7, &m));
    static const char want2[] = "{\"type\":\"registration\",\"pid\":7,\"service\":\"s\",\"samples_delay_ms\":1000,"
                                "\"host_id\":\"a\\\"b\\\\c\\n\\u0001\\u007f\xc3\xa9\xef\xbf\xbd"
                                "\xef\xbf\xbd\xef\xbf\xbd\"}\n";
    CHECK(n == strlen(want2) && memcmp(out, want2, n) == 0);

    /* a host id far larger than a record: cut, still one valid record */
    static char huge[8000];
    memset(huge, '"', sizeof huge);
    m.u.registration.host_id = huge;
    m.u.registration.host_id_len = sizeof huge;
    n = record_message(out, 7, &m);
    CHECK(n <= RECORD_MAX && n > RECORD_MAX - 8 && memcmp(out + n - 3, "\"}\n", 3) == 0);
    CHECK(out[n - 4] != '\\' || out[n - 5] == '\\'); /* no dangling escape before the quote */
}

struct collect {
    int records;
    size_t ids;
    size_t max_len;
    int ok;
};

static void collect(const char *line, size_t len, void *ctx)
{
    struct collect *c = ctx;
    c->records++;
    if (len > c->max_len)
        c->max_len = len;
    static const char head[] = "{\"type\":\"transaction\",\"pid\":9,\"service\":\"svc-unit\",\"trace_id\":\"";
    char copy[RECORD_MAX];
    memcpy(copy, line, len <= RECORD_MAX ? len : RECORD_MAX);
    size_t n = len <= RECORD_MAX ? strip_ts(copy, len) : 0;
    if (n < sizeof head || memcmp(copy, head, sizeof head - 1) || memcmp(line + len - 3, "}}\n", 3))
        c->ok = 0;
    for (size_t i = 0; i < len; i++)
        if (line[i] == ':' && line[i - 1] == '"' && i > 24 && line[i - 24] == '"')
            c->ids++; /* "<22 chars>": */
}

static void test_transaction_records(void)
{
    uint8_t t[16] = {1}, x[8] = {2};
    static proflink_stack_count ids[1000];
    for (int i = 0; i < 1000; i++) {
        memset(ids[i].stack_trace_id, 0, 16);
        memcpy(ids[i].stack_trace_id, &i, sizeof i);
        ids[i].count = i % 3 ? 1 : 4000000000u;
    }
    records_set_service("svc-unit"); /* not "s": "service":"s","trace_id": looks like an id */
    struct collect c = {0, 0, 0, 1};
    record_transaction(9, t, x, ids, 0, collect, &c);
    CHECK(c.records == 1 && c.ok && c.ids == 0);
    c = (struct collect){0, 0, 0, 1};
    record_transaction(9, t, x, ids, 3, collect, &c);
    CHECK(c.records == 1 && c.ok && c.ids == 3);
    c = (struct collect){0, 0, 0, 1};
    record_transaction(9, t, x, ids, 1000, collect, &c);
    CHECK(c.records > 1 && c.ok && c.ids == 1000 && c.max_len <= RECORD_MAX);
}

/* ---- accum --------------------------------------------------------------------------------- */
static uint8_t A[16], B[16], T1[16], X1[8], T2[16], X2[8];

static void test_accum_spec_example(void)
{
    struct accum a;
    struct accum_limits lim = {ACCUM_MAX_KEYS, ACCUM_MAX_IDS, ACCUM_MAX_IDS_PER_KEY};
    CHECK(accum_init(&a, &lim) == 0);
    unhex("60b420bb3851d9d47acb933dbe70399b", A);
    unhex("4c9326bb9805fa8f85882c12eae724ce", B);
    memset(T1, 0x11, 16), memset(X1, 0x22, 8), memset(T2, 0x33, 16), memset(X2, 0x44, 8);
    CHECK(accum_add(&a, T1, X1, A, 2, 1) == 0);
    CHECK(accum_add(&a, T2, X2, A, 5, 1) == 0); /* another transaction: kept apart */
    CHECK(accum_add(&a, T1, X1, B, 1, 2) == 0);
    CHECK(accum_add(&a, T1, X1, A, 1, 3) == 0);
    CHECK(accum_count(&a, T1, X1) == 2);
    proflink_stack_count out[8];
    uint64_t ev;
    size_t n = accum_take(&a, T1, X1, out, 8, &ev);
    CHECK(n == 2 && ev == 0);
    uint32_t ca = 0, cb = 0;
    for (size_t i = 0; i < n; i++) {
        if (!memcmp(out[i].stack_trace_id, A, 16))
            ca = out[i].count;
        if (!memcmp(out[i].stack_trace_id, B, 16))
            cb = out[i].count;
    }
    CHECK(ca == 3 && cb == 1);
    CHECK(accum_count(&a, T1, X1) == 0 && accum_take(&a, T1, X1, out, 8, &ev) == 0);
    CHECK(accum_count(&a, T2, X2) == 1);
    /* saturation */
    CHECK(accum_add(&a, T2, X2, A, UINT32_MAX, 4) == 0);
    n = accum_take(&a, T2, X2, out, 8, &ev);
    CHECK(n == 1 && out[0].count == UINT32_MAX);
    /* take with a small buffer: the rest is reported */
    accum_add(&a, T1, X1, A, 2, 5);
    accum_add(&a, T1, X1, B, 3, 5);
    n = accum_take(&a, T1, X1, out, 1, &ev);
    CHECK(n == 1 && ev == (out[0].count == 2 ? 3u : 2u));
    accum_free(&a);
}

static void key(int k, uint8_t t[16], uint8_t x[8])
{
    memset(t, 0, 16);
    memset(x, 0, 8);
    memcpy(t, &k, sizeof k);
    memcpy(x, &k, sizeof k);
}

static void test_accum_limits(void)
{
    struct accum a;
    struct accum_limits lim = {4, 10, 3};
    CHECK(accum_init(&a, &lim) == 0);
    uint8_t t[16], x[8], s[16] = {0};
    proflink_stack_count out[8];
    uint64_t ev;
    /* per-key cap: the 4th distinct id is dropped, known ones keep counting */
    key(1, t, x);
    for (int i = 0; i < 4; i++) {
        s[0] = (uint8_t)i;
        CHECK(accum_add(&a, t, x, s, 2, 10) == (i < 3 ? 0u : 2u));
    }
    s[0] = 0;
    CHECK(accum_add(&a, t, x, s, 1, 11) == 0);
    CHECK(accum_count(&a, t, x) == 3);
    /* key cap: keys 2..4 fill it, key 5 evicts the least recently updated (key 1) */
    for (int k = 2; k <= 4; k++) {
        key(k, t, x);
        CHECK(accum_add(&a, t, x, s, 1, 20 + (uint64_t)k) == 0);
    }
    key(1, t, x);
    CHECK(accum_count(&a, t, x) == 3);
    key(5, t, x);
    CHECK(accum_add(&a, t, x, s, 1, 30) == 7); /* key 1 held 3 + 2 + 2 */
    key(1, t, x);
    CHECK(accum_count(&a, t, x) == 0);
    /* touching key 2 makes key 3 the oldest */
    key(2, t, x);
    accum_add(&a, t, x, s, 1, 31);
    key(6, t, x);
    CHECK(accum_add(&a, t, x, s, 1, 32) == 1);
    key(3, t, x);
    CHECK(accum_count(&a, t, x) == 0);
    key(2, t, x);
    CHECK(accum_count(&a, t, x) == 1);
    /* now keys 4 (t 24), 5 (30), 2 (31), 6 (32), one id each: 4 of 10 nodes */
    key(2, t, x);
    for (int i = 1; i <= 2; i++) {
        s[0] = (uint8_t)i;
        CHECK(accum_add(&a, t, x, s, 1, 33) == 0);
    }
    key(5, t, x);
    for (int i = 1; i <= 2; i++) {
        s[0] = (uint8_t)i;
        CHECK(accum_add(&a, t, x, s, 1, 34) == 0);
    }
    key(6, t, x);
    for (int i = 1; i <= 2; i++) {
        s[0] = (uint8_t)i;
        CHECK(accum_add(&a, t, x, s, 1, 35) == 0);
    }
    CHECK(a.n_nodes == 10);
    s[0] = 9; /* key 6 is at its per-key cap: dropped */
    CHECK(accum_add(&a, t, x, s, 5, 36) == 5);
    key(7, t, x); /* a fifth key: evicts key 4 (least recently updated, 1 sample) */
    s[0] = 0;
    CHECK(accum_add(&a, t, x, s, 1, 37) == 1);
    CHECK(accum_take(&a, t, x, out, 8, &ev) == 1 && ev == 0); /* 3 keys, 9 nodes left */
    key(8, t, x);
    CHECK(accum_add(&a, t, x, s, 1, 38) == 0); /* the 10th node */
    s[0] = 1; /* no node left: key 2 (least recent, samples 2 + 1 + 1) goes, not key 8 */
    CHECK(accum_add(&a, t, x, s, 1, 39) == 4);
    CHECK(accum_count(&a, t, x) == 2);
    key(2, t, x);
    CHECK(accum_count(&a, t, x) == 0);
    CHECK(a.n_nodes == 8 && a.n_keys == 3);
    accum_free(&a);
}

static void test_accum_expire_and_model(void)
{
    struct accum a;
    struct accum_limits lim = {64, 256, 16};
    CHECK(accum_init(&a, &lim) == 0);
    uint8_t t[16], x[8], s[16] = {0};
    for (int k = 0; k < 10; k++) {
        key(k, t, x);
        accum_add(&a, t, x, s, 1, (uint64_t)k * 100);
    }
    CHECK(accum_expire(&a, 450) == 5); /* keys 0..4 */
    key(4, t, x);
    CHECK(accum_count(&a, t, x) == 0);
    key(5, t, x);
    CHECK(accum_count(&a, t, x) == 1);
    CHECK(accum_expire(&a, 10000) == 5);
    CHECK(a.n_keys == 0 && a.n_nodes == 0);

    /* conservation under random churn: added == taken + evicted, structure stays sound */
    uint64_t rng = 12345, added = 0, accounted = 0;
    proflink_stack_count out[16];
    for (int step = 0; step < 200000; step++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        int k = (int)(rng % 97);
        key(k, t, x);
        s[0] = (uint8_t)((rng >> 8) % 23);
        unsigned op = (unsigned)(rng >> 20) % 10;
        if (op < 7) {
            uint32_t c = (uint32_t)((rng >> 32) % 5);
            added += c;
            accounted += accum_add(&a, t, x, s, c, (uint64_t)step);
        } else if (op < 9) {
            uint64_t ev;
            size_t n = accum_take(&a, t, x, out, 16, &ev);
            accounted += ev;
            for (size_t i = 0; i < n; i++)
                accounted += out[i].count;
        } else {
            accounted += accum_expire(&a, (uint64_t)(step > 500 ? step - 500 : 0));
        }
    }
    accounted += accum_expire(&a, UINT64_MAX);
    CHECK(added == accounted);
    CHECK(a.n_keys == 0 && a.n_nodes == 0 && a.lru_head == 0);
    for (uint32_t i = 0; i <= a.mask; i++)
        if (a.slots[i]) {
            CHECK(0 && "slot left");
            break;
        }
    accum_free(&a);
}

/* ---- txqueue ------------------------------------------------------------------------------- */
static void test_txqueue_single(void)
{
    struct txqueue q;
    /* every capacity from 1 up: full at exactly cap, FIFO, nothing lost or overwritten */
    for (uint32_t cap = 1; cap <= 6; cap++) {
        CHECK(txq_init(&q, cap) == 0);
        struct txq_item it = {0}, got;
        uint64_t head_end;
        int wake;
        CHECK(txq_take(&q, UINT64_MAX, &got, &head_end) == TXQ_EMPTY);
        for (uint64_t lap = 0; lap < 50; lap++) {
            for (uint32_t i = 0; i < cap; i++) {
                it.end_ns = lap * 10 + i + 1;
                CHECK(txq_push(&q, &it, &wake) == 1);
                CHECK(wake == (i == 0));
            }
            CHECK(txq_push(&q, &it, &wake) == 0); /* full */
            CHECK(txq_take(&q, lap * 10, &got, &head_end) == TXQ_NOT_DUE);
            CHECK(head_end == lap * 10 + 1);
            for (uint32_t i = 0; i < cap; i++) {
                CHECK(txq_take(&q, UINT64_MAX, &got, &head_end) == TXQ_TAKEN);
                CHECK(got.end_ns == lap * 10 + i + 1);
            }
            CHECK(txq_take(&q, UINT64_MAX, &got, &head_end) == TXQ_EMPTY);
        }
        txq_free(&q);
    }
}

#define PRODUCERS 4
#define PER_PRODUCER 200000
static struct txqueue sq;
static sem_t wakeups;
static _Atomic unsigned long full_count;

static void *producer(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;
    struct txq_item it = {0};
    for (uint64_t i = 0; i < PER_PRODUCER; i++) {
        it.end_ns = id << 32 | i;
        int wake;
        while (!txq_push(&sq, &it, &wake))
            atomic_fetch_add(&full_count, 1); /* full: retry (the test wants every item) */
        if (wake)
            sem_post(&wakeups);
    }
    return NULL;
}

static void test_txqueue_stress(void)
{
    CHECK(txq_init(&sq, 64) == 0);
    sem_init(&wakeups, 0, 0);
    pthread_t th[PRODUCERS];
    for (uintptr_t p = 0; p < PRODUCERS; p++)
        pthread_create(&th[p], NULL, producer, (void *)p);
    uint64_t next[PRODUCERS] = {0}, got_n = 0;
    int order_ok = 1, lost_wakeup = 0;
    while (got_n < (uint64_t)PRODUCERS * PER_PRODUCER) {
        struct txq_item got;
        uint64_t head_end;
        const struct txq_item *h = &got;
        if (txq_take(&sq, UINT64_MAX, &got, &head_end) != TXQ_TAKEN) {
            /* "sleep" like the reader: a producer must post if we may miss its item */
            struct timespec deadline;
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 5;
            if (sem_timedwait(&wakeups, &deadline) != 0) {
                lost_wakeup = 1;
                break;
            }
            continue;
        }
        uint64_t p = h->end_ns >> 32, i = h->end_ns & 0xFFFFFFFFu;
        if (p >= PRODUCERS || i != next[p])
            order_ok = 0; /* each producer's items arrive in its order, once */
        else
            next[p]++;
        got_n++;
    }
    for (int p = 0; p < PRODUCERS; p++)
        pthread_join(th[p], NULL);
    CHECK(!lost_wakeup);
    CHECK(order_ok);
    CHECK(got_n == (uint64_t)PRODUCERS * PER_PRODUCER);
    txq_free(&sq);
    sem_destroy(&wakeups);
}

static void print_records(void)
{
    char out[RECORD_MAX];
    proflink_message m;
    uint8_t b[64];
    correlation(b, 1, 1);
    message_parse(b, 46, &m);
    fwrite(out, 1, record_message(out, 1, &m), stdout);
    static const char tricky[] = "\"\\\b\f\n\r\t\x01\x1f\x7f\xc3\xa9\xf0\x9f\x98\x80\xff\xc0\xaf"
                                 "\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82";
    memset(&m, 0, sizeof m);
    m.type = 2;
    m.minor = 2;
    m.u.registration.samples_delay_ms = 4294967295u;
    m.u.registration.host_id = tricky;
    m.u.registration.host_id_len = sizeof tricky - 1;
    fwrite(out, 1, record_message(out, 1, &m), stdout);
    static char huge[6000];
    for (size_t i = 0; i < sizeof huge; i++)
        huge[i] = "\x01\"\xc3\xa9x"[i % 5];
    m.u.registration.host_id = huge;
    m.u.registration.host_id_len = sizeof huge;
    fwrite(out, 1, record_message(out, 1, &m), stdout);
}

static void print_transaction(const char *line, size_t len, void *ctx)
{
    (void)ctx;
    fwrite(line, 1, len, stdout);
}

/* The intake's side: PENDING_STRESS messages in batches of varying size, every 7th a
 * registration whose host id spells its number; it sleeps when the ring is full. */
#define PENDING_STRESS 200000u
static void *pending_producer(void *arg)
{
    (void)arg;
    unsigned next = 0;
    while (next < PENDING_STRESS) {
        unsigned want = 1 + next % 37;
        if (want > PENDING_STRESS - next)
            want = PENDING_STRESS - next;
        unsigned room = pending_room(want);
        if (!room) {
            pending_wait_room();
            continue;
        }
        for (unsigned i = 0; i < room; i++) {
            unsigned k = next + i;
            proflink_message *m = pending_slot(i);
            memset(m, 0, sizeof *m);
            if (k % 7 == 0) {
                char host[32];
                int n = snprintf(host, sizeof host, "host-%u", k);
                m->type = PROFLINK_MSG_REGISTRATION;
                m->u.registration.samples_delay_ms = k;
                m->u.registration.host_id = pending_keep_host(host, (size_t)n);
                m->u.registration.host_id_len = (size_t)n;
            } else {
                m->type = PROFLINK_MSG_CORRELATION;
                m->u.correlation.count = (uint16_t)k;
            }
        }
        pending_publish(room);
        next += room;
    }
    return NULL;
}

static void test_pending_stress(void)
{
    pending_reset();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, pending_producer, NULL) == 0);
    unsigned expect = 0, bad = 0;
    while (expect < PENDING_STRESS) {
        unsigned n = pending_count();
        if (!n) {
            uint32_t seen = pending_reader_prepare();
            if (pending_count())
                pending_reader_cancel();
            else
                pending_reader_wait(seen, -1);
            continue;
        }
        unsigned take = 1 + expect % 29 < n ? 1 + expect % 29 : n;
        for (unsigned i = 0; i < take; i++, expect++) {
            const proflink_message *m = pending_at(i);
            if (expect % 7 == 0) {
                char host[32];
                int len = snprintf(host, sizeof host, "host-%u", expect);
                bad += m->type != PROFLINK_MSG_REGISTRATION ||
                       m->u.registration.samples_delay_ms != expect ||
                       m->u.registration.host_id_len != (size_t)len ||
                       memcmp(m->u.registration.host_id, host, (size_t)len) != 0;
            } else {
                bad += m->type != PROFLINK_MSG_CORRELATION || m->u.correlation.count != (uint16_t)expect;
            }
        }
        pending_consume(take);
    }
    pthread_join(t, NULL);
    CHECK(bad == 0);
    CHECK(pending_count() == 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "records")) {
        print_records();
        static proflink_stack_count ids[700];
        for (int i = 0; i < 700; i++) {
            memset(ids[i].stack_trace_id, 0xA5, 16);
            memcpy(ids[i].stack_trace_id, &i, sizeof i);
            ids[i].count = (uint32_t)i + 1;
        }
        uint8_t t[16] = {9}, x[8] = {8};
        record_transaction(1, t, x, ids, 700, print_transaction, NULL);
        record_transaction(1, t, x, ids, 0, print_transaction, NULL);
        return 0;
    }
    test_base64url();
    test_parse();
    test_records();
    test_transaction_records();
    test_accum_spec_example();
    test_accum_limits();
    test_accum_expire_and_model();
    test_txqueue_single();
    test_txqueue_stress();
    test_pending_stress();
    if (failures) {
        printf("FAILED %d of %d checks\n", failures, checks);
        return 1;
    }
    printf("ok %d checks\n", checks);
    return 0;
}
