/* inspect_threads.c — see inspect_threads.h. */
#include "inspect_threads.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect_otel.h"
#include "common/target_libc_threads.h"
#include "common/target_threads.h"

/* How thread pointers are found: the C library's list (no stop) or, with --stop, ptrace. */
struct tp_source {
    int stop;
    int listed; /* the libc list was read */
    char list_err[TARGET_ERRLEN];
    struct target_libc_thread *list;
    size_t n;
};

static int find_tp(const struct tp_source *src, struct inspect_thread *tr)
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

static void read_thread(const struct inspect_report *r, const struct tp_source *src,
                        struct inspect_thread *tr)
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

/* A raw clone() thread runs on its creator's thread pointer: what a profiler reads there is
 * the creator's record, not one of its own. */
static void mark_shared_tps(struct inspect_report *r)
{
    for (size_t i = 0; i < r->nthreads; i++) {
        struct inspect_thread *a = &r->threads[i];
        for (size_t k = 0; a->tp_ok && k < i; k++) {
            const struct inspect_thread *b = &r->threads[k];
            if (!b->tp_ok || b->tp != a->tp)
                continue;
            a->unpublished = 1;
            snprintf(a->err, sizeof a->err,
                     "shares thread pointer 0x%" PRIx64 " with thread %d: created without "
                     "pthread_create (raw clone); the record seen there is thread %d's",
                     a->tp, (int)b->tid, (int)b->tid);
            break;
        }
    }
}

static int has_unknown_key(const struct inspect_report *r, const struct target_otel_record *o)
{
    size_t pos = 0, known = r->key_map && r->key_map->kind == TARGET_PB_ARRAY ? r->key_map->nitems : 0;
    struct target_otel_attr at;
    while (target_otel_attr_next(o, &pos, &at) == 1)
        if (at.key >= known)
            return 1;
    return 0;
}

void inspect_check_threads(struct inspect_report *r, int stop)
{
    struct inspect_check *c = &r->c[C_THREADS];
    pid_t *tids;
    char err[TARGET_ERRLEN];
    struct tp_source src = {.stop = stop};
    if (!stop)
        src.listed = target_libc_threads(r->t.pid, &r->t.maps, &r->t.mem, &src.list, &src.n,
                                         src.list_err) == 0;
    if (target_threads_list(r->t.pid, &tids, &r->nthreads, err) != 0) {
        inspect_set(c, ST_WARN, "%s", err);
        return;
    }
    r->threads = calloc(r->nthreads ? r->nthreads : 1, sizeof *r->threads);
    if (!r->threads) {
        free(tids);
        r->nthreads = 0;
        inspect_set(c, ST_WARN, "out of memory");
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
        const struct inspect_thread *tr = &r->threads[i];
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
        inspect_check_otel(r);
        r->key_map_refreshed = 1;
    }
    inspect_set(c, failed || odd || unpublished || bare ? ST_WARN : ST_PASS,
                "%zu thread(s): %zu with an apm record (%zu with an active trace), %zu with an OTel record",
                r->nthreads, with_apm, active, with_otel);
    if (unpublished)
        inspect_add(c, "; %zu created without pthread_create (raw clone), without a record of their own",
                    unpublished);
    if (bare)
        inspect_add(c, "; %zu without a record (started before proflink, or created through a "
                       "pthread_create it does not interpose, e.g. one a library found with "
                       "dlsym(RTLD_NEXT); such a thread gets one on its first API call)", bare);
    if (failed)
        inspect_add(c, "; %zu could not be read (see below)", failed);
    if (odd)
        inspect_add(c, "; %zu OTel record(s) at an odd address (OTEP 4947 requires 2-byte alignment)", odd);
    if (r->key_map_refreshed)
        inspect_add(c, "; key map re-read (a record used a key index the first read did not have)");
    inspect_add(c, stop ? "; thread pointers read by stopping each thread for a moment (--stop)"
                        : "; no thread stopped (thread pointers from %s)",
                src.listed ? "glibc's thread list" : "nowhere");
}
