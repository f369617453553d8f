/* agent_send.c — see agent_send.h. */
#include "agent_send.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/target_util.h"

int agent_sender_open(struct agent_sender *s, const char *path, char *err)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    size_t len = strlen(path);
    if (len >= sizeof s->addr.sun_path)
        return target_fail(err, "socket path %s is %zu bytes, more than sun_path holds", path,
                           len);
    s->addr.sun_family = AF_UNIX;
    memcpy(s->addr.sun_path, path, len + 1);
    s->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
    s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0)
        return target_fail(err, "socket(AF_UNIX, SOCK_DGRAM): %s", strerror(errno));
    return 0;
}

void agent_sender_close(struct agent_sender *s)
{
    if (s->fd >= 0)
        close(s->fd);
    s->fd = -1;
    free(s->q);
    s->q = NULL;
    s->n = s->cap = 0;
}

static int send_one(struct agent_sender *s, const void *msg, size_t len)
{
    for (;;) {
        ssize_t r = sendto(s->fd, msg, len, MSG_DONTWAIT | MSG_NOSIGNAL,
                           (const struct sockaddr *)&s->addr, s->addr_len);
        if (r == (ssize_t)len) {
            s->sent++;
            return 1;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            s->dropped++;
        } else {
            s->failed++;
            s->last_errno = r < 0 ? errno : EMSGSIZE;
        }
        return 0;
    }
}

int agent_sender_register(struct agent_sender *s, uint32_t samples_delay_ms, const char *host_id,
                          char *err)
{
    size_t hl = host_id ? strlen(host_id) : 0;
    if (hl > 1024)
        return target_fail(err, "host id longer than 1024 bytes");
    uint8_t msg[12 + 1024];
    uint16_t type = 2, minor = 2;
    uint32_t len = (uint32_t)hl;
    memcpy(msg, &type, 2);
    memcpy(msg + 2, &minor, 2);
    memcpy(msg + 4, &samples_delay_ms, 4);
    memcpy(msg + 8, &len, 4);
    if (hl)
        memcpy(msg + 12, host_id, hl);
    unsigned long sent = s->sent;
    send_one(s, msg, 12 + hl);
    if (s->sent == sent)
        return target_fail(err, "registration not sent: %s",
                           s->dropped ? "socket queue full" : strerror(s->last_errno));
    s->sent--; /* count correlations only */
    return 0;
}

int agent_sender_queue(struct agent_sender *s, const uint8_t trace_id[16],
                       const uint8_t transaction_id[8], const uint8_t stack_trace_id[16],
                       uint16_t count, size_t tag)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        struct agent_queued *nq = realloc(s->q, cap * sizeof *nq);
        if (!nq)
            return -1;
        s->q = nq;
        s->cap = cap;
    }
    uint8_t *m = s->q[s->n].msg;
    uint16_t type = 1, minor = 1;
    memcpy(m, &type, 2);
    memcpy(m + 2, &minor, 2);
    memcpy(m + 4, trace_id, 16);
    memcpy(m + 20, transaction_id, 8);
    memcpy(m + 28, stack_trace_id, 16);
    memcpy(m + 44, &count, 2);
    s->q[s->n].tag = tag;
    s->n++;
    return 0;
}

void agent_sender_flush(struct agent_sender *s, void (*done)(void *user, size_t tag, int sent),
                        void *user)
{
    if (s->n == 0)
        return;
    s->bursts++;
    for (size_t i = 0; i < s->n; i++) {
        int ok = send_one(s, s->q[i].msg, AGENT_CORRELATION_SIZE);
        if (done)
            done(user, s->q[i].tag, ok);
    }
    s->n = 0;
}
