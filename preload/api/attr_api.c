/* attr_api.c — the thread-attribute half of the tracer API (include/proflink.h): edits the
 * calling thread's OTel record in place under its valid byte. After the thread's first call
 * and the key's registration, no lock, no allocation, no syscall. */
#include <string.h>

#include "context/attr_keys.h"
#include "leaves/export.h"
#include "start/fork_sequence.h"
#include "context/otel_attrs.h"
#include "proflink.h"
#include "leaves/runtime_state.h"
#include "leaves/stats.h"
#include "context/thread_records.h"
#include "leaves/utf8.h"

_Static_assert(PROFLINK_ATTR_INVALID == ATTR_KEY_INVALID && PROFLINK_ATTR_KEYS_FULL == ATTR_KEY_FULL &&
                   PROFLINK_ATTR_BUSY == ATTR_KEY_BUSY,
               "attr_keys.h results are the API's");

/* The calling thread's block when it keeps an OTel record, else NULL. */
static struct thread_block *otel_block(void)
{
    if (!runtime_active())
        return NULL;
    struct thread_block *b = thread_block_self_or_create();
    return b && b->otel_on ? b : NULL;
}

/* An edit of the attributes is a write of the record like a set or clear (thread_records.h:
 * signal safety): hidden, applied, published; applied again, on the fixed attributes, if a
 * signal handler's write came in between (it may have left ours half done). Returns apply's
 * last result. Inlined, with apply a constant at each call: as fast as the edit written out. */
static inline __attribute__((always_inline)) int
edit(struct thread_block *b, int (*apply)(struct thread_block *, const void *), const void *arg)
{
    int nested = b->write_state;
    int rc, again = 0;
    uint8_t otel_valid;
    do {
        do {
            record_hide(b, nested);
            if (__builtin_expect(again, 0))
                otel_record_rebase(b);
            otel_record_settle(b);
            rc = apply(b, arg);
            otel_valid = b->apm.trace_present || b->otel.attrs_size != 0;
            again = 1;
        } while (record_publish(b, nested, otel_valid));
    } while (record_write_end(b, nested));
    return rc;
}

struct put_arg {
    int idx;
    const char *value;
    size_t len;
};

static int apply_put(struct thread_block *b, const void *arg)
{
    const struct put_arg *p = arg;
    uint16_t size = b->otel.attrs_size;
    int rc = otel_attrs_put(b->otel.attrs, &size, OTEL_ATTRS_CAP, (uint8_t)p->idx,
                            (const uint8_t *)p->value, p->len);
    if (rc == 0) {
        b->otel.attrs_size = size;
        b->otel_custom = 1;
    }
    return rc;
}

static int apply_remove(struct thread_block *b, const void *arg)
{
    const int *idx = arg;
    uint16_t size = b->otel.attrs_size;
    if (otel_attrs_remove(b->otel.attrs, &size, (uint8_t)*idx)) {
        b->otel.attrs_size = size;
        b->otel_custom = 1;
    }
    return 0;
}

PROFLINK_EXPORT int proflink_set_attribute(const char *key, const char *value, size_t value_len)
{
    struct thread_block *b = otel_block();
    if (!b)
        return PROFLINK_ATTR_DISABLED;
    if (!key || (!value && value_len) || value_len > OTEL_ATTR_VALUE_MAX ||
        !utf8_valid(value, value_len))
        return PROFLINK_ATTR_INVALID;
    size_t klen = strlen(key);
    int idx = attr_key_find(key, klen);
    if (__builtin_expect(idx < 0, 0)) {
        /* registering republishes the process context: in a raw clone child, its own one */
        fork_sequence_check_process();
        if ((idx = attr_key_index(key, klen)) < 0)
            return idx;
    }
    if (idx == OTEL_KEY_LOCAL_ROOT)
        return PROFLINK_ATTR_INVALID; /* proflink's own: the transaction id */
    struct put_arg put = {idx, value, value_len};
    if (edit(b, apply_put, &put) != 0) {
        stat_inc(STAT_ATTRIBUTES_REFUSED);
        return PROFLINK_ATTR_NO_ROOM;
    }
    return PROFLINK_ATTR_OK;
}

PROFLINK_EXPORT int proflink_clear_attribute(const char *key)
{
    struct thread_block *b = otel_block();
    if (!b)
        return PROFLINK_ATTR_DISABLED;
    if (!key)
        return PROFLINK_ATTR_INVALID;
    int idx = attr_key_find(key, strlen(key));
    if (idx == OTEL_KEY_LOCAL_ROOT)
        return PROFLINK_ATTR_INVALID;
    if (idx < 0)
        return PROFLINK_ATTR_OK; /* never registered: no record can hold it */
    edit(b, apply_remove, &idx);
    return PROFLINK_ATTR_OK;
}
