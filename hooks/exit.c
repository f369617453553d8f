/* exit.c — _exit and _Exit remove the process's socket file, as exit() does through the
 * destructor (runtime.c). Programs that end with _exit (dash, every fork child that is done, a
 * daemon's worker) would otherwise leave one file per run in the socket directory. exit()
 * itself reaches libc's _exit without passing here (an internal call), so nothing runs twice.
 * A process that ends with a raw exit_group system call (Go's os.Exit) is not seen: its file
 * is left for the sweep of dead processes' files (socket_cleanup.c). */
#ifndef PROFLINK_STATIC
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "leaves/export.h"
#include "leaves/raw_syscall.h"
#include "next_symbol.h"
#include "start/runtime.h"

typedef void (*exit_fn)(int);
NEXT_SYMBOL(exit_fn, _exit)
NEXT_SYMBOL(exit_fn, _Exit)

/* libc's function could not be found (it always can): end the process the way it would. */
__attribute__((noreturn)) static void exit_group_now(int status)
{
    for (;;)
        raw_syscall6(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

__attribute__((noreturn)) static void leave(exit_fn f, int status)
{
    runtime_remove_socket();
    if (f)
        f(status);
    exit_group_now(status);
}

PROFLINK_EXPORT void _exit(int status) { leave(next__exit(), status); }

PROFLINK_EXPORT void _Exit(int status) { leave(next__Exit(), status); }
#endif
