/* target_netns.h — what the target's network namespace allows its profiler socket. */
#ifndef TARGET_NETNS_H
#define TARGET_NETNS_H

#include <stddef.h>
#include <sys/types.h>

/* A profiler sends one datagram per sample in bursts of up to a few hundred; a socket queues
 * net.unix.max_dgram_qlen of them (+1) and the sender drops the rest. Below this, say so: the
 * value the Debian package sets (packaging/deb/sysctl.conf), with which the real profiler's
 * datagrams were all received (tests/e2e), where 10 lost 6-43% of them. */
#define TARGET_QLEN_ADVISED 512

/* The reason a value could not be read: one sentence. */
#define TARGET_QLEN_WHY_MAX 256

/* net.unix.max_dgram_qlen of pid's network namespace (a per-namespace setting), or -1 when it
 * cannot be read, with the reason in why ("joining its network namespace needs root"…).
 * /proc/sys/net shows the namespace of whoever opens it, not of the pid in the path: in our own
 * namespace it is read directly (no privilege needed), in another one by a short-lived child
 * that joins it (setns: root). */
int target_dgram_qlen(pid_t pid, char *why, size_t cap);

#endif
