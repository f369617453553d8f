/* agent_by.h — proflink-agent --by ATTR: samples grouped by the value of one OTel thread
 * attribute (OTEP 4947), e.g. http.route. The attribute is named in the process context's
 * threadlocal.attribute_key_map; a record using an index the map lacks makes the caller read
 * the map again (keys are only ever appended), so a key registered while sampling is found. */
#ifndef AGENT_BY_H
#define AGENT_BY_H

#include <stddef.h>

#include "common/target_json.h"
#include "common/target_pb.h"
#include "common/target_records.h"

struct agent_by_group {
    char *value; /* len bytes plus a NUL */
    size_t len;
    unsigned long samples;
};

struct agent_by {
    const char *name; /* NULL: no grouping */
    int key;          /* its index in the key map, -1 while the map does not have it */
    size_t known;     /* entries of the key map last read */
    unsigned long refreshes, without; /* map re-reads; samples without the attribute */
    struct agent_by_group *groups;
    size_t n, cap;
};

void agent_by_init(struct agent_by *b, const char *name);
void agent_by_free(struct agent_by *b);
/* Takes the key map (the threadlocal.attribute_key_map value, NULL if none). */
void agent_by_set_map(struct agent_by *b, const struct target_pb_value *key_map);
/* 1 when r uses a key index past the map last read: read it again, then call set_map. */
int agent_by_needs_refresh(const struct agent_by *b, const struct target_otel_record *r);
/* Counts one sample: r is the thread's valid record, or NULL (no record, or hidden). */
void agent_by_count(struct agent_by *b, const struct target_otel_record *r);
void agent_by_print_text(const struct agent_by *b);
/* "by": {"attribute": NAME, "key_map_refreshes": N, "without": N, "groups": {value: samples}} */
void agent_by_json(const struct agent_by *b, struct target_json *j);

#endif
