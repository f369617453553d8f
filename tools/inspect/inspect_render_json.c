/* inspect_render_json.c — see inspect_render_json.h. */
#include "inspect_render_json.h"

#include <stdio.h>
#include <string.h>

#include "common/target_json.h"

static const char *const status_json[] = {"pass", "fail", "warn", "skip"};

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

static void json_library(struct target_json *j, const struct inspect_report *r)
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
    if (inspect_usable(&r->c[C_ELF])) {
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

static void json_storage_socket(struct target_json *j, const struct inspect_report *r)
{
    const struct target_storage *st = &r->t.storage;
    if (inspect_usable(&r->c[C_STORAGE])) {
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

static void json_thread(struct target_json *j, const struct inspect_report *r,
                        const struct inspect_thread *tr)
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
            target_json_strn(j, inspect_key_name(r, at.key, key, sizeof key), (const char *)at.value,
                             at.len);
        target_json_end_object(j);
        target_json_end_object(j);
    } else {
        target_json_null(j, "otel");
    }
    target_json_end_object(j);
}

static void json_otel(struct target_json *j, const struct inspect_report *r)
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

void inspect_render_json(const struct inspect_report *r)
{
    struct target_json j;
    target_json_init(&j, stdout);
    target_json_object(&j, NULL);
    target_json_int(&j, "pid", r->t.pid);
    target_json_str(&j, "comm", r->comm);
    target_json_bool(&j, "attachable", r->attachable);
    target_json_array(&j, "checks");
    for (int i = 0; i < C_COUNT; i++) {
        target_json_object(&j, NULL);
        target_json_str(&j, "name", inspect_check_name[i]);
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
    if (r->tls_found == 0) {
        static const char *const reach[] = {"none", "openssl", "out_of_reach"};
        target_json_str(&j, "https_reach", reach[r->tls_lib.reach]);
        target_json_str(&j, "https_library", r->tls_lib.what);
    } else {
        target_json_null(&j, "https_reach");
    }
    if (r->qlen >= 0)
        target_json_int(&j, "dgram_qlen", r->qlen);
    else
        target_json_null(&j, "dgram_qlen");
    if (r->qlen < 0 && r->qlen_why[0])
        target_json_str(&j, "dgram_qlen_skipped", r->qlen_why);
    target_json_array(&j, "config_ignored");
    for (const char *l = r->conf_ignored; *l;) {
        size_t n = strcspn(l, "\n");
        char line[sizeof r->conf_ignored];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        target_json_str(&j, NULL, line);
        l += n + (l[n] == '\n');
    }
    target_json_end_array(&j);
    if (r->reader >= 0)
        target_json_bool(&j, "socket_reader", r->reader);
    else
        target_json_null(&j, "socket_reader");
    target_json_end_object(&j);
}

void inspect_render_json_error(pid_t pid, const char *msg)
{
    struct target_json j;
    target_json_init(&j, stdout);
    target_json_object(&j, NULL);
    target_json_int(&j, "pid", pid);
    target_json_str(&j, "error", msg);
    target_json_end_object(&j);
}
