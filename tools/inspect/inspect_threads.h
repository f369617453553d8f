/* inspect_threads.h — check 6: each thread's apmint and OTel records, read through its thread
 * pointer and the static TLS offsets found by the tls check. Thread pointers come from glibc's
 * thread list in the target's memory (no thread is stopped) or, with stop, from ptrace. */
#ifndef PROFLINK_INSPECT_THREADS_H
#define PROFLINK_INSPECT_THREADS_H

#include "inspect_report.h"

/* Fills r->threads and the threads check. Needs the tls check passed and the OTel check run
 * (its key map names the attributes; it is re-read when a record uses a key it lacks). */
void inspect_check_threads(struct inspect_report *r, int stop);

#endif
