/* inspect_checks.c — see inspect_checks.h. */
#include "inspect_checks.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/target_selection.h"
#include "common/target_diagnose.h"
#include "inspect_otel.h"
#include "inspect_threads.h"
#include "common/target_copies.h"
#include "common/target_http.h"
#include "common/target_netns.h"
#include "common/target_reader.h"
#include "common/target_threads.h"

static void skip(struct inspect_report *r, int which, int because)
{
    inspect_set(&r->c[which], ST_SKIP, "needs the %s check", inspect_check_name[because]);
}

static const char *signed_hex(int64_t v, char *buf, size_t cap)
{
    if (v < 0)
        snprintf(buf, cap, "-0x%" PRIx64, (uint64_t)0 - (uint64_t)v);
    else
        snprintf(buf, cap, "0x%" PRIx64, (uint64_t)v);
    return buf;
}

static void check_mapping(struct inspect_report *r)
{
    char err[TARGET_ERRLEN];
    if (target_find_library(&r->t, err) != 0) {
        inspect_set(&r->c[C_MAPPING], ST_FAIL, "%s", err);
        return;
    }
    const struct target_mapping *m = r->t.lib;
    inspect_set(&r->c[C_MAPPING], ST_PASS, "%s (%" PRIx64 "-%" PRIx64 " %s offset 0x%" PRIx64 ")",
                r->t.lib_path, m->start, m->end, m->perms, m->offset);
    if (r->t.lib_files > 1) {
        inspect_add(&r->c[C_MAPPING], "; %zu matching libraries are mapped, the profiler tries each",
                    r->t.lib_files);
        char other[1200];
        if (target_copies_fix(&r->t, r->c[C_MAPPING].fix, sizeof r->c[C_MAPPING].fix))
            r->c[C_MAPPING].st = ST_WARN;
        else if (target_copies_other_provider(&r->t, other, sizeof other))
            inspect_add(&r->c[C_MAPPING], "; %s", other);
    }
}

static void check_elf(struct inspect_report *r)
{
    struct inspect_check *c = &r->c[C_ELF];
    char err[TARGET_ERRLEN];
    if (target_read_elf(&r->t, err) != 0) {
        inspect_set(c, ST_FAIL, "%s", err);
        return;
    }
    const struct target *t = &r->t;
    inspect_set(c, ST_PASS,
                "%s: %s st_value=0x%" PRIx64 " st_size=8 (via %s); R_%s_TLSDESC for %s at r_offset=0x%" PRIx64
                " in %s; load bias 0x%" PRIx64,
                target_elf_machine_name(&t->elf), TARGET_STORAGE_SYMBOL, t->storage_sym.value,
                t->storage_sym.via, t->elf.eh->e_machine == EM_AARCH64 ? "AARCH64" : "X86_64",
                TARGET_TLS_SYMBOL, t->tls_reloc.r_offset, t->tls_reloc.section, t->load_bias);
    if (t->has_otel_reloc)
        inspect_add(c, "; %s TLSDESC at r_offset=0x%" PRIx64, TARGET_OTEL_TLS_SYMBOL,
                    t->otel_reloc.r_offset);
    else
        inspect_add(c, "; no %s TLSDESC (OTel thread context not published)", TARGET_OTEL_TLS_SYMBOL);
    if (t->load_bias_first != t->load_bias) {
        c->st = ST_WARN;
        inspect_add(c, "; warning: the lowest mapping of the file implies bias 0x%" PRIx64
                       " (unusual segment layout)",
                    t->load_bias_first);
    }
}

static void check_tls(struct inspect_report *r)
{
    struct inspect_check *c = &r->c[C_TLS];
    char err[TARGET_ERRLEN], h[32];
    if (target_read_tls_offset(&r->t, err) != 0) {
        inspect_set(c, ST_FAIL, "%s", err);
        return;
    }
    inspect_set(c, ST_PASS,
                "static TLS offset %s (%" PRId64 ") from the thread pointer (descriptor at 0x%" PRIx64 ")",
                signed_hex(r->t.tls_offset, h, sizeof h), r->t.tls_offset, r->t.tls_desc_addr);
    if (r->t.has_otel_offset)
        inspect_add(c, "; %s offset %s", TARGET_OTEL_TLS_SYMBOL,
                    signed_hex(r->t.otel_tls_offset, h, sizeof h));
    else if (r->t.has_otel_reloc)
        inspect_add(c, "; %s: %s", TARGET_OTEL_TLS_SYMBOL, r->t.otel_offset_err);
}

static void check_storage(struct inspect_report *r)
{
    struct inspect_check *c = &r->c[C_STORAGE];
    char err[TARGET_ERRLEN], a[600], b[600], s[1100];
    if (target_read_storage(&r->t, err) != 0) {
        inspect_set(c, ST_FAIL, "%s", err);
        return;
    }
    const struct target_storage *st = &r->t.storage;
    inspect_set(c, ST_PASS,
                "at 0x%" PRIx64 ": minor %u, service-name \"%s\", environment \"%s\", socket \"%s\"",
                st->addr, st->minor,
                inspect_printable(st->service_name.s, st->service_name.len, a, sizeof a),
                inspect_printable(st->service_environment.s, st->service_environment.len, b, sizeof b),
                inspect_printable(st->socket_path.s, st->socket_path.len, s, sizeof s));
    if (st->minor != 1) {
        c->st = ST_WARN; /* the profiler skips the field, so it still attaches */
        inspect_add(c, "; warning: layout-minor-version should be 1");
    }
    if (st->service_name.len == 0)
        inspect_add(c, "; note: empty service name");
    if (st->service_name.len >= 128)
        inspect_add(c, "; note: service-name is 128 bytes, the limit: it was probably cut");
    if (st->service_environment.len >= 128)
        inspect_add(c, "; note: environment is 128 bytes, the limit: it was probably cut");
}

static void check_socket(struct inspect_report *r)
{
    struct inspect_check *c = &r->c[C_SOCKET];
    char err[TARGET_ERRLEN];
    if (target_check_socket(&r->t, err) != 0) {
        inspect_set(c, ST_FAIL, "%s", err);
        return;
    }
    const struct target_socket *s = &r->t.sock;
    inspect_set(c, ST_PASS,
                "%s (%zu bytes, sun_path holds %d): socket mode %04o owner %u:%u, writable (%s) by "
                "target euid %u egid %u; datagram connect ok",
                s->proc_path, s->proc_path_len, TARGET_SUN_PATH_USABLE, (unsigned)(s->mode & 07777),
                (unsigned)s->uid, (unsigned)s->gid, s->access, (unsigned)s->target_euid,
                (unsigned)s->target_egid);
    const struct target_str *raw = &r->t.storage.socket_path;
    if (strlen(s->cleaned) != raw->len || memcmp(s->cleaned, raw->s, raw->len) != 0)
        inspect_add(c, "; path cleaned to %s as the profiler does", s->cleaned);
}

void inspect_run(struct inspect_report *r, const struct inspect_options *o)
{
    target_thread_comm(r->t.pid, r->t.pid, r->comm, sizeof r->comm);
    target_conf_ignored(r->t.pid, r->conf_ignored, sizeof r->conf_ignored);
    check_mapping(r);
    if (r->c[C_MAPPING].st == ST_FAIL)
        skip(r, C_ELF, C_MAPPING);
    else
        check_elf(r);
    int elf_ok = inspect_usable(&r->c[C_ELF]);
    r->http = elf_ok ? target_http_reading(&r->t) : -1;
    r->tls_found = r->http == 1 ? target_tls_find(r->t.pid, &r->tls_lib) : -1;
    r->qlen = r->c[C_MAPPING].st == ST_PASS
                  ? target_dgram_qlen(r->t.pid, r->qlen_why, sizeof r->qlen_why)
                  : -1;
    if (elf_ok) {
        check_tls(r);
        check_storage(r);
    } else {
        skip(r, C_TLS, C_ELF);
        skip(r, C_STORAGE, C_ELF);
    }
    if (inspect_usable(&r->c[C_STORAGE]))
        check_socket(r);
    else
        skip(r, C_SOCKET, C_STORAGE);
    r->reader = inspect_usable(&r->c[C_SOCKET]) ? target_socket_reader(r->t.pid) : -1;
    /* The process context first: its key map names the OTel thread attributes. */
    inspect_check_otel(r);
    if (!o->threads)
        inspect_set(&r->c[C_THREADS], ST_SKIP, "disabled by --no-threads");
    else if (r->c[C_TLS].st != ST_PASS)
        skip(r, C_THREADS, C_TLS);
    else
        inspect_check_threads(r, o->stop);

    r->attachable = 1;
    for (int i = C_MAPPING; i <= C_SOCKET; i++)
        r->attachable &= inspect_usable(&r->c[i]);
    for (int i = 0; o->diagnose && i < C_COUNT; i++)
        if (r->c[i].st == ST_FAIL)
            target_fix(r->t.pid, inspect_check_name[i], r->c[i].fix, sizeof r->c[i].fix);
}
