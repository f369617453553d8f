/* process_storage.h — the apmint process storage block (docs/formats.md):
 *   u16 layout-minor-version (1) | utf8-str service-name | utf8-str service-environment |
 *   utf8-str socket-file-path         (utf8-str = u32 length + bytes, no NUL; native endian)
 * reached through the exported pointer elastic_apm_profiling_correlation_process_storage_v1,
 * which stays NULL until the whole block is written. */
#ifndef PROFLINK_PROCESS_STORAGE_H
#define PROFLINK_PROCESS_STORAGE_H

struct config;

/* Builds the block and publishes it, replacing a previous one (a fork child's copy, the block
 * before a tracer's new service name), which is never freed: a profiler may still be reading
 * it (process_storage.c).
 * 0 ok, -1 out of memory (the pointer is left as it was). */
int process_storage_publish(const struct config *cfg, const char *socket_path);
/* Sets the pointer back to NULL (the block stays allocated, for the same reason). Neither call
 * replaces a block another provider stored in the pointer (provider.h). */
void process_storage_unpublish(void);
/* The block in the pointer when another provider stored it there, else NULL. */
void *process_storage_foreign(void);

#endif
