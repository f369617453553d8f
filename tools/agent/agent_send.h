/* agent_send.h — the profiler's side of the apmint socket: datagrams sent with
 * sendto(MSG_DONTWAIT) on an unconnected SOCK_DGRAM socket to /proc/PID/root/<socket path>.
 *
 *   correlation (type 1, minor 1, 46 bytes): u16 type | u16 minor | trace-id[16] |
 *                transaction-id[8] | stack-trace-id[16] | u16 count
 *   registration (type 2, minor 2): u16 type | u16 minor | u32 samples-delay-ms |
 *                u32 host-id length | host-id bytes
 * All integers native endian. Correlations are queued (one per sample, count 1) and sent in a
 * burst by agent_sender_flush, like the profiler's reporting interval; a datagram the socket
 * cannot take at once (EAGAIN) is dropped and counted, never retried. */
#ifndef AGENT_SEND_H
#define AGENT_SEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define AGENT_CORRELATION_SIZE 46

struct agent_sender {
    int fd;
    struct sockaddr_un addr;
    socklen_t addr_len;
    struct agent_queued {
        uint8_t msg[AGENT_CORRELATION_SIZE];
        size_t tag; /* the caller's, handed back by flush */
    } *q;
    size_t n, cap;
    unsigned long sent, dropped, failed, bursts;
    int last_errno; /* of the last failure other than EAGAIN */
};

/* path: the full destination (/proc/PID/root/…), at most 107 bytes. */
int agent_sender_open(struct agent_sender *s, const char *path, char *err);
void agent_sender_close(struct agent_sender *s);

/* Sends a registration at once. 0, or -1 with err. */
int agent_sender_register(struct agent_sender *s, uint32_t samples_delay_ms, const char *host_id,
                          char *err);

int agent_sender_queue(struct agent_sender *s, const uint8_t trace_id[16],
                       const uint8_t transaction_id[8], const uint8_t stack_trace_id[16],
                       uint16_t count, size_t tag);

/* Sends everything queued; done(user, tag, sent) is called for each message (sent = 1 when the
 * kernel took it). */
void agent_sender_flush(struct agent_sender *s, void (*done)(void *user, size_t tag, int sent),
                        void *user);

#endif
