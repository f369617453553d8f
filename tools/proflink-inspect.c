/*
 * proflink-inspect — what an out-of-process profiler concludes about a process, check by check.
 *
 * It reads the target from outside exactly as the eBPF profiler's apmint integration does
 * (/proc/PID/maps, the library's ELF file, /proc/PID/mem, the socket under /proc/PID/root), plus
 * the OpenTelemetry process and thread contexts. It changes nothing in the target: memory is
 * only read. Thread pointers come from the C library's thread list in memory (glibc,
 * target_libc_threads.h), so no thread is stopped: a stop interrupts the thread's blocking
 * system call, which a service may log (nginx: "epoll_wait() failed (4: Interrupted system
 * call)"). Only with --stop is each thread stopped for a moment (PTRACE_SEIZE/INTERRUPT) and
 * detached: needed for musl and static programs, whose thread lists cannot be found, and to
 * read threads created without pthread_create (raw clone). --no-threads skips threads.
 *
 * Usage: proflink-inspect [--json] [--no-threads | --stop] PID
 *
 * Checks, in order (a check whose prerequisite failed is SKIP):
 *   1 mapping  executable, file-backed mapping matching .*\/elastic-jvmti-linux-([\w-]*)\.so
 *   2 elf      section headers; .dynsym (via hash tables) storage symbol with st_size 8;
 *              R_*_TLSDESC relocation naming the TLS symbol; load bias          (needs 1)
 *   3 tls      the static TLS offset in the descriptor                          (needs 2)
 *   4 storage  the process storage block and its string limits                  (needs 2)
 *   5 socket   the socket it names: clean path, exists, socket, writable, fits sun_path,
 *              accepts a datagram connect()                                     (needs 4)
 *   6 threads  each thread's apmint and OTel records                            (needs 3)
 *   7 otel     the OpenTelemetry process context (absent is a warning)
 *
 * Exit status: 0 when the apmint profiler would attach (checks 1-5 pass), 1 when it would not,
 * 2 on usage errors or when the process cannot be inspected (no such process, permission).
 *
 * --json prints one object on stdout (addresses are "0x…" strings; absent parts are null):
 * {
 *   "pid": 123, "comm": "sleep", "attachable": true,
 *   "checks": [{"name": "mapping", "status": "pass|fail|warn|skip", "ok": true,
 *               "detail": "…"}, …],                   (in the order above; ok = status != fail)
 *   "library": {"path": "…", "start": "0x…", "end": "0x…", "offset": "0x…",
 *               "load_bias": "0x…", "storage_symbol": "0x…", "tlsdesc_offset": "0x…",
 *               "tlsdesc_section": ".rela.dyn", "otel_tlsdesc_offset": "0x…" | null} | null,
 *   "tls_offset": -64 | null, "otel_tls_offset": -56 | null,
 *   "storage": {"address": "0x…", "minor": 1, "service_name": "…",
 *               "service_environment": "…", "socket_path": "…"} | null,
 *   "socket": {"path": "/proc/123/root/tmp/…", "path_len": 45, "sun_path_max": 107,
 *              "mode": "0600", "uid": 0, "gid": 0, "target_euid": 0, "target_egid": 0,
 *              "access": "owner", "connect": "ok" | "<strerror>" | null} | null,
 *   "threads": [{"tid": 123, "comm": "sleep", "thread_pointer": "0x…" | null,
 *                "error": "…" (only when the thread could not be read),
 *                "apm": {"address": "0x…", "minor": 1, "valid": 1, "trace_present": 1,
 *                        "trace_flags": 1, "trace_id": "<32 hex>", "span_id": "<16 hex>",
 *                        "transaction_id": "<16 hex>"} | null,
 *                "otel": {"address": "0x…", "valid": 1, "trace_flags": 1,
 *                         "trace_id": "…", "span_id": "…", "attrs_size": 18,
 *                         "attributes": {"local_root_span_id": "…"}} | null}, …] | null,
 *   "otel_process_context": {"found": true, "valid": true, "mapping_name": "[anon:OTEL_CTX]",
 *              "address": "0x…", "version": 2, "payload_size": 120, "published_at_ns": 123,
 *              "resource": {"service.name": "…", …},
 *              "attributes": {"k": "v", "list": ["a", "b"], …}}
 *            | {"found": false, "error": "no OTEL_CTX mapping"}
 *            | {"found": true, "valid": false, "error": "…", …header fields read…}
 * }
 * When the process cannot be inspected at all: {"pid": 123, "error": "…"} and exit status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect_all.h"
#include "inspect_diagnose.h"
#include "proflink.h"
#include "target_attach.h"
#include "target_http.h"
#include "target_netns.h"
#include "target_libc_threads.h"
#include "target_json.h"
#include "target_otel.h"
#include "target_records.h"
#include "target_threads.h"
#include "target_util.h"

enum status { ST_PASS, ST_FAIL, ST_WARN, ST_SKIP };
static const char *const status_word[] = {"PASS", "FAIL", "WARN", "SKIP"};
static const char *const status_json[] = {"pass", "fail", "warn", "skip"};

enum { C_MAPPING, C_ELF, C_TLS, C_STORAGE, C_SOCKET, C_THREADS, C_OTEL, C_COUNT };
static const char *const check_name[] = {"mapping", "elf",     "tls", "storage",
                                         "socket",  "threads", "otel"};

struct check {
    enum status st;
    char detail[1536];
};

struct thread_report {
    pid_t tid;
    int unpublished; /* a thread whose records the profiler would not see as its own */
    char comm[32];
    char err[TARGET_ERRLEN + 64]; /* non-empty: the thread could not be read */
    int tp_ok;
    uint64_t tp;
    int has_apm, has_otel; /* 1: a record was read */
    uint64_t apm_ptr, otel_ptr;
    struct target_apm_record apm;
    struct target_otel_record otel;
};

struct report {
    struct target t;
    char comm[32];
    struct check c[C_COUNT];
    int threads_run;
    struct thread_report *threads;
    size_t nthreads;
    int otel_rc; /* target_otel_read: 0 found, 1 absent, -1 invalid */
    char otel_err[TARGET_ERRLEN];
    struct target_otel_ctx otel;
    const struct target_pb_value *key_map; /* threadlocal.attribute_key_map, if published */
    int http; /* PROFLINK_HTTP reading: 1 on, 0 off, -1 unknown (target_http.h) */
    int qlen; /* net.unix.max_dgram_qlen of its network namespace, -1 unknown (target_netns.h) */
    int key_map_refreshed;                 /* re-read for an index the first read lacked */
};

static void set(struct check *c, enum status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set(struct check *c, enum status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    c->st = st;
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
}

/* Appends to a check's detail. */
static void add(struct check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct check *c, const char *fmt, ...)
{
    size_t n = strlen(c->detail);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail + n, sizeof c->detail - n, fmt, ap);
    va_end(ap);
}

static void skip(struct report *r, int which, int because)
{
    set(&r->c[which], ST_SKIP, "needs the %s check", check_name[because]);
}

/* A string published by the target, made printable for a terminal: C-style escapes. */
static const char *printable(const char *s, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            o += (size_t)snprintf(buf + o, cap - o, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
        else
            buf[o++] = (char)ch;
    }
    buf[o] = '\0';
    return buf;
}

static const char *signed_hex(int64_t v, char *buf, size_t cap)
{
    if (v < 0)
        snprintf(buf, cap, "-0x%" PRIx64, (uint64_t)0 - (uint64_t)v);
    else
        snprintf(buf, cap, "0x%" PRIx64, (uint64_t)v);
    return buf;
}

/* ---- checks 1-5 ------------------------------------------------------------------------- */

static void check_mapping(struct report *r)
{
    char err[TARGET_ERRLEN];
    if (target_find_library(&r->t, err) != 0) {
        set(&r->c[C_MAPPING], ST_FAIL, "%s", err);
        return;
    }
    const struct target_mapping *m = r->t.lib;
    set(&r->c[C_MAPPING], ST_PASS, "%s (%" PRIx64 "-%" PRIx64 " %s offset 0x%" PRIx64 ")",
        r->t.lib_path, m->start, m->end, m->perms, m->offset);
    if (r->t.lib_files > 1)
        add(&r->c[C_MAPPING], "; %zu matching libraries are mapped, the profiler tries each",
            r->t.lib_files);
}

static void check_elf(struct report *r)
{
    struct check *c = &r->c[C_ELF];
    char err[TARGET_ERRLEN];
    if (target_read_elf(&r->t, err) != 0) {
        set(c, ST_FAIL, "%s", err);
        return;
    }
    const struct target *t = &r->t;
    set(c, ST_PASS,
        "%s: %s st_value=0x%" PRIx64 " st_size=8 (via %s); R_%s_TLSDESC for %s at r_offset=0x%" PRIx64
        " in %s; load bias 0x%" PRIx64,
        target_elf_machine_name(&t->elf), TARGET_STORAGE_SYMBOL, t->storage_sym.value,
        t->storage_sym.via, t->elf.eh->e_machine == EM_AARCH64 ? "AARCH64" : "X86_64",
        TARGET_TLS_SYMBOL, t->tls_reloc.r_offset, t->tls_reloc.section, t->load_bias);
    if (t->has_otel_reloc)
        add(c, "; %s TLSDESC at r_offset=0x%" PRIx64, TARGET_OTEL_TLS_SYMBOL,
            t->otel_reloc.r_offset);
    else
        add(c, "; no %s TLSDESC (OTel thread context not published)", TARGET_OTEL_TLS_SYMBOL);
    if (t->load_bias_first != t->load_bias) {
        c->st = ST_WARN;
        add(c, "; warning: the lowest mapping of the file implies bias 0x%" PRIx64
               " (unusual segment layout)",
            t->load_bias_first);
    }
}

static void check_tls(struct report *r)
{
    struct check *c = &r->c[C_TLS];
    char err[TARGET_ERRLEN], h[32];
    if (target_read_tls_offset(&r->t, err) != 0) {
        set(c, ST_FAIL, "%s", err);
        return;
    }
    set(c, ST_PASS, "static TLS offset %s (%" PRId64 ") from the thread pointer (descriptor at 0x%" PRIx64 ")",
        signed_hex(r->t.tls_offset, h, sizeof h), r->t.tls_offset, r->t.tls_desc_addr);
    if (r->t.has_otel_offset)
        add(c, "; %s offset %s", TARGET_OTEL_TLS_SYMBOL,
            signed_hex(r->t.otel_tls_offset, h, sizeof h));
    else if (r->t.has_otel_reloc)
        add(c, "; %s: %s", TARGET_OTEL_TLS_SYMBOL, r->t.otel_offset_err);
}

static void check_storage(struct report *r)
{
    struct check *c = &r->c[C_STORAGE];
    char err[TARGET_ERRLEN], a[600], b[600], s[1100];
    if (target_read_storage(&r->t, err) != 0) {
        set(c, ST_FAIL, "%s", err);
        return;
    }
    const struct target_storage *st = &r->t.storage;
    set(c, ST_PASS, "at 0x%" PRIx64 ": minor %u, service-name \"%s\", environment \"%s\", socket \"%s\"",
        st->addr, st->minor, printable(st->service_name.s, st->service_name.len, a, sizeof a),
        printable(st->service_environment.s, st->service_environment.len, b, sizeof b),
        printable(st->socket_path.s, st->socket_path.len, s, sizeof s));
    if (st->minor != 1) {
        c->st = ST_WARN; /* the profiler skips the field, so it still attaches */
        add(c, "; warning: layout-minor-version should be 1");
    }
    if (st->service_name.len == 0)
        add(c, "; note: empty service name");
    if (st->service_name.len >= 128)
        add(c, "; note: service-name is 128 bytes, the limit: it was probably cut");
    if (st->service_environment.len >= 128)
        add(c, "; note: environment is 128 bytes, the limit: it was probably cut");
}

static void check_socket(struct report *r)
{
    struct check *c = &r->c[C_SOCKET];
    char err[TARGET_ERRLEN];
    if (target_check_socket(&r->t, err) != 0) {
        set(c, ST_FAIL, "%s", err);
        return;
    }
    const struct target_socket *s = &r->t.sock;
    set(c, ST_PASS,
        "%s (%zu bytes, sun_path holds %d): socket mode %04o owner %u:%u, writable (%s) by "
        "target euid %u egid %u; datagram connect ok",
        s->proc_path, s->proc_path_len, TARGET_SUN_PATH_USABLE, (unsigned)(s->mode & 07777),
        (unsigned)s->uid, (unsigned)s->gid, s->access, (unsigned)s->target_euid,
        (unsigned)s->target_egid);
    const struct target_str *raw = &r->t.storage.socket_path;
    if (strlen(s->cleaned) != raw->len || memcmp(s->cleaned, raw->s, raw->len) != 0)
        add(c, "; path cleaned to %s as the profiler does", s->cleaned);
}

/* ---- 6 threads ---------------------------------------------------------------------------- */

/* How thread pointers are found: the C library's list (no stop) or, with --stop, ptrace. */
struct tp_source {
    int stop;
    int listed; /* the libc list was read */
    char list_err[TARGET_ERRLEN];
    struct target_libc_thread *list;
    size_t n;
};

static int find_tp(const struct tp_source *src, struct thread_report *tr)
{
    char err[TARGET_ERRLEN];
    if (src->stop) {
        if (target_thread_pointer(tr->tid, &tr->tp, err) != 0) {
            snprintf(tr->err, sizeof tr->err, "%s", err);
            return -1;
        }
        return 0;
    }
    if (!src->listed) {
        snprintf(tr->err, sizeof tr->err,
                 "thread pointer not read (no thread stopped: %s; --stop reads it)", src->list_err);
        return -1;
    }
    if (target_libc_thread_tp(src->list, src->n, tr->tid, &tr->tp) != 0) {
        tr->unpublished = 1;
        snprintf(tr->err, sizeof tr->err,
                 "not on glibc's thread list: created without pthread_create (raw clone), so it "
                 "has no record of its own (--stop reads its thread pointer)");
        return -1;
    }
    return 0;
}

static void read_thread(struct report *r, const struct tp_source *src, struct thread_report *tr)
{
    const struct target *t = &r->t;
    char err[TARGET_ERRLEN];
    target_thread_comm(t->pid, tr->tid, tr->comm, sizeof tr->comm);
    if (find_tp(src, tr) != 0)
        return;
    tr->tp_ok = 1;
    if (target_tls_pointer(&t->mem, tr->tp, t->tls_offset, &tr->apm_ptr, err) != 0) {
        snprintf(tr->err, sizeof tr->err, "apm TLS pointer: %s", err);
        return;
    }
    if (tr->apm_ptr) {
        if (target_read_apm_record(&t->mem, tr->apm_ptr, &tr->apm, err) != 0) {
            snprintf(tr->err, sizeof tr->err, "apm record: %s", err);
            return;
        }
        tr->has_apm = 1;
    }
    if (!t->has_otel_offset)
        return;
    if (target_tls_pointer(&t->mem, tr->tp, t->otel_tls_offset, &tr->otel_ptr, err) != 0) {
        snprintf(tr->err, sizeof tr->err, "otel TLS pointer: %s", err);
        return;
    }
    if (tr->otel_ptr) {
        if (target_read_otel_record(&t->mem, tr->otel_ptr, &tr->otel, err) != 0) {
            snprintf(tr->err, sizeof tr->err, "otel record: %s", err);
            return;
        }
        tr->has_otel = 1;
    }
}

static int has_unknown_key(const struct report *r, const struct target_otel_record *o);
static void check_otel(struct report *r);

/* A raw clone() thread runs on its creator's thread pointer: what a profiler reads there is
 * the creator's record, not one of its own. */
static size_t mark_shared_tps(struct report *r)
{
    size_t shared = 0;
    for (size_t i = 0; i < r->nthreads; i++) {
        struct thread_report *a = &r->threads[i];
        for (size_t k = 0; a->tp_ok && k < i; k++) {
            const struct thread_report *b = &r->threads[k];
            if (!b->tp_ok || b->tp != a->tp)
                continue;
            a->unpublished = 1;
            snprintf(a->err, sizeof a->err,
                     "shares thread pointer 0x%" PRIx64 " with thread %d: created without "
                     "pthread_create (raw clone); the record seen there is thread %d's",
                     a->tp, (int)b->tid, (int)b->tid);
            shared++;
            break;
        }
    }
    return shared;
}

static void check_threads(struct report *r, int stop)
{
    struct check *c = &r->c[C_THREADS];
    pid_t *tids;
    char err[TARGET_ERRLEN];
    struct tp_source src = {.stop = stop};
    if (!stop)
        src.listed = target_libc_threads(r->t.pid, &r->t.maps, &r->t.mem, &src.list, &src.n,
                                         src.list_err) == 0;
    if (target_threads_list(r->t.pid, &tids, &r->nthreads, err) != 0) {
        set(c, ST_WARN, "%s", err);
        return;
    }
    r->threads = calloc(r->nthreads ? r->nthreads : 1, sizeof *r->threads);
    if (!r->threads) {
        free(tids);
        r->nthreads = 0;
        set(c, ST_WARN, "out of memory");
        return;
    }
    r->threads_run = 1;
    for (size_t i = 0; i < r->nthreads; i++) {
        r->threads[i].tid = tids[i];
        read_thread(r, &src, &r->threads[i]);
    }
    free(tids);
    free(src.list);
    mark_shared_tps(r);
    size_t failed = 0, with_apm = 0, active = 0, with_otel = 0, odd = 0, unknown = 0;
    size_t unpublished = 0, bare = 0;
    for (size_t i = 0; i < r->nthreads; i++) {
        const struct thread_report *tr = &r->threads[i];
        unpublished += tr->unpublished;
        /* proflink's own threads (reader, intake) have no record by design */
        bare += tr->tp_ok && !tr->err[0] && !tr->has_apm && strcmp(tr->comm, "proflink-reader") &&
                strcmp(tr->comm, "proflink-intake");
        failed += tr->err[0] != '\0' && !tr->unpublished;
        with_apm += tr->has_apm && !tr->unpublished;
        active += tr->has_apm && !tr->unpublished && tr->apm.valid && tr->apm.trace_present;
        with_otel += tr->has_otel && !tr->unpublished;
        odd += tr->has_otel && (tr->otel_ptr & 1);
        unknown += tr->has_otel && has_unknown_key(r, &tr->otel);
    }
    /* OTEP 4947: a reader meeting a key index its map lacks refreshes the map (keys are only
     * ever appended, so the known ones keep their names). */
    if (unknown && r->otel_rc == 0) {
        target_otel_free(&r->otel);
        check_otel(r);
        r->key_map_refreshed = 1;
    }
    set(c, failed || odd || unpublished || bare ? ST_WARN : ST_PASS,
        "%zu thread(s): %zu with an apm record (%zu with an active trace), %zu with an OTel record",
        r->nthreads, with_apm, active, with_otel);
    if (unpublished)
        add(c, "; %zu created without pthread_create (raw clone), without a record of their own",
            unpublished);
    if (bare)
        add(c, "; %zu without a record (started before proflink, or created through a "
               "pthread_create it does not interpose, e.g. one a library found with "
               "dlsym(RTLD_NEXT); such a thread gets one on its first API call)", bare);
    if (failed)
        add(c, "; %zu could not be read (see below)", failed);
    if (odd)
        add(c, "; %zu OTel record(s) at an odd address (OTEP 4947 requires 2-byte alignment)", odd);
    if (r->key_map_refreshed)
        add(c, "; key map re-read (a record used a key index the first read did not have)");
    add(c, stop ? "; thread pointers read by stopping each thread for a moment (--stop)"
                : "; no thread stopped (thread pointers from %s)",
        src.listed ? "glibc's thread list" : "nowhere");
}

static int has_unknown_key(const struct report *r, const struct target_otel_record *o)
{
    size_t pos = 0, known = r->key_map && r->key_map->kind == TARGET_PB_ARRAY ? r->key_map->nitems : 0;
    struct target_otel_attr at;
    while (target_otel_attr_next(o, &pos, &at) == 1)
        if (at.key >= known)
            return 1;
    return 0;
}

/* ---- 7 OpenTelemetry process context ----------------------------------------------------- */

static void check_otel(struct report *r)
{
    struct check *c = &r->c[C_OTEL];
    r->otel_rc = target_otel_read(&r->t.mem, &r->t.maps, &r->otel, r->otel_err);
    if (r->otel_rc == 1) {
        set(c, ST_WARN, "no OTEL_CTX mapping (OpenTelemetry process context not published)");
        return;
    }
    if (r->otel_rc != 0) {
        set(c, ST_WARN, "%s at 0x%" PRIx64 ": %s", r->otel.mapping_name, r->otel.addr,
            r->otel_err);
        return;
    }
    const struct target_process_context *pc = &r->otel.pc;
    r->key_map = target_pb_find(&pc->attributes, "threadlocal.attribute_key_map");
    set(c, ST_PASS,
        "%s at 0x%" PRIx64 ": version %" PRIu32 ", %" PRIu32 " payload bytes, published at %" PRIu64
        " ns; %zu resource attributes, %zu attributes",
        r->otel.mapping_name, r->otel.addr, r->otel.version, r->otel.payload_size,
        r->otel.published_at_ns, pc->resource.n, pc->attributes.n);
    if (r->otel.attempts > 1)
        add(c, " (read %d times: it was being updated)", r->otel.attempts);
}

/* The name of OTel thread attribute key index k, from the process context key map. */
static const char *key_name(const struct report *r, unsigned k, char *buf, size_t cap)
{
    if (r->key_map && r->key_map->kind == TARGET_PB_ARRAY && k < r->key_map->nitems &&
        r->key_map->items[k].kind == TARGET_PB_STRING)
        return r->key_map->items[k].s;
    snprintf(buf, cap, "#%u", k);
    return buf;
}

/* ---- human output ------------------------------------------------------------------------- */

static void print_value(const struct target_pb_value *v)
{
    char buf[2048];
    switch (v->kind) {
    case TARGET_PB_STRING: printf("\"%s\"", printable(v->s, v->len, buf, sizeof buf)); break;
    case TARGET_PB_BOOL: printf("%s", v->b ? "true" : "false"); break;
    case TARGET_PB_INT: printf("%" PRId64, v->i); break;
    case TARGET_PB_DOUBLE: printf("%g", v->d); break;
    case TARGET_PB_BYTES: printf("<%zu bytes>", v->len); break;
    case TARGET_PB_ARRAY:
        printf("[");
        for (size_t i = 0; i < v->nitems; i++) {
            printf(i ? ", " : "");
            print_value(&v->items[i]);
        }
        printf("]");
        break;
    case TARGET_PB_KVLIST:
        printf("{");
        for (size_t i = 0; i < v->nkvs; i++) {
            printf("%s%s=", i ? ", " : "", printable(v->kvs[i].key, v->kvs[i].key_len, buf, sizeof buf));
            print_value(&v->kvs[i].value);
        }
        printf("}");
        break;
    default: printf("(unset)");
    }
}

static void print_kvs(const char *title, const struct target_pb_kvs *kvs)
{
    char buf[1024];
    for (size_t i = 0; i < kvs->n; i++) {
        printf("      %s %s = ", title, printable(kvs->v[i].key, kvs->v[i].key_len, buf, sizeof buf));
        print_value(&kvs->v[i].value);
        printf("\n");
    }
}

static void print_thread(const struct report *r, const struct thread_report *tr)
{
    char a[33], b[17], x[17], key[16], val[600];
    printf("      tid %d (%s):", (int)tr->tid, tr->comm);
    if (tr->tp_ok)
        printf(" tp 0x%" PRIx64, tr->tp);
    if (!tr->has_apm && !tr->err[0])
        printf(" apm NULL");
    if (tr->has_apm) {
        const struct target_apm_record *p = &tr->apm;
        target_hex(p->trace_id, 16, a);
        target_hex(p->span_id, 8, b);
        target_hex(p->transaction_id, 8, x);
        printf(" apm@0x%" PRIx64 " minor=%u valid=%u present=%u flags=%02x trace=%s span=%s txn=%s",
               tr->apm_ptr, p->minor, p->valid, p->trace_present, p->trace_flags, a, b, x);
    }
    if (tr->has_otel) {
        const struct target_otel_record *o = &tr->otel;
        target_hex(o->trace_id, 16, a);
        target_hex(o->span_id, 8, b);
        printf("\n        otel@0x%" PRIx64 " valid=%u flags=%02x trace=%s span=%s attrs=%u",
               tr->otel_ptr, o->valid, o->trace_flags, a, b, o->attrs_size);
        size_t pos = 0;
        struct target_otel_attr at;
        int rc;
        while ((rc = target_otel_attr_next(o, &pos, &at)) == 1)
            printf(" %s=\"%s\"", key_name(r, at.key, key, sizeof key),
                   printable((const char *)at.value, at.len, val, sizeof val));
        if (rc < 0)
            printf(" (malformed attributes)");
    } else if (r->t.has_otel_offset && !tr->err[0]) {
        printf(" otel NULL");
    }
    if (tr->err[0])
        printf(" error: %s", tr->err);
    printf("\n");
}

static void print_human(const struct report *r, int attachable)
{
    printf("proflink-inspect: pid %d (%s)\n", (int)r->t.pid, r->comm);
    for (int i = 0; i < C_COUNT; i++) {
        printf("%s  %-8s %s\n", status_word[r->c[i].st], check_name[i], r->c[i].detail);
        if (r->c[i].st == ST_FAIL) {
            char fix[1024];
            inspect_fix(r->t.pid, check_name[i], fix, sizeof fix);
            printf("      fix: %s\n", fix);
        }
        if (i == C_THREADS && r->threads_run)
            for (size_t k = 0; k < r->nthreads; k++)
                print_thread(r, &r->threads[k]);
        if (i == C_OTEL && r->otel_rc == 0) {
            print_kvs("resource", &r->otel.pc.resource);
            print_kvs("attribute", &r->otel.pc.attributes);
        }
    }
    if (r->http >= 0)
        printf("INFO  http     traceparent of HTTP/1.x requests %s (PROFLINK_HTTP)\n",
               r->http ? "read: each request's thread shows its trace" : "not read");
    if (r->qlen >= TARGET_QLEN_ADVISED)
        printf("INFO  qlen     net.unix.max_dgram_qlen %d in the target's network namespace\n",
               r->qlen);
    else if (r->qlen >= 0)
        printf("WARN  qlen     net.unix.max_dgram_qlen is %d in the target's network namespace: of "
               "a profiler's burst of samples, all but the first %d are dropped (the profiler "
               "counts them as dropped; their stack trace ids never reach the tracer)\n"
               "      fix: raise it in that namespace, e.g. nsenter -t %d -n sysctl -w "
               "net.unix.max_dgram_qlen=1000 (a container: its sysctls setting), before the "
               "service starts (a socket keeps the value it was created with)\n",
               r->qlen, r->qlen + 1, (int)r->t.pid);
    printf("%s\n", attachable ? "result: attachable (the apmint profiler would attach)"
                              : "result: NOT attachable (the apmint profiler would not attach)");
}

/* ---- JSON output -------------------------------------------------------------------------- */

static void json_value(struct target_json *j, const char *key, const struct target_pb_value *v)
{
    char hex[2 * 64 + 1];
    switch (v->kind) {
    case TARGET_PB_STRING: target_json_strn(j, key, v->s, v->len); break;
    case TARGET_PB_BOOL: target_json_bool(j, key, v->b); break;
    case TARGET_PB_INT: target_json_int(j, key, v->i); break;
    case TARGET_PB_DOUBLE: target_json_double(j, key, v->d); break;
    case TARGET_PB_BYTES:
        target_hex((const uint8_t *)v->s, v->len > 64 ? 64 : v->len, hex);
        target_json_str(j, key, hex);
        break;
    case TARGET_PB_ARRAY:
        target_json_array(j, key);
        for (size_t i = 0; i < v->nitems; i++)
            json_value(j, NULL, &v->items[i]);
        target_json_end_array(j);
        break;
    case TARGET_PB_KVLIST:
        target_json_object(j, key);
        for (size_t i = 0; i < v->nkvs; i++)
            json_value(j, v->kvs[i].key, &v->kvs[i].value);
        target_json_end_object(j);
        break;
    default: target_json_null(j, key);
    }
}

static void json_kvs(struct target_json *j, const char *key, const struct target_pb_kvs *kvs)
{
    target_json_object(j, key);
    for (size_t i = 0; i < kvs->n; i++)
        json_value(j, kvs->v[i].key, &kvs->v[i].value);
    target_json_end_object(j);
}

static void json_library(struct target_json *j, const struct report *r)
{
    const struct target *t = &r->t;
    if (r->c[C_MAPPING].st == ST_FAIL) {
        target_json_null(j, "library");
        return;
    }
    target_json_object(j, "library");
    target_json_str(j, "path", t->lib_path);
    target_json_hex(j, "start", t->lib->start);
    target_json_hex(j, "end", t->lib->end);
    target_json_hex(j, "offset", t->lib->offset);
    if (r->c[C_ELF].st == ST_PASS || r->c[C_ELF].st == ST_WARN) {
        target_json_hex(j, "load_bias", t->load_bias);
        target_json_hex(j, "storage_symbol", t->storage_sym.value);
        target_json_hex(j, "tlsdesc_offset", t->tls_reloc.r_offset);
        target_json_str(j, "tlsdesc_section", t->tls_reloc.section);
        if (t->has_otel_reloc)
            target_json_hex(j, "otel_tlsdesc_offset", t->otel_reloc.r_offset);
        else
            target_json_null(j, "otel_tlsdesc_offset");
    }
    target_json_end_object(j);
}

static void json_storage_socket(struct target_json *j, const struct report *r)
{
    const struct target_storage *st = &r->t.storage;
    if (r->c[C_STORAGE].st == ST_PASS || r->c[C_STORAGE].st == ST_WARN) {
        target_json_object(j, "storage");
        target_json_hex(j, "address", st->addr);
        target_json_uint(j, "minor", st->minor);
        target_json_strn(j, "service_name", st->service_name.s, st->service_name.len);
        target_json_strn(j, "service_environment", st->service_environment.s,
                         st->service_environment.len);
        target_json_strn(j, "socket_path", st->socket_path.s, st->socket_path.len);
        target_json_end_object(j);
    } else {
        target_json_null(j, "storage");
    }
    const struct target_socket *s = &r->t.sock;
    if (r->c[C_SOCKET].st == ST_SKIP || !s->proc_path[0]) {
        target_json_null(j, "socket");
        return;
    }
    char mode[8];
    target_json_object(j, "socket");
    target_json_str(j, "path", s->proc_path);
    target_json_uint(j, "path_len", s->proc_path_len);
    target_json_int(j, "sun_path_max", TARGET_SUN_PATH_USABLE);
    if (s->stat_ok) {
        snprintf(mode, sizeof mode, "%04o", (unsigned)(s->mode & 07777));
        target_json_str(j, "mode", mode);
        target_json_uint(j, "uid", s->uid);
        target_json_uint(j, "gid", s->gid);
    }
    target_json_uint(j, "target_euid", s->target_euid);
    target_json_uint(j, "target_egid", s->target_egid);
    target_json_str(j, "access", s->access);
    if (s->connect_tried)
        target_json_str(j, "connect", s->connect_errno ? strerror(s->connect_errno) : "ok");
    else
        target_json_null(j, "connect");
    target_json_end_object(j);
}

static void json_thread(struct target_json *j, const struct report *r,
                        const struct thread_report *tr)
{
    char a[33], b[17], x[17], key[16];
    target_json_object(j, NULL);
    target_json_int(j, "tid", tr->tid);
    target_json_str(j, "comm", tr->comm);
    if (tr->tp_ok)
        target_json_hex(j, "thread_pointer", tr->tp);
    else
        target_json_null(j, "thread_pointer");
    if (tr->err[0])
        target_json_str(j, "error", tr->err);
    target_json_bool(j, "own_record_possible", !tr->unpublished);
    if (tr->has_apm) {
        const struct target_apm_record *p = &tr->apm;
        target_json_object(j, "apm");
        target_json_hex(j, "address", tr->apm_ptr);
        target_json_uint(j, "minor", p->minor);
        target_json_uint(j, "valid", p->valid);
        target_json_uint(j, "trace_present", p->trace_present);
        target_json_uint(j, "trace_flags", p->trace_flags);
        target_hex(p->trace_id, 16, a);
        target_hex(p->span_id, 8, b);
        target_hex(p->transaction_id, 8, x);
        target_json_str(j, "trace_id", a);
        target_json_str(j, "span_id", b);
        target_json_str(j, "transaction_id", x);
        target_json_end_object(j);
    } else {
        target_json_null(j, "apm");
    }
    if (tr->has_otel) {
        const struct target_otel_record *o = &tr->otel;
        target_json_object(j, "otel");
        target_json_hex(j, "address", tr->otel_ptr);
        target_json_uint(j, "valid", o->valid);
        target_json_uint(j, "trace_flags", o->trace_flags);
        target_hex(o->trace_id, 16, a);
        target_hex(o->span_id, 8, b);
        target_json_str(j, "trace_id", a);
        target_json_str(j, "span_id", b);
        target_json_uint(j, "attrs_size", o->attrs_size);
        target_json_object(j, "attributes");
        size_t pos = 0;
        struct target_otel_attr at;
        while (target_otel_attr_next(o, &pos, &at) == 1)
            target_json_strn(j, key_name(r, at.key, key, sizeof key), (const char *)at.value,
                             at.len);
        target_json_end_object(j);
        target_json_end_object(j);
    } else {
        target_json_null(j, "otel");
    }
    target_json_end_object(j);
}

static void json_otel(struct target_json *j, const struct report *r)
{
    target_json_object(j, "otel_process_context");
    target_json_bool(j, "found", r->otel_rc != 1);
    if (r->otel_rc == 1) {
        target_json_str(j, "error", r->otel_err);
        target_json_end_object(j);
        return;
    }
    target_json_bool(j, "valid", r->otel_rc == 0);
    if (r->otel_rc != 0)
        target_json_str(j, "error", r->otel_err);
    target_json_str(j, "mapping_name", r->otel.mapping_name);
    target_json_hex(j, "address", r->otel.addr);
    target_json_uint(j, "version", r->otel.version);
    target_json_uint(j, "payload_size", r->otel.payload_size);
    target_json_uint(j, "published_at_ns", r->otel.published_at_ns);
    target_json_bool(j, "key_map_refreshed", r->key_map_refreshed);
    if (r->otel_rc == 0) {
        json_kvs(j, "resource", &r->otel.pc.resource);
        json_kvs(j, "attributes", &r->otel.pc.attributes);
    }
    target_json_end_object(j);
}

static void print_json(const struct report *r, int attachable)
{
    struct target_json j;
    target_json_init(&j, stdout);
    target_json_object(&j, NULL);
    target_json_int(&j, "pid", r->t.pid);
    target_json_str(&j, "comm", r->comm);
    target_json_bool(&j, "attachable", attachable);
    target_json_array(&j, "checks");
    for (int i = 0; i < C_COUNT; i++) {
        target_json_object(&j, NULL);
        target_json_str(&j, "name", check_name[i]);
        target_json_str(&j, "status", status_json[r->c[i].st]);
        target_json_bool(&j, "ok", r->c[i].st != ST_FAIL);
        target_json_str(&j, "detail", r->c[i].detail);
        target_json_end_object(&j);
    }
    target_json_end_array(&j);
    json_library(&j, r);
    int tls_ok = r->c[C_TLS].st == ST_PASS;
    if (tls_ok)
        target_json_int(&j, "tls_offset", r->t.tls_offset);
    else
        target_json_null(&j, "tls_offset");
    if (tls_ok && r->t.has_otel_offset)
        target_json_int(&j, "otel_tls_offset", r->t.otel_tls_offset);
    else
        target_json_null(&j, "otel_tls_offset");
    json_storage_socket(&j, r);
    if (r->threads_run) {
        target_json_array(&j, "threads");
        for (size_t k = 0; k < r->nthreads; k++)
            json_thread(&j, r, &r->threads[k]);
        target_json_end_array(&j);
    } else {
        target_json_null(&j, "threads");
    }
    json_otel(&j, r);
    if (r->http >= 0)
        target_json_bool(&j, "http_reading", r->http);
    else
        target_json_null(&j, "http_reading");
    if (r->qlen >= 0)
        target_json_int(&j, "dgram_qlen", r->qlen);
    else
        target_json_null(&j, "dgram_qlen");
    target_json_end_object(&j);
}

/* ---- main --------------------------------------------------------------------------------- */

static void usage(void)
{
    printf(
            "usage: proflink-inspect [--json] [--no-threads | --stop] PID\n"
            "       proflink-inspect --all   (every process that maps proflink, one line each)\n"
            "\n"
            "Reads process PID from outside, the way an eBPF profiler does, and reports check by\n"
            "check whether the Elastic apmint profiler integration would attach to it:\n"
            "  mapping, elf, tls, storage, socket   (all must pass: exit status 0)\n"
            "  threads   each thread's apmint / OpenTelemetry trace context; thread pointers\n"
            "            come from glibc's thread list in memory: no thread is stopped\n"
            "  otel      the OpenTelemetry process context (OTEL_CTX mapping)\n"
            "\n"
            "  --json        print one JSON object instead of text\n"
            "  --no-threads  do not read the threads\n"
            "  --stop        read thread pointers by stopping each thread for a moment with\n"
            "                ptrace (musl, static programs, raw clone threads); this interrupts\n"
            "                the thread's blocking system call (EINTR), which services may log\n"
            "  -h, --help    this help\n"
            "\n"
            "Exit status: 0 attachable, 1 not attachable, 2 usage error or cannot inspect PID.\n");
}

static int parse_pid(const char *s, pid_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > INT_MAX)
        return -1;
    *out = (pid_t)v;
    return 0;
}

static int fatal(int json, pid_t pid, const char *msg)
{
    fprintf(stderr, "proflink-inspect: %s\n", msg);
    if (json) {
        struct target_json j;
        target_json_init(&j, stdout);
        target_json_object(&j, NULL);
        target_json_int(&j, "pid", pid);
        target_json_str(&j, "error", msg);
        target_json_end_object(&j);
    }
    return 2;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"no-threads", no_argument, NULL, 'n'},
                                         {"stop", no_argument, NULL, 's'},
                                         {"help", no_argument, NULL, 'h'},
                                         {"version", no_argument, NULL, 'V'},
                                         {"all", no_argument, NULL, 'A'},
                                         {NULL, 0, NULL, 0}};
    int json = 0, threads = 1, stop = 0, o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'j': json = 1; break;
        case 'n': threads = 0; break;
        case 's': stop = 1; break;
        case 'h': usage(); return 0;
        case 'A': return inspect_all();
        case 'V': printf("proflink-inspect %s\n", PROFLINK_VERSION_STRING); return 0;
        default:
            fprintf(stderr, "usage: proflink-inspect [--json] [--no-threads | --stop] PID (see --help)\n");
            return 2;
        }
    }
    pid_t pid;
    if (optind + 1 != argc || parse_pid(argv[optind], &pid) != 0) {
        if (optind < argc && optind + 1 == argc)
            fprintf(stderr, "proflink-inspect: not a process id: %s\n", argv[optind]);
        fprintf(stderr, "usage: proflink-inspect [--json] [--no-threads | --stop] PID (see --help)\n");
        return 2;
    }

    static struct report r; /* large: keep it off the stack */
    char err[TARGET_ERRLEN];
    if (target_open(&r.t, pid, err) != 0) {
        target_close(&r.t);
        return fatal(json, pid, err);
    }
    target_thread_comm(pid, pid, r.comm, sizeof r.comm);

    check_mapping(&r);
    if (r.c[C_MAPPING].st == ST_FAIL)
        skip(&r, C_ELF, C_MAPPING);
    else
        check_elf(&r);
    int elf_ok = r.c[C_ELF].st == ST_PASS || r.c[C_ELF].st == ST_WARN;
    r.http = elf_ok ? target_http_reading(&r.t) : -1;
    r.qlen = r.c[C_MAPPING].st == ST_PASS ? target_dgram_qlen(r.t.pid) : -1;
    if (elf_ok) {
        check_tls(&r);
        check_storage(&r);
    } else {
        skip(&r, C_TLS, C_ELF);
        skip(&r, C_STORAGE, C_ELF);
    }
    if (r.c[C_STORAGE].st == ST_PASS || r.c[C_STORAGE].st == ST_WARN)
        check_socket(&r);
    else
        skip(&r, C_SOCKET, C_STORAGE);
    /* The process context first: its key map names the OTel thread attributes. */
    check_otel(&r);
    if (!threads)
        set(&r.c[C_THREADS], ST_SKIP, "disabled by --no-threads");
    else if (r.c[C_TLS].st != ST_PASS)
        skip(&r, C_THREADS, C_TLS);
    else
        check_threads(&r, stop);

    int attachable = 1;
    for (int i = C_MAPPING; i <= C_SOCKET; i++)
        attachable &= r.c[i].st == ST_PASS || r.c[i].st == ST_WARN;
    if (json)
        print_json(&r, attachable);
    else
        print_human(&r, attachable);
    fflush(stdout);

    free(r.threads);
    target_otel_free(&r.otel);
    target_close(&r.t);
    return attachable ? 0 : 1;
}
