/* target_util.h — small helpers shared by the target_* readers: error messages and /proc files.
 *
 * Every target_* function that can fail returns 0 on success and -1 on failure, and on failure
 * leaves a one-line, human-readable reason in the caller's `char err[TARGET_ERRLEN]`. Callers
 * decide whether a failure is fatal; the readers never print and never exit. */
#ifndef TARGET_UTIL_H
#define TARGET_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TARGET_ERRLEN 256

/* printf into err (if err is not NULL); always returns -1 so callers can `return target_fail(…)`. */
int target_fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads a whole (small, /proc) file into a fresh NUL-terminated buffer; *len_out gets its length.
 * Returns NULL with errno set on failure. The caller frees. */
char *target_read_file(const char *path, size_t *len_out);

/* Lowercase hex of n bytes into out (2n+1 bytes, NUL-terminated). */
void target_hex(const uint8_t *in, size_t n, char *out);

/* Whether /proc/PID exists (1), does not (0); on other errors (-1) errno is set. */
int target_pid_exists(pid_t pid);

#endif
