/* target_selection.h — whether proflink is off in a process on purpose: disabled (…_ENABLED=
 * false), not selected by PROFLINK_INCLUDE / PROFLINK_EXCLUDE (the process's environment, else
 * /etc/proflink/proflink.conf under its root: the environment wins, as in the library), or a
 * setuid/setgid program, where it never activates. Such a process is excluded, not failing:
 * proflink-inspect --all lists it as such (target_diagnose.h names it as the cause too). The globs are matched here exactly as the library
 * matches them (fnmatch(3) without flags, on the executable's path). */
#ifndef TARGET_SELECTION_H
#define TARGET_SELECTION_H

#include <stddef.h>
#include <sys/types.h>

/* 1 when pid is excluded on purpose, with the reason and what to change in why; 0 otherwise. */
int target_excluded(pid_t pid, char *why, size_t cap);

/* The lines of /etc/proflink/proflink.conf under pid's root that the library skips (not
 * KEY=VALUE, or a key that cannot be set there), one "FILE:LINE: why" per line into out (""
 * when none, or no usable file): the library skips them without a word on the program's stderr,
 * so the tools say it. Returns how many. */
int target_conf_ignored(pid_t pid, char *out, size_t cap);

#endif
