/* children.h — the wait family's cleanup of fork children's socket files (children.c), for the
 * one other entry point that reaps: syscall(). */
#ifndef PROFLINK_CHILDREN_H
#define PROFLINK_CHILDREN_H

/* syscall(SYS_wait4, ...) or syscall(SYS_waitid, ...) made through call (libc's syscall) with
 * the six arguments a: its result and errno, the reaped child's file removed as the wait hooks
 * do. */
long children_wait_syscall(long (*call)(long, long, long, long, long, long, long), long nr,
                           const long a[6]);

#endif
