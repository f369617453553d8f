/* inspect_render_text.c — see inspect_render_text.h. */
#include "inspect_render_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/target_netns.h"

static const char *const status_word[] = {"PASS", "FAIL", "WARN", "SKIP"};

static void print_value(const struct target_pb_value *v)
{
    char buf[2048];
    switch (v->kind) {
    case TARGET_PB_STRING: printf("\"%s\"", inspect_printable(v->s, v->len, buf, sizeof buf)); break;
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
            printf("%s%s=", i ? ", " : "",
                   inspect_printable(v->kvs[i].key, v->kvs[i].key_len, buf, sizeof buf));
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
        printf("      %s %s = ", title,
               inspect_printable(kvs->v[i].key, kvs->v[i].key_len, buf, sizeof buf));
        print_value(&kvs->v[i].value);
        printf("\n");
    }
}

static void print_thread(const struct inspect_report *r, const struct inspect_thread *tr)
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
            printf(" %s=\"%s\"", inspect_key_name(r, at.key, key, sizeof key),
                   inspect_printable((const char *)at.value, at.len, val, sizeof val));
        if (rc < 0)
            printf(" (malformed attributes)");
    } else if (r->t.has_otel_offset && !tr->err[0]) {
        printf(" otel NULL");
    }
    if (tr->err[0])
        printf(" error: %s", tr->err);
    printf("\n");
}

void inspect_render_text(const struct inspect_report *r)
{
    printf("proflink-inspect: pid %d (%s)\n", (int)r->t.pid, r->comm);
    for (int i = 0; i < C_COUNT; i++) {
        printf("%s  %-8s %s\n", status_word[r->c[i].st], inspect_check_name[i], r->c[i].detail);
        if (r->c[i].fix[0])
            printf("      fix: %s\n", r->c[i].fix);
        if (i == C_THREADS && r->threads_run)
            for (size_t k = 0; k < r->nthreads; k++)
                print_thread(r, &r->threads[k]);
        if (i == C_OTEL && r->otel_rc == 0) {
            print_kvs("resource", &r->otel.pc.resource);
            print_kvs("attribute", &r->otel.pc.attributes);
        }
    }
    if (r->http >= 0)
        printf("INFO  http     traceparent of HTTP/1.x and HTTP/2 requests %s (PROFLINK_HTTP)\n",
               r->http ? "read: each request's thread shows its trace" : "not read");
    if (r->tls_found == 0 && r->tls_lib.reach == TARGET_TLS_OPENSSL)
        printf("INFO  https    HTTPS read through %s\n", r->tls_lib.what);
    else if (r->tls_found == 0 && r->tls_lib.reach == TARGET_TLS_OUT_OF_REACH)
        printf("WARN  https    HTTPS out of reach: %s; its requests show no trace (plain HTTP/1.x "
               "and h2c still do; docs/http.md)\n      fix: terminate TLS in a proxy or sidecar in front "
               "that speaks plain HTTP/1.x or h2c to the service, or use a program built with OpenSSL as "
               "a shared library\n",
               r->tls_lib.what);
    if (r->reader == 1)
        printf("INFO  reader   proflink's intake thread receives the profiler's messages\n");
    else if (r->reader == 0)
        printf("INFO  reader   nothing in the process reads its profiler socket: proflink's intake "
               "and reader threads are not running (they start at a tracer's first use of the "
               "message API: a callback, proflink_end_transaction; with PROFLINK_FIFO, at the "
               "program's first pthread_create or wait for work: accept, poll, epoll_wait, "
               "select; a single-threaded program that did neither keeps them off); a profiler's "
               "messages wait in the socket until it is full, then are dropped, whatever "
               "net.unix.max_dgram_qlen is. Its samples are attributed to traces all the same; "
               "only the stack-trace ids meant for the service are lost\n"
               "      fix: if the service should get them, set PROFLINK_FIFO=PATH (JSON lines) or "
               "use a tracer that ends its transactions through proflink\n");
    if (r->qlen >= TARGET_QLEN_ADVISED || (r->qlen >= 0 && r->reader == 0))
        printf("INFO  qlen     net.unix.max_dgram_qlen %d in the target's network namespace%s\n",
               r->qlen, r->qlen < TARGET_QLEN_ADVISED ? " (low: raise it once something reads the socket)" : "");
    else if (r->qlen >= 0)
        printf("WARN  qlen     net.unix.max_dgram_qlen is %d in the target's network namespace: of "
               "a profiler's burst of samples, all but the first %d are dropped (the profiler "
               "counts them as dropped; their stack trace ids never reach the tracer)\n"
               "      fix: raise it in that namespace, e.g. nsenter -t %d -n sysctl -w "
               "net.unix.max_dgram_qlen=%d, before the service starts (a socket keeps the value "
               "it was created with); on the host the Debian package sets it "
               "(/usr/lib/sysctl.d/60-proflink.conf; else proflink-system dgram-queue); a "
               "container gets its own: docker run --sysctl net.unix.max_dgram_qlen=%d, a "
               "Kubernetes pod's securityContext.sysctls (docs/system-wide.md)\n",
               r->qlen, r->qlen + 1, (int)r->t.pid, TARGET_QLEN_ADVISED, TARGET_QLEN_ADVISED);
    else if (r->qlen_why[0])
        printf("SKIP  qlen     net.unix.max_dgram_qlen not checked: %s\n", r->qlen_why);
    for (const char *l = r->conf_ignored; *l;) {
        size_t n = strcspn(l, "\n");
        printf("WARN  config   %.*s (the library skips it without a word)\n"
               "      fix: take the line out, or set it in the service's own environment\n",
               (int)n, l);
        l += n + (l[n] == '\n');
    }
    printf("%s\n", r->attachable ? "result: attachable (the apmint profiler would attach)"
                                 : "result: NOT attachable (the apmint profiler would not attach)");
}
