/* attr_api.c — the thread-attribute half of the tracer API (include/proflink.h): edits the
 * calling thread's OTel record in place under its valid byte. After the thread's first call
 * and the key's registration, no lock, no allocation, no syscall. */
#include <string.h>

#include "attr_keys.h"
#include "export.h"
#include "otel_attrs.h"
#include "proflink.h"
#include "runtime_state.h"
#include "stats.h"
#include "thread_records.h"
#include "utf8.h"

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

/* Starts an edit: hides the record. A clear on the fast path left the last transaction's
 * entry and ids behind (hidden); an attribute must not bring them back. */
static void edit_begin(struct thread_block *b)
{
    b->otel.valid = 0;
    RECORD_ORDER();
    if (!b->apm.trace_present && (b->otel_has_txn || b->otel.trace_id[0] || b->otel.span_id[0]))
        otel_record_untraced(b);
}

static void edit_end(struct thread_block *b)
{
    RECORD_ORDER();
    b->otel.valid = b->apm.trace_present || b->otel.attrs_size != 0;
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
    if (__builtin_expect(idx < 0, 0) && (idx = attr_key_index(key, klen)) < 0)
        return idx;
    if (idx == OTEL_KEY_LOCAL_ROOT)
        return PROFLINK_ATTR_INVALID; /* proflink's own: the transaction id */
    edit_begin(b);
    uint16_t size = b->otel.attrs_size;
    int rc = otel_attrs_put(b->otel.attrs, &size, OTEL_ATTRS_CAP, (uint8_t)idx,
                            (const uint8_t *)value, value_len);
    if (rc == 0) {
        b->otel.attrs_size = size;
        b->otel_custom = 1;
    }
    edit_end(b);
    if (rc != 0) {
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
    edit_begin(b);
    uint16_t size = b->otel.attrs_size;
    if (otel_attrs_remove(b->otel.attrs, &size, (uint8_t)idx)) {
        b->otel.attrs_size = size;
        b->otel_custom = 1;
    }
    edit_end(b);
    return PROFLINK_ATTR_OK;
}
