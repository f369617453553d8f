/* target_json.c — see target_json.h. */
#include "target_json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void target_json_init(struct target_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    unsigned cp = c & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong, out of range, or a surrogate */
    return len;
}

void target_json_write_string(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            switch (c) {
            case '\n': fputs("\\n", f); break;
            case '\r': fputs("\\r", f); break;
            case '\t': fputs("\\t", f); break;
            default: fprintf(f, "\\u%04x", c);
            }
            i++;
        } else {
            size_t l = utf8_len(s + i, n - i);
            if (l == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(s + i, 1, l, f);
                i += l;
            }
        }
    }
    fputc('"', f);
}

/* Comma and key before a member. */
static void member(struct target_json *j, const char *key)
{
    if (j->count[j->depth]++ > 0)
        fputc(',', j->f);
    if (key) {
        target_json_write_string(j->f, key, strlen(key));
        fputc(':', j->f);
    }
}

static void open_level(struct target_json *j, const char *key, int ch)
{
    member(j, key);
    fputc(ch, j->f);
    if (j->depth + 1 < TARGET_JSON_DEPTH)
        j->depth++;
    j->count[j->depth] = 0;
}

static void close_level(struct target_json *j, int ch)
{
    fputc(ch, j->f);
    if (j->depth > 0)
        j->depth--;
    if (j->depth == 0)
        fputc('\n', j->f);
}

void target_json_object(struct target_json *j, const char *key) { open_level(j, key, '{'); }
void target_json_array(struct target_json *j, const char *key) { open_level(j, key, '['); }
void target_json_end_object(struct target_json *j) { close_level(j, '}'); }
void target_json_end_array(struct target_json *j) { close_level(j, ']'); }

void target_json_strn(struct target_json *j, const char *key, const char *s, size_t n)
{
    member(j, key);
    target_json_write_string(j->f, s, n);
}

void target_json_str(struct target_json *j, const char *key, const char *s)
{
    if (!s) {
        target_json_null(j, key);
        return;
    }
    target_json_strn(j, key, s, strlen(s));
}

void target_json_int(struct target_json *j, const char *key, int64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void target_json_uint(struct target_json *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void target_json_double(struct target_json *j, const char *key, double v)
{
    member(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.17g", v);
    else
        fputs("null", j->f); /* JSON has no NaN or infinity */
}

void target_json_bool(struct target_json *j, const char *key, int v)
{
    member(j, key);
    fputs(v ? "true" : "false", j->f);
}

void target_json_null(struct target_json *j, const char *key)
{
    member(j, key);
    fputs("null", j->f);
}

void target_json_hex(struct target_json *j, const char *key, uint64_t v)
{
    member(j, key);
    fprintf(j->f, "\"0x%" PRIx64 "\"", v);
}
