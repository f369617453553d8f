/* target_pids.h — which processes a tool looks at: the PIDs on its command line, every process
 * named NAME (--pidof NAME, as pidof(8) matches: the command name, argv[0]'s file name or the
 * executable's file name) and, with --children, every descendant of those (the workers of a
 * pre-fork server: nginx, gunicorn, php-fpm). A multi-process service is looked at whole, since
 * which worker serves a request is not known in advance. */
#ifndef TARGET_PIDS_H
#define TARGET_PIDS_H

#include <stddef.h>
#include <sys/types.h>

/* More processes than one look can use: the profiler itself has 128 process slots. */
#define TARGET_PIDS_MAX 1024
/* --pidof may be repeated; a service is a handful of programs, not more. */
#define TARGET_NAMES_MAX 16

struct target_pids {
    pid_t v[TARGET_PIDS_MAX]; /* ascending, no duplicates */
    size_t n;
};

/* Adds a PID given as text. 0, or -1 with err ("not a process id: …"). */
int target_pids_add_arg(struct target_pids *p, const char *arg, char *err);

/* Adds every process named name (never the calling process). Returns how many matched. */
size_t target_pids_add_name(struct target_pids *p, const char *name);

/* Adds every descendant of the processes already listed. Returns how many were added. */
size_t target_pids_add_children(struct target_pids *p);

#endif
