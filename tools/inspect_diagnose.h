/* inspect_diagnose.h — for a failed proflink-inspect check, the one line that says what to fix,
 * found by looking at the target from outside (its maps, environment and auxiliary vector, the
 * system configuration file under its root). */
#ifndef PROFLINK_INSPECT_DIAGNOSE_H
#define PROFLINK_INSPECT_DIAGNOSE_H

#include <stddef.h>
#include <sys/types.h>

/* Writes into fix (cap bytes) what to do about the failed check named check ("mapping",
 * "storage", "socket", ...). Never fails: without a specific cause it names the general one. */
void inspect_fix(pid_t pid, const char *check, char *fix, size_t cap);

#endif
