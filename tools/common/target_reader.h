/* target_reader.h — whether anything in a target reads its profiler socket. proflink's intake
 * thread receives the datagrams and its reader thread delivers them; both start only when
 * something will consume what arrives: PROFLINK_FIFO, or a tracer's first message-side call (a
 * callback, proflink_end_transaction, the pull descriptor). A service without a tracer or FIFO
 * (PROFLINK_HTTP=1 alone) has neither: the kernel queues the first net.unix.max_dgram_qlen + 1
 * datagrams and refuses the rest, and no sysctl changes that. The threads are found by the
 * names proflink gives them (PR_SET_NAME in preload/messages/receiver.c and
 * preload/delivery/deliverer.c). */
#ifndef TARGET_READER_H
#define TARGET_READER_H

#include <sys/types.h>

#define TARGET_INTAKE_THREAD "proflink-intake"

/* 1 when pid has proflink's intake thread, 0 when it has none, -1 when its threads cannot be
 * listed. */
int target_socket_reader(pid_t pid);

#endif
