/* messages.c — see messages.h. Fields are copied with memcpy: datagram buffers carry no
 * alignment promise and the layout is packed. */
#include "messages.h"

#include <string.h>

static uint16_t get_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static enum msg_verdict parse_correlation(const uint8_t *buf, size_t len, proflink_message *out)
{
    if (len < MSG_CORRELATION_SIZE)
        return MSG_TRUNCATED;
    const uint8_t *p = buf + MSG_HEADER_SIZE;
    memcpy(out->u.correlation.trace_id, p, 16);
    memcpy(out->u.correlation.transaction_id, p + 16, 8);
    memcpy(out->u.correlation.stack_trace_id, p + 24, 16);
    out->u.correlation.count = get_u16(p + 40);
    return MSG_VALID;
}

static enum msg_verdict parse_registration(const uint8_t *buf, size_t len, uint16_t minor,
                                           proflink_message *out)
{
    if (len < MSG_REGISTRATION_V1_SIZE)
        return MSG_TRUNCATED;
    out->u.registration.samples_delay_ms = get_u32(buf + MSG_HEADER_SIZE);
    out->u.registration.host_id = NULL;
    out->u.registration.host_id_len = 0;
    if (minor == 1)
        return MSG_VALID;
    if (len < MSG_REGISTRATION_V2_MIN)
        return MSG_TRUNCATED;
    uint32_t n = get_u32(buf + MSG_REGISTRATION_V1_SIZE);
    if (n > len - MSG_REGISTRATION_V2_MIN) /* the string must fit in the datagram */
        return MSG_TRUNCATED;
    out->u.registration.host_id = (const char *)buf + MSG_REGISTRATION_V2_MIN;
    out->u.registration.host_id_len = n;
    return MSG_VALID;
}

enum msg_verdict message_parse(const uint8_t *buf, size_t len, proflink_message *out)
{
    if (len < MSG_HEADER_SIZE)
        return MSG_TRUNCATED;
    uint16_t type = get_u16(buf), minor = get_u16(buf + 2);
    if ((type != PROFLINK_MSG_CORRELATION && type != PROFLINK_MSG_REGISTRATION) || minor == 0)
        return MSG_UNKNOWN;
    memset(out, 0, sizeof *out);
    out->type = type;
    out->minor = minor;
    if (type == PROFLINK_MSG_CORRELATION)
        return parse_correlation(buf, len, out);
    return parse_registration(buf, len, minor, out);
}
