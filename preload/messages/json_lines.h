/* json_lines.h — the JSON lines written to PROFLINK_FIFO (docs/formats.md), one object per line,
 * each at most RECORD_MAX bytes including its newline (PIPE_BUF: a write of that size to a pipe
 * is atomic, so a consumer never sees half a record).
 * Every record starts with {"type":T,"pid":P,"ts_ns":N,"service":"…", where ts_ns is the Unix
 * time in nanoseconds when it was written and service the process's service name, so several
 * processes can share one FIFO:
 *   {"type":"registration",…,"samples_delay_ms":N,"host_id":"…"}
 *   {"type":"correlation",…,"trace_id":"<32 hex>","transaction_id":"<16 hex>",
 *    "stack_trace_id":"<base64url>","count":N}
 *   {"type":"transaction",…,"trace_id":"…","transaction_id":"…",
 *    "stack_trace_ids":{"<base64url>":count,…}}
 * A registration of minor 1 has no host id: "host_id":"". A host id is escaped as a JSON
 * string (invalid UTF-8 becomes U+FFFD) and cut, on a character boundary, to fit the record.
 * A transaction whose ids do not fit one record is split into several records with the same
 * type, pid, trace_id and transaction_id, each holding a part of the ids (a consumer merges
 * them by adding the counts). No state but the service name; the clock is read per record. */
#ifndef PROFLINK_RECORDS_H
#define PROFLINK_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "proflink.h"

#define RECORD_MAX 4096

/* The service name every record carries (kept by pointer: it must outlive the process image). */
void records_set_service(const char *service);

/* Formats a valid message as one line into out (RECORD_MAX bytes). Returns its length. */
size_t record_message(char *out, int pid, const proflink_message *msg);

/* Formats an ended transaction as one or more lines; emit(line, len, ctx) is called for each
 * (line holds RECORD_MAX bytes at most and is valid during the call). */
void record_transaction(int pid, const uint8_t trace_id[16], const uint8_t transaction_id[8],
                        const proflink_stack_count *ids, size_t n_ids,
                        void (*emit)(const char *line, size_t len, void *ctx), void *ctx);

#endif
