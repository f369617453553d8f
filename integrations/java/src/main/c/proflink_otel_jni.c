/* proflink_otel_jni.c — the JNI shim of the OpenTelemetry Java agent extension: the proflink
 * calls the extension makes (proflink.otel.Native), found in the preloaded library with
 * dlsym(RTLD_DEFAULT) and never linked, and the carrier-thread bookkeeping of virtual threads.
 *
 * Nothing here allocates on a context switch: the 40-byte proflink_context is copied from the
 * Java byte[] into the stack. Without proflink in the process init() answers 0 and the extension
 * stays out of the way; no other entry point is then called.
 *
 * Virtual threads are not followed: a virtual thread runs on a carrier (an OS thread) whose
 * record the profiler reads, and the JVMTI mount/unmount extension events that would move the
 * context with it are never posted to an environment made this late (GetEnv after the VM
 * started, can_support_virtual_threads added in the live phase: no event at all on Java 25). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <jni.h>
#include <link.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "proflink.h"

static void (*p_set_context)(const proflink_context *);
static int (*p_swap_context)(const proflink_context *, proflink_context *);
static int (*p_end_transaction)(const uint8_t *, const uint8_t *, uint8_t, proflink_transaction_fn,
                                void *);
static long (*p_take_transactions)(void *, size_t);
static int (*p_transactions_fd)(void);
static int (*p_flush_transactions)(void);
static int (*p_set_resource)(const char *);
static int (*p_get_stats)(proflink_stats *, size_t);

#define FIND(var, name) (*(void **)&(var) = dlsym(RTLD_DEFAULT, name))

/* Another library named by the profiler's rule (elastic-jvmti-linux-*.so, not proflink's): the
 * Elastic agent's own correlation, which is then the provider of this process. */
static int find_other(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (!base || strncmp(base, "elastic-jvmti-linux-", 20) != 0 ||
        strncmp(base, "elastic-jvmti-linux-proflink-", 29) == 0)
        return 0;
    *(int *)data = 1;
    return 1;
}

static int other_provider(void)
{
    int found = 0;
    dl_iterate_phdr(find_other, &found);
    return found;
}

/* ---- proflink.otel.Native ------------------------------------------------------------------- */

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *jvm, void *reserved)
{
    (void)jvm;
    (void)reserved;
    return JNI_VERSION_1_8;
}

/* 1: proflink is active here; 0: absent or disabled; 2: another provider (the Elastic agent's
 * library) is in the process. */
JNIEXPORT jint JNICALL Java_proflink_otel_Native_init(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    if (!FIND(p_set_context, "proflink_set_context") ||
        !FIND(p_swap_context, "proflink_swap_context") ||
        !FIND(p_end_transaction, "proflink_end_transaction") ||
        !FIND(p_take_transactions, "proflink_take_transactions") ||
        !FIND(p_transactions_fd, "proflink_transactions_fd") ||
        !FIND(p_flush_transactions, "proflink_flush_transactions") ||
        !FIND(p_set_resource, "proflink_set_resource") ||
        !FIND(p_get_stats, "proflink_get_stats"))
        return 0;
    proflink_stats st;
    if (p_get_stats(&st, sizeof st) < 0)
        return 0;
    if (other_provider())
        return 2;
    return 1;
}

JNIEXPORT void JNICALL Java_proflink_otel_Native_setContext(JNIEnv *env, jclass cls, jbyteArray rec)
{
    (void)cls;
    if (!rec) {
        p_set_context(NULL);
        return;
    }
    proflink_context c;
    (*env)->GetByteArrayRegion(env, rec, 0, (jsize)sizeof c, (jbyte *)&c);
    p_set_context(&c);
}

/* ids: trace id (16 bytes) then transaction id (8) */
JNIEXPORT jint JNICALL Java_proflink_otel_Native_endTransaction(JNIEnv *env, jclass cls,
                                                                jbyteArray ids, jint flags)
{
    (void)cls;
    uint8_t b[24];
    (*env)->GetByteArrayRegion(env, ids, 0, 24, (jbyte *)b);
    return p_end_transaction(b, b + 16, (uint8_t)flags, NULL, NULL);
}

JNIEXPORT jlong JNICALL Java_proflink_otel_Native_take(JNIEnv *env, jclass cls, jobject buf)
{
    (void)cls;
    void *p = (*env)->GetDirectBufferAddress(env, buf);
    jlong cap = (*env)->GetDirectBufferCapacity(env, buf);
    return p && cap > 0 ? (jlong)p_take_transactions(p, (size_t)cap) : 0;
}

JNIEXPORT jint JNICALL Java_proflink_otel_Native_transactionsFd(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    return p_transactions_fd();
}

/* Waits until fd is readable (results are queued); 1, or 0 on an interrupted wait. */
JNIEXPORT jint JNICALL Java_proflink_otel_Native_waitReadable(JNIEnv *env, jclass cls, jint fd)
{
    (void)env;
    (void)cls;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, -1) == 1;
}

JNIEXPORT jint JNICALL Java_proflink_otel_Native_flush(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    return p_flush_transactions();
}

/* attrs: UTF-8, NUL-terminated */
JNIEXPORT jint JNICALL Java_proflink_otel_Native_setResource(JNIEnv *env, jclass cls,
                                                             jbyteArray attrs)
{
    (void)cls;
    jsize n = (*env)->GetArrayLength(env, attrs);
    char *s = malloc((size_t)n + 1);
    if (!s)
        return -1;
    (*env)->GetByteArrayRegion(env, attrs, 0, n, (jbyte *)s);
    s[n] = 0;
    int rc = p_set_resource(s);
    free(s);
    return rc;
}
