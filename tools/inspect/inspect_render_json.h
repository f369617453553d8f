/* inspect_render_json.h — a report as one JSON object on stdout (--json), for scripts and tests.
 * Addresses are "0x…" strings; absent parts are null:
 * {
 *   "pid": 123, "comm": "sleep", "attachable": true,
 *   "checks": [{"name": "mapping", "status": "pass|fail|warn|skip", "ok": true,
 *               "detail": "…"}, …],       (in the order of inspect_checks.h; ok = status != fail)
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
 *                "own_record_possible": true (false: created by a raw clone, no record of its own),
 *                "apm": {"address": "0x…", "minor": 1, "valid": 1, "trace_present": 1,
 *                        "trace_flags": 1, "trace_id": "<32 hex>", "span_id": "<16 hex>",
 *                        "transaction_id": "<16 hex>"} | null,
 *                "otel": {"address": "0x…", "valid": 1, "trace_flags": 1,
 *                         "trace_id": "…", "span_id": "…", "attrs_size": 18,
 *                         "attributes": {"local_root_span_id": "…"}} | null}, …] | null,
 *   "otel_process_context": {"found": true, "valid": true, "mapping_name": "[anon:OTEL_CTX]",
 *              "address": "0x…", "version": 2, "payload_size": 120, "published_at_ns": 123,
 *              "key_map_refreshed": false,
 *              "resource": {"service.name": "…", …},
 *              "attributes": {"k": "v", "list": ["a", "b"], …}}
 *            | {"found": false, "error": "no OTEL_CTX mapping"}
 *            | {"found": true, "valid": false, "error": "…", …header fields read…},
 *   "http_reading": true | null, "dgram_qlen": 1000 | null,
 *   "dgram_qlen_skipped": "why it could not be read" (only then),
 *   "socket_reader": true | false | null   (proflink's intake thread receives the profiler's
 *                                           messages; null: no socket, or threads unreadable)
 * }
 * When the process cannot be inspected at all: {"pid": 123, "error": "…"}. */
#ifndef PROFLINK_INSPECT_RENDER_JSON_H
#define PROFLINK_INSPECT_RENDER_JSON_H

#include <sys/types.h>

#include "inspect_report.h"

void inspect_render_json(const struct inspect_report *r);

/* The object for a process that could not be inspected at all. */
void inspect_render_json_error(pid_t pid, const char *msg);

#endif
