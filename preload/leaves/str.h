/* str.h — the few string searches the library makes on short strings (file names, paths,
 * settings), written out rather than imported from libc: each libc name the library imports is
 * looked up at every load, served or not (raw_syscall.h); these four were used in one to five
 * places each. Same results as strrchr, strncmp against a prefix, strstr and strdup, and
 * strcasecmp against a lowercase word. */
#ifndef PROFLINK_STR_H
#define PROFLINK_STR_H

#include <stdlib.h>
#include <string.h>

/* strrchr: the last c in s, or NULL. */
static inline const char *str_last(const char *s, char c)
{
    const char *last = NULL;
    for (; *s; s++)
        if (*s == c)
            last = s;
    return last;
}

/* 1 when s begins with prefix (strncmp(s, prefix, strlen(prefix)) == 0). */
static inline int str_starts(const char *s, const char *prefix)
{
    for (; *prefix; s++, prefix++)
        if (*s != *prefix)
            return 0;
    return 1;
}

/* 1 when needle occurs in s (strstr(s, needle) != NULL). */
static inline int str_contains(const char *s, const char *needle)
{
    for (; *s; s++)
        if (str_starts(s, needle))
            return 1;
    return !*needle;
}

/* 1 when v is word, whatever the case of v's ASCII letters (word is lowercase): a setting's
 * value (strcasecmp would be one libc import more, and its locale's table a page to fault in). */
static inline int str_is_word(const char *v, const char *word)
{
    for (; *word; v++, word++)
        if ((*v >= 'A' && *v <= 'Z' ? *v - 'A' + 'a' : *v) != *word)
            return 0;
    return !*v;
}

/* strdup: a malloc'ed copy, or NULL with errno set by malloc. */
static inline char *str_dup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    return copy ? memcpy(copy, s, n) : NULL;
}

#endif
