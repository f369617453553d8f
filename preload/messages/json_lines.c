/* json_lines.c — see records.h. */
#include "json_lines.h"

#include <string.h>

#include "leaves/base64url.h"
#include "leaves/clock.h"
#include "leaves/json.h"

/* Set once by the constructor before the reader thread exists, read only afterwards. */
static const char *record_service = "";

void records_set_service(const char *service)
{
    record_service = service ? service : "";
}

static void start(struct jbuf *b, const char *type, int pid)
{
    jb_lit(b, "{\"type\":\"");
    jb_lit(b, type);
    jb_lit(b, "\",\"pid\":");
    jb_u64(b, (uint64_t)(pid < 0 ? 0 : pid));
    jb_lit(b, ",\"ts_ns\":");
    /* Unix time: a consumer reading several processes' records from one FIFO orders and joins
     * them with its own clock. */
    jb_u64(b, clock_realtime_ns());
    jb_lit(b, ",\"service\":");
    /* at most 128 bytes (config), so at most ~770 escaped: always fits beside the rest */
    jb_string(b, record_service, strlen(record_service), 0);
}

static void stack_id(struct jbuf *b, const uint8_t id[16])
{
    char s[STACK_ID_B64_LEN + 2];
    s[0] = '"';
    base64url_encode(id, 16, s + 1);
    s[STACK_ID_B64_LEN + 1] = '"';
    jb_raw(b, s, sizeof s);
}

size_t record_message(char *out, int pid, const proflink_message *msg)
{
    struct jbuf b;
    jb_init(&b, out, RECORD_MAX);
    if (msg->type == PROFLINK_MSG_CORRELATION) {
        start(&b, "correlation", pid);
        jb_lit(&b, ",\"trace_id\":");
        jb_hex(&b, msg->u.correlation.trace_id, 16);
        jb_lit(&b, ",\"transaction_id\":");
        jb_hex(&b, msg->u.correlation.transaction_id, 8);
        jb_lit(&b, ",\"stack_trace_id\":");
        stack_id(&b, msg->u.correlation.stack_trace_id);
        jb_lit(&b, ",\"count\":");
        jb_u64(&b, msg->u.correlation.count);
    } else {
        start(&b, "registration", pid);
        jb_lit(&b, ",\"samples_delay_ms\":");
        jb_u64(&b, msg->u.registration.samples_delay_ms);
        jb_lit(&b, ",\"host_id\":");
        /* what follows the string: "}\n" */
        jb_string(&b, msg->u.registration.host_id ? msg->u.registration.host_id : "",
                  msg->u.registration.host_id_len, 2);
    }
    jb_lit(&b, "}\n");
    return jb_len(&b);
}

static void transaction_head(struct jbuf *b, int pid, const uint8_t trace_id[16],
                             const uint8_t transaction_id[8])
{
    start(b, "transaction", pid);
    jb_lit(b, ",\"trace_id\":");
    jb_hex(b, trace_id, 16);
    jb_lit(b, ",\"transaction_id\":");
    jb_hex(b, transaction_id, 8);
    jb_lit(b, ",\"stack_trace_ids\":{");
}

void record_transaction(int pid, const uint8_t trace_id[16], const uint8_t transaction_id[8],
                        const proflink_stack_count *ids, size_t n_ids,
                        void (*emit)(const char *line, size_t len, void *ctx), void *ctx)
{
    char line[RECORD_MAX];
    struct jbuf b;
    size_t i = 0;
    do {
        jb_init(&b, line, RECORD_MAX - 3); /* keeps room for the closing "}}\n" */
        transaction_head(&b, pid, trace_id, transaction_id);
        size_t in_this = 0;
        for (; i < n_ids; i++) {
            size_t mark = jb_len(&b);
            if (in_this)
                jb_lit(&b, ",");
            stack_id(&b, ids[i].stack_trace_id);
            jb_lit(&b, ":");
            jb_u64(&b, ids[i].count);
            if (jb_full(&b)) {
                jb_rewind(&b, mark);
                break; /* never with in_this == 0: a head and one id take ~170 bytes */
            }
            in_this++;
        }
        b.cap = RECORD_MAX;
        jb_lit(&b, "}}\n");
        emit(line, jb_len(&b), ctx);
    } while (i < n_ids);
}
