/* target_netns.h — what the target's network namespace allows its profiler socket. */
#ifndef TARGET_NETNS_H
#define TARGET_NETNS_H

#include <sys/types.h>

/* A profiler sends one datagram per sample in bursts of up to a few hundred; a socket queues
 * net.unix.max_dgram_qlen of them (+1) and the sender drops the rest. Below this, say so. */
#define TARGET_QLEN_ADVISED 128

/* net.unix.max_dgram_qlen of pid's network namespace (a per-namespace setting), or -1 when it
 * cannot be read (not root, no setns). Read by a short-lived child that joins the namespace:
 * /proc/sys/net shows the namespace of whoever opens it, not of the pid in the path. */
int target_dgram_qlen(pid_t pid);

#endif
