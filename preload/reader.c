/* reader.c — placeholder until the reader thread lands: no message intake. */
#include <unistd.h>

#include "reader.h"

int reader_start(int sock_fd)
{
    (void)sock_fd;
    return 0;
}
void reader_fork_prepare(void) {}
void reader_fork_parent(void) {}
void reader_fork_child(void) {}
