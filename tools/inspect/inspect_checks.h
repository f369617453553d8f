/* inspect_checks.h — the checks a profiler makes, in its order, filling a report:
 *   1 mapping  executable, file-backed mapping matching .*\/elastic-jvmti-linux-([\w-]*)\.so
 *   2 elf      section headers; .dynsym (via hash tables) storage symbol with st_size 8;
 *              R_*_TLSDESC relocation naming the TLS symbol; load bias          (needs 1)
 *   3 tls      the static TLS offset in the descriptor                          (needs 2)
 *   4 storage  the process storage block and its string limits                  (needs 2)
 *   5 socket   the socket it names: clean path, exists, socket, writable, fits sun_path,
 *              accepts a datagram connect()                                     (needs 4)
 *   6 threads  each thread's apmint and OTel records (inspect_threads.h)        (needs 3)
 *   7 otel     the OpenTelemetry process context, absent is a warning (inspect_otel.h)
 * A check whose prerequisite failed is SKIP. The target is only read, never changed. */
#ifndef PROFLINK_INSPECT_CHECKS_H
#define PROFLINK_INSPECT_CHECKS_H

#include "inspect_report.h"

struct inspect_options {
    int threads;  /* 0: --no-threads */
    int stop;     /* --stop: thread pointers through ptrace */
    int diagnose; /* find what to fix for each failed check (the text output prints it) */
};

/* Runs every check on r->t (opened with target_open) and sets r->attachable. */
void inspect_run(struct inspect_report *r, const struct inspect_options *o);

#endif
