/*
 * proflink.h — the tracer-facing API of proflink.
 *
 * proflink publishes, for out-of-process eBPF profilers, which distributed trace each thread is
 * running (the Elastic "apmint" thread record and the OpenTelemetry thread context), and hands
 * back what the profiler sends: stack-trace ids correlated with {trace id, transaction id}.
 *
 * Contract for every function below:
 *  - Safe to call when proflink is disabled or absent from the process (then a cheap no-op that
 *    reports "nothing"), from any thread, at any time after the library is loaded.
 *  - Never blocks. After a thread's first call, setting and clearing its context neither
 *    allocates nor takes a lock (a thread's first call may allocate its record once).
 *  - The context and attribute calls are async-signal-safe after the thread's first call, even
 *    in a handler that interrupted the same thread inside one of them: no sample ever sees a
 *    record that mixes two contexts. The interrupted call ends last, so its context is the one
 *    left published; while the handler's nested call runs, samples see the thread without
 *    context; an interrupted attribute edit keeps only its own attribute (and the fixed ones).
 *    (A handler that lands in the call's last few instructions, once its write is over, runs
 *    as if the call had returned: its own context stays.)
 *  - Never aborts, exits or raises: bad arguments are ignored or reported by the return value.
 *
 * Finding the functions: either link with -lproflink (pkg-config proflink), or look them up at
 * run time without a link-time dependency:
 *
 *     void (*set)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t) =
 *         (void (*)(const uint8_t *, const uint8_t *, const uint8_t *, uint8_t))
 *         dlsym(RTLD_DEFAULT, "proflink_set_trace");
 *     if (set) set(trace_id, span_id, transaction_id, 0x01);
 *
 * Identifiers are raw bytes in W3C order (trace id 16 bytes, span and transaction ids 8 bytes).
 * The transaction id is the span id of the local root span (the "transaction"); profilers link
 * samples to {trace id, transaction id}.
 */
#ifndef PROFLINK_H
#define PROFLINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PROFLINK_VERSION_STRING "0.1.0"

/* ---- Context of the calling thread --------------------------------------------------------- */

/* Make {trace_id, span_id, transaction_id, trace_flags} the active context of this thread.
 * trace_flags bit 0 is the W3C "sampled" flag. NULL trace_id or span_id: ignored. NULL
 * transaction_id: the span id is used (the span is its own local root). */
void proflink_set_trace(const uint8_t trace_id[16], const uint8_t span_id[8],
                        const uint8_t transaction_id[8], uint8_t trace_flags);

/* The same from a W3C traceparent string "00-<32 hex>-<16 hex>-<2 hex>". transaction_id_hex is
 * 16 hex characters or NULL (NULL: the span id is also the transaction id).
 * Returns 0 on success, -1 if either string is malformed (the context is then left unchanged). */
int proflink_set_traceparent(const char *traceparent, const char *transaction_id_hex);

/* No trace is active on this thread any more. */
void proflink_clear_trace(void);

/* Copies this thread's active context into the non-NULL arguments.
 * Returns 1 if a trace is active, 0 if none (outputs untouched), -1 if proflink is disabled. */
int proflink_get_trace(uint8_t trace_id[16], uint8_t span_id[8], uint8_t transaction_id[8],
                       uint8_t *trace_flags);

/* A new thread starts with the process context (TRACEPARENT) or none, not its creator's
 * (unless PROFLINK_INHERIT=1): runtimes create pool threads lazily, inside whatever request
 * first needs one (libuv's on the first fs/crypto call), and such a thread would otherwise carry
 * that request's trace for the rest of its life. */

/* ---- One-buffer context (FFI) and nested scopes -------------------------------------------- */

/* The whole context in one 40-byte buffer, so that a foreign-function interface marshals one
 * pointer instead of three. An all-zero trace_id means "no trace". An all-zero transaction_id
 * means "same as span_id" (the span is its own local root). */
typedef struct proflink_context {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t transaction_id[8];
    uint8_t trace_flags; /* W3C flags, bit 0 = sampled */
    uint8_t reserved[7]; /* 0 */
} proflink_context;

/* Make *ctx the calling thread's context; NULL (or an all-zero trace_id) clears it. Same cost
 * and guarantees as proflink_set_trace. */
void proflink_set_context(const proflink_context *ctx);

/* As proflink_set_context(next), and copies the context that was active before into *prev (if
 * prev != NULL; all-zero when none was; its transaction_id is always filled in). Returns 1 if a
 * trace was active before, 0 if none, -1 when disabled (prev zeroed). Restoring is
 * proflink_set_context(&prev) in every case, which makes nested scopes one call each way
 * (include/proflink.hpp wraps it as a C++ scope). */
int proflink_swap_context(const proflink_context *next, proflink_context *prev);

/* ---- Attributes of the calling thread's context (OpenTelemetry thread context) ------------- *
 *
 * Published in the thread's OTel record (OTEP 4947) as [key index][length][value], the key names
 * in the OTel process context's threadlocal.attribute_key_map, so that profiles can be filtered
 * by what the thread was doing (http.route, a tenant, a job name).
 *
 * Keys: any UTF-8 name of 1..128 bytes, registered on first use; registering publishes the
 * process context again (OTEP 4719 update protocol) before the key is used in any record. The
 * map is append-only (an index is never reused or reordered, a fork child keeps it) and holds
 * at most 256 keys, index 0 being proflink's local_root_span_id (not settable). Registering
 * takes a lock for microseconds (never waits for good) and is not async-signal-safe: register a
 * key from a signal handler only if the same key was used before outside one. Everything else
 * is lock-free and allocation-free after the thread's first call.
 *
 * Values: UTF-8, 0..255 bytes (value_len; no NUL needed). The whole record stays within the
 * OTEP's recommended 640 bytes (28 bytes of header, 2 per attribute plus its value, 18 for the
 * transaction id while a trace is active): a value that does not fit is refused whole (never
 * cut), the thread's attributes stay as they were, and attributes_refused counts it.
 *
 * What keeps or drops them (the rule):
 *  - proflink_set_trace with the transaction id already active (entering or leaving spans of
 *    one request) keeps the attributes; with another transaction id (a new request) drops
 *    them. So set the trace first, then the request's attributes.
 *  - proflink_clear_trace drops them.
 *  - The fixed attributes of PROFLINK_THREAD_ATTRIBUTES come back whenever the others are
 *    dropped; proflink_set_attribute can override or clear one for the current context.
 *  - Attributes set while no trace is active stay until the next set or clear of the trace.
 *  - A new thread gets its creator's attributes exactly when it gets its creator's trace
 *    (PROFLINK_INHERIT); otherwise it starts with the fixed attributes only.
 */
#define PROFLINK_ATTR_OK 0
#define PROFLINK_ATTR_DISABLED (-1) /* proflink or its OTel thread context is off */
#define PROFLINK_ATTR_INVALID (-2)  /* bad key (NULL, empty, > 128 bytes, not UTF-8,
                                       local_root_span_id) or value (> 255 bytes, not UTF-8) */
#define PROFLINK_ATTR_NO_ROOM (-3)  /* the record would pass 640 bytes: refused, counted */
#define PROFLINK_ATTR_KEYS_FULL (-4) /* 256 keys are registered already: counted */
#define PROFLINK_ATTR_BUSY (-5)      /* the key could not be registered now; try again */

/* Sets key to the value_len bytes at value in this thread's current context. */
int proflink_set_attribute(const char *key, const char *value, size_t value_len);

/* Removes key from this thread's current context (an unknown key: nothing to do, 0). */
int proflink_clear_attribute(const char *key);

/* ---- Messages from the profiler ------------------------------------------------------------ */

#define PROFLINK_MSG_CORRELATION 1
#define PROFLINK_MSG_REGISTRATION 2

typedef struct proflink_message {
    uint16_t type;  /* PROFLINK_MSG_CORRELATION or PROFLINK_MSG_REGISTRATION */
    uint16_t minor; /* the minor version the profiler sent */
    union {
        struct {
            uint8_t trace_id[16];
            uint8_t transaction_id[8];
            uint8_t stack_trace_id[16];
            uint16_t count; /* samples since the last report for this triple */
        } correlation;
        struct {
            uint32_t samples_delay_ms;
            const char *host_id; /* not NUL-terminated; NULL when minor 1 */
            size_t host_id_len;
        } registration;
    } u;
} proflink_message;

/* Called on proflink's reader thread ("proflink-reader") for every valid message. The message
 * and the strings it points to are valid only during the call. Keep the callback short: the
 * profiler drops what the socket cannot queue while the reader is busy. NULL fn removes it.
 * A replacement is race-free (fn is never called with another fn's user pointer), but one call
 * of the old pair that had already started may still run just after this returns.
 *
 * The reader thread is started only when the process asks for messages: the first call of this
 * function, proflink_end_transaction, proflink_samples_delay_ms or proflink_host_id (that first
 * call pays one pthread_create), or, with PROFLINK_FIFO set (or in a fork child of a process
 * whose reader ran), the program's first pthread_create or wait for work (accept, poll, ...).
 * Until then the process stays as single-threaded as the program made it
 * (unshare(CLONE_NEWUSER), setns() and per-thread credentials need that), and the kernel keeps
 * the first few datagrams in the socket. */
typedef void (*proflink_message_fn)(const proflink_message *msg, void *user);
void proflink_set_message_callback(proflink_message_fn fn, void *user);

/* ---- Ended transactions (the spec's deferral) ---------------------------------------------- */

typedef struct proflink_stack_count {
    uint8_t stack_trace_id[16];
    uint32_t count; /* how many samples had this stack during the transaction */
} proflink_stack_count;

/* Receives an ended transaction with every stack-trace id the profiler reported for it. `ids`
 * is valid only during the call, and never NULL (n_ids may be 0). Called on the reader thread when the transaction was held, or
 * on the caller's thread (from within proflink_end_transaction) when it is delivered at once. */
typedef void (*proflink_transaction_fn)(const uint8_t trace_id[16],
                                        const uint8_t transaction_id[8],
                                        const proflink_stack_count *ids, size_t n_ids,
                                        void *user);

#define PROFLINK_DELIVERED_NOW 0 /* fn already ran (unsampled, disabled, auto mode, queue full) */
#define PROFLINK_DEFERRED 1      /* fn runs after samples-delay-ms (at most 10 ms more) on the
                                  * reader thread */

/* Hand over an ended transaction. A sampled one (trace_flags bit 0) is held for
 * proflink_samples_delay_ms() so that late correlation messages reach it; an unsampled one, or
 * any when correlation is off, is delivered at once. Never dropped: when the queue is full the
 * transaction is delivered at once and a (rate-limited) warning is logged.
 * fn == NULL selects pull delivery (see proflink_take_transactions below): the result is queued
 * instead of passed to a callback, at once or after the delay as above.
 * Returns PROFLINK_DELIVERED_NOW (fn ran / the result is queued for take) or PROFLINK_DEFERRED,
 * -1 for NULL ids; with fn == NULL also -1 when nothing will be queued (proflink disabled, or the
 * pull queue was full: counted in pull_overflows): the caller then goes on without the ids. */
int proflink_end_transaction(const uint8_t trace_id[16], const uint8_t transaction_id[8],
                             uint8_t trace_flags, proflink_transaction_fn fn, void *user);

/* The deferral delay in force: 1000 until a profiler registration says otherwise; 0 when
 * proflink is disabled. */
uint32_t proflink_samples_delay_ms(void);

/* Copies the host id the profiler registered (NUL-terminated, cut to cap-1). Returns its full
 * length, 0 when no profiler has sent one. */
size_t proflink_host_id(char *buf, size_t cap);

/* ---- Pull delivery (managed runtimes) ------------------------------------------------------
 * A callback runs on proflink's reader thread; a runtime with one interpreter thread (Node,
 * Python with its GIL, ...) would make that thread wait for its event loop, and the profiler's
 * datagrams would be dropped meanwhile. Pull delivery hands ended transactions over through a
 * bounded queue instead: the reader never waits for the consumer.
 *
 * proflink_end_transaction(trace, tx, flags, NULL, NULL) (fn == NULL) queues the result instead
 * of calling back: held for samples-delay-ms when sampled (as with a callback), queued at once
 * otherwise. The queue holds at most PROFLINK_PULL_QUEUE_MAX results; one more is dropped and
 * counted in proflink_stats.pull_overflows (never blocks, never waits for the consumer). */
#define PROFLINK_PULL_QUEUE_MAX 4096

typedef struct proflink_ended_transaction {
    uint8_t trace_id[16];
    uint8_t transaction_id[8];
    uint32_t n_ids;    /* number of proflink_stack_count entries that follow (20 bytes each) */
    uint32_t reserved; /* 0 */
} proflink_ended_transaction; /* 32 bytes; followed by n_ids x proflink_stack_count */

/* Copies as many whole queued results as fit into buf (each: the 32-byte header then its
 * n_ids x 20-byte proflink_stack_count entries, little-endian host layout, no padding between
 * records), oldest first. Returns the number of bytes written (0: nothing queued), or
 * -(bytes needed) if the first queued result alone does not fit into cap (nothing taken).
 * Never blocks. Any thread. 0 when disabled. */
long proflink_take_transactions(void *buf, size_t cap);

/* A descriptor (the read end of a non-blocking, close-on-exec pipe) that is readable while
 * results are queued for proflink_take_transactions. The consumer may read and discard its bytes
 * (they carry no data); proflink_take_transactions drains it when the queue becomes empty.
 * An event loop can watch it without a native addon (Node: new net.Socket({fd, readable:true})).
 * Starts the reader thread. Returns -1 when disabled (or no pipe could be made). Same fd for the
 * life of the process (a fork child gets its own on first call). Do not close it. */
int proflink_transactions_fd(void);

/* Delivers every held transaction now (callbacks run on the calling thread / results queued for
 * pull), e.g. at tracer shutdown, with the stack-trace ids received so far. Returns how many were
 * delivered, -1 when disabled. */
int proflink_flush_transactions(void);

/* ---- The tracer's resource ------------------------------------------------------------------
 * Publishes the tracer's resource: attributes in OTEL_RESOURCE_ATTRIBUTES syntax ("k=v,k2=v2",
 * values percent-decoded), e.g. "service.name=checkout,service.instance.id=...,
 * telemetry.sdk.language=nodejs,telemetry.sdk.name=opentelemetry,telemetry.sdk.version=2.0.0".
 * They replace proflink's defaults for those keys in the OTel process context (republished with
 * the update protocol, so a profiler that already read it sees the change); a changed
 * service.name / deployment.environment.name also republishes the Elastic process storage (new
 * block, pointer swapped, the old block never freed: a profiler may be reading it).
 * Returns 0, -1 on a malformed string or when disabled. Not for a hot path: it allocates. */
int proflink_set_resource(const char *attributes);

/* ---- Introspection -------------------------------------------------------------------------- */

typedef struct proflink_stats {
    uint64_t messages_received;      /* datagrams read from the socket */
    uint64_t correlations;           /* valid correlation messages */
    uint64_t registrations;          /* valid registration messages */
    uint64_t discarded_truncated;    /* shorter than their type and minor require */
    uint64_t discarded_oversized;    /* larger than the receive buffer (MSG_TRUNC) */
    uint64_t ignored_unknown_type;   /* well-formed header, type (or minor 0) we do not know */
    uint64_t fifo_records;           /* JSON records written to PROFLINK_FIFO */
    uint64_t fifo_drops;             /* records dropped: no reader, pipe full or closed */
    uint64_t transactions_deferred;  /* held for samples-delay-ms */
    uint64_t transactions_immediate; /* delivered at once (unsampled, auto, overflow) */
    uint64_t queue_overflows;        /* deferral queue full: delivered at once */
    uint64_t ids_evicted;            /* stack-trace ids dropped to keep memory bounded */
    uint64_t threads_seen;           /* thread records created */
    uint64_t pull_overflows;         /* pull queue full: results dropped (take them sooner) */
    uint64_t http_requests_traced;   /* PROFLINK_HTTP: request heads with a valid traceparent */
    uint64_t http_requests_untraced; /* PROFLINK_HTTP: request heads without one */
    uint64_t attributes_refused;     /* proflink_set_attribute: no room (640 bytes) or 256 keys */
} proflink_stats;

/* Fills *out (size = sizeof(proflink_stats) of the caller, so that older callers keep working
 * when fields are added). Returns 0, or -1 when proflink is disabled (then *out is zeroed). */
int proflink_get_stats(proflink_stats *out, size_t size);

/* "0.1.0" — the version of the library actually loaded. */
const char *proflink_version(void);

/* For programs that link libproflink.a statically: call once at the start of main (a second
 * call does nothing). The preloaded library initializes itself before main; calling it there is
 * harmless. Returns 0 when active, -1 when disabled or the start failed. */
int proflink_init(void);

#ifdef __cplusplus
}
#endif
#endif /* PROFLINK_H */
