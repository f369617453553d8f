/* fork.c — keeps proflink right across fork() through pthread_atfork: it runs for every fork()
 * (the program's, libc's own daemon()/forkpty()...), in glibc and musl alike, and its child
 * handler runs before fork() returns in the child, which the contract requires. posix_spawn
 * and vfork run no handlers; their children exec at once and start afresh. */
#include <stdatomic.h>

#include "atfork.h"
#include "hooks.h"
#include "runtime.h"

void hooks_install_fork_handlers(void)
{
    static _Atomic int installed;
    if (atomic_exchange(&installed, 1))
        return;
    atfork_register(runtime_fork_prepare, runtime_fork_parent, runtime_fork_child);
}
