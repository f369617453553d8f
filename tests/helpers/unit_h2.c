/* unit_h2.c — the HTTP/2 frame reader (preload/http/h2_frames.c) on the bytes of real HTTP/2
 * sessions: a libnghttp2 client and server talk in memory (requests with and without
 * traceparent, two traceparents, invalid ones, bodies, padding, priority, pings, window updates,
 * client and server resets, a smaller header table set by the server, GOAWAY), and each
 * direction is fed to a reader cut at random points, as a server reads and writes it. What the
 * readers report must be what the server's session saw: every request stream once with the
 * traceparent it carried (exactly one valid one, else none), every response end and every reset.
 * A second check builds HEADERS + CONTINUATION frames by hand around libnghttp2's header blocks.
 *   unit_h2 sessions SEED ROUNDS | continuation SEED ROUNDS
 * Prints one line of counts; exits 1 at the first difference, 77 without libnghttp2. */
#include "nghttp2_test.h"
#ifndef PROFLINK_NO_NGHTTP2
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../preload/http/h2_frames.c"
#include "../../preload/http/hpack.c"
#include "../../preload/leaves/ids.c"

#define STREAMS_MAX 256

/* What one stream was, per the sessions (want_*) and per the readers (got_*). */
struct stream {
    int used;
    int want_ctx; /* exactly one valid traceparent: want_trace/want_span */
    uint8_t want_trace[16], want_span[8], want_flags;
    int want_request, want_end, want_reset_req, want_reset_resp;
    int got_request, got_end, got_reset_req, got_reset_resp;
    struct trace_ctx got_ctx;
    int req_body_left, resp_body_left;
};

static struct stream streams[STREAMS_MAX * 2 + 2];
static long errors;

static void fail(const char *what, uint32_t stream)
{
    fprintf(stderr, "stream %u: %s\n", stream, what);
    errors++;
}

static struct stream *stream_of(uint32_t id)
{
    if (id >= sizeof streams / sizeof streams[0]) {
        fail("id out of the test's range", id);
        return &streams[0];
    }
    return &streams[id];
}

/* the readers' events */
static struct h2_frames *req_reader, *resp_reader;

static void on_request_side(void *arg, const struct h2_event *ev)
{
    (void)arg;
    struct stream *s = stream_of(ev->stream);
    if (ev->type == H2_EV_REQUEST) {
        if (s->got_request++)
            fail("request reported twice", ev->stream);
        s->got_ctx = ev->ctx;
    } else if (ev->type == H2_EV_RESET) {
        s->got_reset_req++;
    } else if (ev->type != H2_EV_GOAWAY) {
        fail("unexpected event on the request side", ev->stream);
    }
}

static void on_response_side(void *arg, const struct h2_event *ev)
{
    (void)arg;
    if (ev->type == H2_EV_TABLE_LIMIT) {
        h2_frames_table_limit(req_reader, ev->value);
        return;
    }
    struct stream *s = stream_of(ev->stream);
    if (ev->type == H2_EV_STREAM_END)
        s->got_end++;
    else if (ev->type == H2_EV_RESET)
        s->got_reset_resp++;
    else if (ev->type != H2_EV_GOAWAY)
        fail("unexpected event on the response side", ev->stream);
}

/* Feeds bytes to a reader in random pieces. */
static void feed_cut(struct h2_frames *r, const uint8_t *p, size_t n, h2_event_fn fn)
{
    while (n) {
        size_t k = rnd(4) == 0 ? 1 : 1 + rnd((uint32_t)n);
        if (k > n)
            k = n;
        if (h2_frames_feed(r, p, k, fn, NULL) != 0) {
            fail("the reader failed on a valid session", 0);
            return;
        }
        p += k;
        n -= k;
    }
}

/* Moves what one session has to send to the other, through the reader of that direction. */
static void pump(nghttp2_session *from, nghttp2_session *to, struct h2_frames *r, h2_event_fn fn)
{
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(from, &data);
        if (n < 0) {
            fprintf(stderr, "mem_send: %s\n", nghttp2_strerror((int)n));
            exit(2);
        }
        if (n == 0)
            return;
        feed_cut(r, data, (size_t)n, fn);
        ssize_t used = nghttp2_session_mem_recv(to, data, (size_t)n);
        if (used != n) {
            fprintf(stderr, "mem_recv: %s\n", nghttp2_strerror((int)used));
            exit(2);
        }
    }
}

/* the sessions' user data: which side a callback runs for */
static char client_tag, server_tag;
#define CLIENT ((void *)&client_tag)
#define SERVER ((void *)&server_tag)

/* server side: the traceparents of the request being received */
static int tp_count, tp_valid_seen;

static int on_begin_headers(nghttp2_session *s, const nghttp2_frame *frame, void *u)
{
    (void)s, (void)u;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        tp_count = tp_valid_seen = 0;
    return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags, void *u)
{
    (void)s, (void)flags, (void)u;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    if (namelen == 11 && !memcmp(name, "traceparent", 11)) {
        struct stream *st = stream_of((uint32_t)frame->hd.stream_id);
        tp_count++;
        /* the test's invalid values have another version or uppercase hex digits */
        int upper = 0;
        for (size_t k = 0; k < valuelen; k++)
            upper |= value[k] >= 'A' && value[k] <= 'F';
        if (valuelen == 55 && value[0] == '0' && value[1] == '0' && !upper) {
            tp_valid_seen = 1;
            hex_decode((const char *)value + 3, st->want_trace, 16);
            hex_decode((const char *)value + 36, st->want_span, 8);
            st->want_flags = 1;
        }
    }
    return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *frame, void *u)
{
    (void)s, (void)u;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
        struct stream *st = stream_of((uint32_t)frame->hd.stream_id);
        st->want_request = 1;
        st->want_ctx = tp_count == 1 && tp_valid_seen;
    }
    return 0;
}

static ssize_t select_padding(nghttp2_session *s, const nghttp2_frame *frame, size_t max_payloadlen,
                              void *u)
{
    (void)s, (void)u;
    size_t want = frame->hd.length + rnd(40);
    return (ssize_t)(want < max_payloadlen ? want : max_payloadlen);
}

static ssize_t read_body(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                         uint32_t *data_flags, nghttp2_data_source *source, void *u)
{
    (void)s, (void)source;
    struct stream *st = stream_of((uint32_t)stream_id);
    int *left = u == CLIENT ? &st->req_body_left : &st->resp_body_left;
    size_t n = (size_t)*left < length ? (size_t)*left : length;
    memset(buf, 'b', n);
    *left -= (int)n;
    if (*left == 0)
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static char values[STREAMS_MAX][3][64];

/* A header, never indexed one time in five. */
static nghttp2_nv NV(const char *name, const char *value)
{
    return (nghttp2_nv){(uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
                        rnd(5) == 0 ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE};
}

static int run_sessions(uint64_t seed, long rounds)
{
    static struct h2_frames rq, rs;
    static uint8_t delayed[256];
    size_t delayed_len = 0;
    long requests = 0, ends = 0, resets = 0;
    for (long round = 0; round < rounds; round++) {
        rng = (seed + (uint64_t)round * 7919) | 1;
        memset(streams, 0, sizeof streams);
        h2_frames_init(&rq, H2_REQUESTS);
        h2_frames_init(&rs, H2_RESPONSES);
        req_reader = &rq;
        resp_reader = &rs;
        nghttp2_session_callbacks *cb;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
        nghttp2_session_callbacks_set_select_padding_callback(cb, select_padding);
        nghttp2_session *client, *server;
        nghttp2_session_client_new(&client, cb, CLIENT);
        nghttp2_session_server_new(&server, cb, SERVER);
        nghttp2_session_callbacks_del(cb);
        nghttp2_settings_entry iv[2] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000},
                                        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 4096}};
        nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, iv, 1);
        nghttp2_submit_settings(server, NGHTTP2_FLAG_NONE, iv, 1);
        int n = 1 + (int)rnd(40);
        for (int i = 0; i < n; i++) {
            if (rnd(10) == 0) { /* the server allows the client's encoder another table size */
                nghttp2_settings_entry t = {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, rnd(4097)};
                nghttp2_submit_settings(server, NGHTTP2_FLAG_NONE, &t, 1);
                /* written by the server and seen by its reader now, read by the client only
                 * after its next request is on the way (blocks in flight keep the old size) */
                const uint8_t *data;
                ssize_t len = nghttp2_session_mem_send(server, &data);
                if (len > 0) {
                    feed_cut(&rs, data, (size_t)len, on_response_side);
                    memcpy(delayed, data, (size_t)len);
                    delayed_len = (size_t)len;
                }
            }
            nghttp2_nv nv[12];
            int k = 0;
            nv[k++] = NV(":method", rnd(3) ? "GET" : "POST");
            nv[k++] = NV(":scheme", "http");
            nv[k++] = NV(":authority", "localhost");
            nv[k++] = NV(":path", rnd(2) ? "/" : "/api/items/42?x=1");
            int tps = rnd(6) == 0 ? 2 : rnd(4) ? 1 : 0;
            for (int t = 0; t < tps; t++) {
                char *v = values[i][t];
                int kind = (int)rnd(8);
                if (kind == 0) /* invalid: uppercase hex */
                    snprintf(v, 64, "00-%016llX%016llX-%016llx-01", (unsigned long long)rng,
                             (unsigned long long)(rnd(1000) + 1), (unsigned long long)rng | 1);
                else if (kind == 1) /* invalid: another version */
                    snprintf(v, 64, "01-%016llx%016llx-%016llx-01", (unsigned long long)rng,
                             (unsigned long long)(rnd(1000) + 1), (unsigned long long)rng | 1);
                else {
                    unsigned long long a = rnd(1u << 30) + 1, b = rng, c = rng | 1;
                    snprintf(v, 64, "00-%016llx%016llx-%016llx-01", a, b, c);
                }
                nv[k++] = NV("traceparent", v);
            }
            nv[k++] = NV("user-agent", rnd(2) ? "curl/7.88" : "grpc-go/1.60");
            snprintf(values[i][2], 64, "%u-%u", rnd(1000000), rnd(1000000));
            if (rnd(3) == 0)
                nv[k++] = NV("x-request-id", values[i][2]);
            nghttp2_data_provider body = {.read_callback = read_body};
            int has_body = rnd(3) == 0;
            int32_t id = nghttp2_submit_request(client, NULL, nv, (size_t)k,
                                                has_body ? &body : NULL, NULL);
            if (id < 0 || (uint32_t)id >= sizeof streams / sizeof streams[0])
                break;
            struct stream *st = stream_of((uint32_t)id);
            st->used = 1;
            st->req_body_left = has_body ? (int)rnd(40000) + 1 : 0;
            if (rnd(6) == 0)
                nghttp2_submit_ping(client, NGHTTP2_FLAG_NONE, NULL);
            if (rnd(6) == 0)
                nghttp2_submit_window_update(client, NGHTTP2_FLAG_NONE, 0, 1000);
            pump(client, server, &rq, on_request_side);
            if (delayed_len) {
                if (nghttp2_session_mem_recv(client, delayed, delayed_len) != (ssize_t)delayed_len)
                    return fprintf(stderr, "mem_recv of the delayed settings failed\n"), 2;
                delayed_len = 0;
            }
            if (rnd(10) == 0) { /* the client gives up before the answer */
                nghttp2_submit_rst_stream(client, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
                st->want_reset_req = 1;
                pump(client, server, &rq, on_request_side);
                continue;
            }
            int how = (int)rnd(4);
            nghttp2_nv resp[2] = {NV(":status", "200"), NV("content-type", "text/plain")};
            if (how == 0) {
                nghttp2_submit_rst_stream(server, NGHTTP2_FLAG_NONE, id, NGHTTP2_REFUSED_STREAM);
                st->want_reset_resp = 1;
            } else {
                st->resp_body_left = how == 1 ? 0 : (int)rnd(50000) + 1;
                nghttp2_submit_response(server, id, resp, 2, how == 1 ? NULL : &body);
                st->want_end = 1;
            }
            pump(server, client, &rs, on_response_side);
            pump(client, server, &rq, on_request_side);
            pump(server, client, &rs, on_response_side);
        }
        nghttp2_submit_goaway(server, NGHTTP2_FLAG_NONE, 0, NGHTTP2_NO_ERROR, NULL, 0);
        pump(server, client, &rs, on_response_side);
        nghttp2_session_del(client);
        nghttp2_session_del(server);
        for (uint32_t id = 1; id < sizeof streams / sizeof streams[0]; id++) {
            struct stream *s = &streams[id];
            if (!s->used)
                continue;
            if (s->got_request != s->want_request)
                fail("request not reported once", id);
            if (s->got_ctx.present != s->want_ctx ||
                (s->want_ctx && (memcmp(s->got_ctx.trace_id, s->want_trace, 16) ||
                                 memcmp(s->got_ctx.span_id, s->want_span, 8) ||
                                 s->got_ctx.trace_flags != s->want_flags)))
                fail("not the traceparent the server saw", id);
            if (s->got_end != s->want_end)
                fail("response end not reported once", id);
            if (s->got_reset_req != s->want_reset_req || s->got_reset_resp != s->want_reset_resp)
                fail("reset not reported once", id);
            requests += s->got_request;
            ends += s->got_end;
            resets += s->got_reset_req + s->got_reset_resp;
            if (errors)
                return fprintf(stderr, "round %ld (seed %llu)\n", round, (unsigned long long)seed), 1;
        }
    }
    printf("%ld requests, %ld response ends, %ld resets, 0 differences\n", requests, ends, resets);
    return 0;
}

/* HEADERS + CONTINUATION frames made by hand around one header block. */
static size_t frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t stream, const uint8_t *p,
                    size_t n)
{
    out[0] = (uint8_t)(n >> 16), out[1] = (uint8_t)(n >> 8), out[2] = (uint8_t)n;
    out[3] = type, out[4] = flags;
    out[5] = (uint8_t)(stream >> 24), out[6] = (uint8_t)(stream >> 16);
    out[7] = (uint8_t)(stream >> 8), out[8] = (uint8_t)stream;
    memcpy(out + 9, p, n);
    return 9 + n;
}

static int run_continuation(uint64_t seed, long rounds)
{
    static struct h2_frames rq;
    static uint8_t wire[1 << 16], block[1 << 14];
    rng = seed | 1;
    long requests = 0;
    for (long round = 0; round < rounds; round++) {
        memset(streams, 0, sizeof streams);
        h2_frames_init(&rq, H2_REQUESTS);
        req_reader = &rq;
        nghttp2_hd_deflater *def;
        nghttp2_hd_deflate_new(&def, 4096);
        size_t w = 0;
        memcpy(wire, preface, H2_PREFACE_LEN);
        w = H2_PREFACE_LEN;
        uint32_t id = 1;
        for (int i = 0; i < 4; i++, id += 2) {
            char tp[64], filler[2000];
            unsigned long long a = rnd(1u << 30) + 1, b = rng, c = rng | 1;
            snprintf(tp, sizeof tp, "00-%016llx%016llx-%016llx-01", a, b, c);
            size_t fl = rnd(sizeof filler);
            for (size_t k = 0; k < fl; k++)
                filler[k] = (char)('a' + rnd(26));
            nghttp2_nv nv[4] = {NV(":method", "GET"), NV(":path", "/"),
                                {(uint8_t *)"x-filler", (uint8_t *)filler, 8, fl, NGHTTP2_NV_FLAG_NO_INDEX},
                                NV("traceparent", tp)};
            ssize_t n = nghttp2_hd_deflate_hd(def, block, sizeof block, nv, 4);
            if (n < 0)
                return 2;
            struct stream *st = stream_of(id);
            st->used = st->want_request = st->want_ctx = 1;
            hex_decode(tp + 3, st->want_trace, 16);
            hex_decode(tp + 36, st->want_span, 8);
            st->want_flags = 1;
            /* split the block into 1-4 fragments; the first goes in HEADERS (padded or not) */
            size_t at = 0, parts = 1 + rnd(4);
            for (size_t part = 0; part < parts; part++) {
                size_t len = part == parts - 1 ? (size_t)n - at : rnd((uint32_t)((size_t)n - at + 1));
                uint8_t flags = part == parts - 1 ? 0x4 : 0;
                if (part == 0) {
                    uint8_t tmp[1 << 14];
                    size_t t = 0;
                    int padded = rnd(2);
                    if (padded)
                        tmp[t++] = (uint8_t)rnd(20);
                    memcpy(tmp + t, block + at, len);
                    t += len;
                    if (padded) {
                        memset(tmp + t, 0, tmp[0]);
                        t += tmp[0];
                    }
                    w += frame(wire + w, T_HEADERS, (uint8_t)(flags | 0x1 | (padded ? 0x8 : 0)), id,
                               tmp, t);
                } else {
                    w += frame(wire + w, T_CONTINUATION, flags, id, block + at, len);
                }
                at += len;
            }
        }
        nghttp2_hd_deflate_del(def);
        feed_cut(&rq, wire, w, on_request_side);
        for (uint32_t s = 1; s < id; s += 2) {
            struct stream *st = &streams[s];
            if (st->got_request != 1 || !st->got_ctx.present ||
                memcmp(st->got_ctx.trace_id, st->want_trace, 16))
                fail("a block across CONTINUATION frames not read whole", s);
            requests += st->got_request;
        }
        /* a CONTINUATION out of place fails the reader */
        h2_frames_init(&rq, H2_REQUESTS);
        size_t bad = H2_PREFACE_LEN;
        memcpy(wire, preface, bad);
        bad += frame(wire + bad, T_CONTINUATION, 0x4, 1, block, 4);
        if (h2_frames_feed(&rq, wire, bad, on_request_side, NULL) != -1)
            fail("a CONTINUATION without HEADERS was accepted", 1);
        if (errors)
            return fprintf(stderr, "round %ld (seed %llu)\n", round, (unsigned long long)seed), 1;
    }
    printf("%ld requests, 0 differences\n", requests);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "sessions"))
        return run_sessions(strtoull(argv[2], NULL, 10), atol(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "continuation"))
        return run_continuation(strtoull(argv[2], NULL, 10), atol(argv[3]));
    fprintf(stderr, "usage: unit_h2 sessions|continuation SEED ROUNDS\n");
    return 2;
}
#endif
