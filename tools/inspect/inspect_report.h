/* inspect_report.h — what proflink-inspect found about one process: the checks fill a report
 * (inspect_checks.h), the renderers print it as text (inspect_render_text.h) or JSON
 * (inspect_render_json.h). The report holds everything a renderer needs, so rendering reads
 * nothing more from the target. */
#ifndef PROFLINK_INSPECT_REPORT_H
#define PROFLINK_INSPECT_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/target_attach.h"
#include "common/target_tls.h"
#include "common/target_netns.h"
#include "common/target_otel.h"
#include "common/target_records.h"
#include "common/target_util.h"

enum inspect_status { ST_PASS, ST_FAIL, ST_WARN, ST_SKIP };

/* The checks, in the order they are made and printed. */
enum { C_MAPPING, C_ELF, C_TLS, C_STORAGE, C_SOCKET, C_THREADS, C_OTEL, C_COUNT };

extern const char *const inspect_check_name[C_COUNT];

/* A check's one-line detail: the longest (elf, threads) name a few paths and counts. */
#define INSPECT_DETAIL_MAX 1536

/* The "fix:" line of a failed check: one sentence naming a path or two (target_diagnose.h). */
#define INSPECT_FIX_MAX 1024

struct inspect_check {
    enum inspect_status st;
    char detail[INSPECT_DETAIL_MAX];
    char fix[INSPECT_FIX_MAX]; /* what to do about a failure; empty when not diagnosed */
};

struct inspect_thread {
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

struct inspect_report {
    struct target t;
    char comm[32];
    struct inspect_check c[C_COUNT];
    int threads_run;
    struct inspect_thread *threads;
    size_t nthreads;
    int otel_rc; /* target_otel_read: 0 found, 1 absent, -1 invalid */
    char otel_err[TARGET_ERRLEN];
    struct target_otel_ctx otel;
    const struct target_pb_value *key_map; /* threadlocal.attribute_key_map, if published */
    int http; /* PROFLINK_HTTP reading: 1 on, 0 off, -1 unknown (target_http.h) */
    int tls_found; /* 0: tls_lib looked at (target_tls.h), -1 not */
    struct target_tls tls_lib;
    int qlen; /* net.unix.max_dgram_qlen of its network namespace, -1 unknown (target_netns.h) */
    char qlen_why[TARGET_QLEN_WHY_MAX]; /* why it is unknown ("" when not looked at) */
    int reader; /* proflink's intake thread: 1 running, 0 none, -1 unknown (target_reader.h) */
    /* lines of /etc/proflink/proflink.conf (under its root) the library skips, "\n"-separated */
    char conf_ignored[2048];
    int key_map_refreshed;                 /* re-read for an index the first read lacked */
    int attachable; /* checks 1-5 pass (or only warn): the apmint profiler would attach */
};

/* Sets a check's status and detail. */
void inspect_set(struct inspect_check *c, enum inspect_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to a check's detail. */
void inspect_add(struct inspect_check *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when the check passed, perhaps with a warning: what depends on it can run. */
int inspect_usable(const struct inspect_check *c);

/* A string published by the target, made printable for a terminal: C-style escapes. */
const char *inspect_printable(const char *s, size_t n, char *buf, size_t cap);

/* The name of OTel thread attribute key index k, from the process context key map, else "#k". */
const char *inspect_key_name(const struct inspect_report *r, unsigned k, char *buf, size_t cap);

/* Frees what the checks allocated (not the report itself). */
void inspect_report_free(struct inspect_report *r);

#endif
