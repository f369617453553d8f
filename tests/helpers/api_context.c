/* api_context — a "tracer" using the one-buffer context calls (proflink_set_context,
 * proflink_swap_context) found with dlsym, so it also runs without proflink. It steps through
 * nested scopes, one step per line read on stdin, and prints what each call returned, so that a
 * test can read the thread records from outside between steps:
 *   ready pid=P api=0|1
 *   step outer rc=R prev=<trace>/<span>/<txn>/<flags>   swap(A): A active, nothing before
 *   step inner rc=R prev=…                               swap(B, B's txn all-zero): B active
 *   step restored                                        set(&prev of inner): A again
 *   step cleared                                         set(&prev of outer): none
 *   step null rc=R prev=…                                set(A), then swap(NULL, &p): none
 *   thread ctx=<trace or ->                               a new thread's first context
 *   bye
 * A = 0af7651916cd43dd8448eb211c80319c / b7ad6b7169203331 / 1111111111111111 / 01
 * B = 22222222222222222222222222222222 / 3333333333333333 / (zero: the span) / 00 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proflink.h"

typedef void (*set_fn)(const proflink_context *);
typedef int (*swap_fn)(const proflink_context *, proflink_context *);
typedef int (*get_fn)(uint8_t *, uint8_t *, uint8_t *, uint8_t *);

static set_fn set;
static swap_fn swap;
static get_fn get;

static void hex(const uint8_t *b, size_t n, char *o)
{
    for (size_t i = 0; i < n; i++)
        sprintf(o + 2 * i, "%02x", b[i]);
}

static void unhex(const char *s, uint8_t *b)
{
    for (size_t i = 0; s[2 * i]; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        b[i] = (uint8_t)v;
    }
}

static void print_step(const char *name, int rc, const proflink_context *p)
{
    char t[33], s[17], x[17];
    hex(p->trace_id, 16, t);
    hex(p->span_id, 8, s);
    hex(p->transaction_id, 8, x);
    int reserved_zero = 1;
    for (size_t i = 0; i < sizeof p->reserved; i++)
        reserved_zero &= p->reserved[i] == 0;
    printf("step %s rc=%d prev=%s/%s/%s/%02x reserved_zero=%d\n", name, rc, t, s, x,
           p->trace_flags, reserved_zero);
    fflush(stdout);
}

static void wait_line(void)
{
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        _exit(0);
}

static void *thread_main(void *arg)
{
    (void)arg;
    uint8_t t[16];
    int rc = get ? get(t, NULL, NULL, NULL) : -2;
    char h[33] = "-";
    if (rc == 1)
        hex(t, 16, h);
    printf("thread ctx=%s rc=%d\n", h, rc);
    fflush(stdout);
    return NULL;
}

int main(void)
{
    set = (set_fn)dlsym(RTLD_DEFAULT, "proflink_set_context");
    swap = (swap_fn)dlsym(RTLD_DEFAULT, "proflink_swap_context");
    get = (get_fn)dlsym(RTLD_DEFAULT, "proflink_get_trace");
    printf("ready pid=%d api=%d\n", (int)getpid(), set && swap);
    fflush(stdout);
    if (!set || !swap)
        return 0;
    proflink_context a, b, prev_outer, prev_inner, p;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&prev_outer, 0x5a, sizeof prev_outer); /* must be overwritten with zeros */
    unhex("0af7651916cd43dd8448eb211c80319c", a.trace_id);
    unhex("b7ad6b7169203331", a.span_id);
    unhex("1111111111111111", a.transaction_id);
    a.trace_flags = 1;
    unhex("22222222222222222222222222222222", b.trace_id);
    unhex("3333333333333333", b.span_id);

    wait_line();
    int rc = swap(&a, &prev_outer);
    print_step("outer", rc, &prev_outer);
    wait_line();
    rc = swap(&b, &prev_inner);
    print_step("inner", rc, &prev_inner);
    wait_line();
    set(&prev_inner);
    printf("step restored\n");
    fflush(stdout);
    wait_line();
    set(&prev_outer);
    printf("step cleared\n");
    fflush(stdout);
    wait_line();
    set(&a);
    rc = swap(NULL, &p);
    print_step("null", rc, &p);
    wait_line();
    set(&a); /* the creator is inside a trace when the thread starts */
    pthread_t th;
    pthread_create(&th, NULL, thread_main, NULL);
    pthread_join(th, NULL);
    wait_line();
    printf("bye\n");
    return 0;
}
