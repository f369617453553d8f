/* resource_attrs.h — OTEL_RESOURCE_ATTRIBUTES: "key1=value1,key2=value2", keys and values
 * percent-decoded (OTel SDK environment spec). Malformed members are skipped, not fatal. */
#ifndef PROFLINK_RESOURCE_ATTRS_H
#define PROFLINK_RESOURCE_ATTRS_H

#include <stddef.h>

/* Calls fn for each well-formed member, in order, with NUL-terminated decoded strings (valid
 * only during the call). Stops early when fn returns non-zero. Returns the number of members
 * skipped as malformed. Uses a fixed buffer per member: members longer than 64 KiB are skipped. */
typedef int (*resource_attr_fn)(const char *key, const char *value, void *user);
int resource_attrs_each(const char *text, resource_attr_fn fn, void *user);

/* The same, but once per distinct key: with the value of its last member, called at the place of
 * that last member (what "a later duplicate replaces an earlier one" gives). Linear in the
 * text's length. Calls nothing when out of memory. */
int resource_attrs_each_last(const char *text, resource_attr_fn fn, void *user);

/* Copies the decoded value of `key` into out (cap bytes, NUL-terminated, cut). 1 found, 0 not. */
int resource_attrs_get(const char *text, const char *key, char *out, size_t cap);

#endif
