/* inspect_report.c — see inspect_report.h. */
#include "inspect_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const inspect_check_name[C_COUNT] = {"mapping", "elf",     "tls", "storage",
                                                 "socket",  "threads", "otel"};

void inspect_set(struct inspect_check *c, enum inspect_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    c->st = st;
    vsnprintf(c->detail, sizeof c->detail, fmt, ap);
    va_end(ap);
}

void inspect_add(struct inspect_check *c, const char *fmt, ...)
{
    size_t n = strlen(c->detail);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->detail + n, sizeof c->detail - n, fmt, ap);
    va_end(ap);
}

int inspect_usable(const struct inspect_check *c)
{
    return c->st == ST_PASS || c->st == ST_WARN;
}

const char *inspect_printable(const char *s, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            o += (size_t)snprintf(buf + o, cap - o, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
        else
            buf[o++] = (char)ch;
    }
    buf[o] = '\0';
    return buf;
}

const char *inspect_key_name(const struct inspect_report *r, unsigned k, char *buf, size_t cap)
{
    if (r->key_map && r->key_map->kind == TARGET_PB_ARRAY && k < r->key_map->nitems &&
        r->key_map->items[k].kind == TARGET_PB_STRING)
        return r->key_map->items[k].s;
    snprintf(buf, cap, "#%u", k);
    return buf;
}

void inspect_report_free(struct inspect_report *r)
{
    free(r->threads);
    r->threads = NULL;
    target_otel_free(&r->otel);
    target_close(&r->t);
}
