/* fd_closing.h — what proflink does before the program closes descriptors, or duplicates onto
 * them (close, close_range, closefrom, dup2, dup3, and those system calls through syscall()):
 * once the call returns, another thread may get the numbers for other files, so HTTP reading
 * stops following the connections on those numbers: their open requests end (for the calling
 * thread at once, for the others at their next hooked call). (proflink's own descriptors need no hook: each use checks identity first,
 * fd_identity.h.) Preload builds only. */
#ifndef PROFLINK_FD_CLOSING_H
#define PROFLINK_FD_CLOSING_H

#include <errno.h>

#include "http/http_conn.h"
#include "http/http_thread.h"

static inline void fd_closing(unsigned lo, unsigned hi)
{
    if (__builtin_expect(atomic_load_explicit(&http_conn_live, memory_order_relaxed) == 0, 1))
        return;
    int saved = errno;
    if (lo == hi) {
        struct http_conn *c = http_conn_find((int)lo);
        if (c)
            http_conn_close(c);
    } else {
        http_conn_close_range(lo, hi);
    }
    http_thread_sync(); /* the requests of those connections end now for this thread */
    errno = saved;
}

#endif
