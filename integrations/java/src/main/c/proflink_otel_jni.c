/* proflink_otel_jni.c — the JNI shim of the OpenTelemetry Java agent extension: the proflink
 * calls the extension makes (proflink.otel.Native), found in the preloaded library with
 * dlsym(RTLD_DEFAULT) and never linked, and the carrier-thread bookkeeping of virtual threads.
 *
 * Nothing here allocates on a context switch: the 40-byte proflink_context is copied from the
 * Java byte[] into the stack. Without proflink in the process init() answers 0 and the extension
 * stays out of the way; no other entry point is then called.
 *
 * Virtual threads: a virtual thread runs on a carrier (an OS thread) whose record the profiler
 * reads. The JVMTI extension events VirtualThreadUnmount and VirtualThreadMount (Java 21+, with
 * can_support_virtual_threads) move the context with the virtual thread: on unmount the carrier's
 * context is swapped out (the carrier is left without a trace) into the virtual thread's JVMTI
 * thread-local storage; on mount it is set again on the new carrier. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>
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

static JavaVM *vm;
static jvmtiEnv *jvmti;
static int vthreads_followed;

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

/* ---- virtual threads ------------------------------------------------------------------------ */

/* A virtual thread's saved context: allocated at its first unmount with a trace, freed at its
 * end. */
static void JNICALL on_unmount(jvmtiEnv *env, JNIEnv *jni, jthread thread, ...)
{
    (void)jni;
    proflink_context prev;
    int had = p_swap_context(NULL, &prev) == 1;
    proflink_context *saved = NULL;
    if ((*env)->GetThreadLocalStorage(env, thread, (void **)&saved) != JVMTI_ERROR_NONE)
        return;
    if (!saved) {
        if (!had)
            return;
        saved = malloc(sizeof *saved);
        if (!saved || (*env)->SetThreadLocalStorage(env, thread, saved) != JVMTI_ERROR_NONE) {
            free(saved);
            return;
        }
    }
    if (had)
        *saved = prev;
    else
        memset(saved, 0, sizeof *saved);
}

static void JNICALL on_mount(jvmtiEnv *env, JNIEnv *jni, jthread thread, ...)
{
    (void)jni;
    proflink_context *saved = NULL;
    if ((*env)->GetThreadLocalStorage(env, thread, (void **)&saved) != JVMTI_ERROR_NONE)
        saved = NULL;
    /* all-zero (or none): no trace on the carrier while this one runs */
    p_set_context(saved);
}

static void JNICALL on_vthread_end(jvmtiEnv *env, JNIEnv *jni, jthread thread)
{
    (void)jni;
    void *saved = NULL;
    if ((*env)->GetThreadLocalStorage(env, thread, &saved) == JVMTI_ERROR_NONE && saved) {
        (*env)->SetThreadLocalStorage(env, thread, NULL);
        free(saved);
    }
}

/* can_support_virtual_threads: the capability after can_generate_sampled_object_alloc_events
 * (bit 44 of jvmtiCapabilities), named only in the headers of Java 21 and later. */
static void add_vthread_capability(jvmtiCapabilities *caps)
{
#if defined(JVMTI_VERSION_21)
    caps->can_support_virtual_threads = 1;
#else
    unsigned int words[sizeof *caps / sizeof(unsigned int)];
    memcpy(words, caps, sizeof words);
    words[1] |= 1u << 12;
    memcpy(caps, words, sizeof words);
#endif
}

#define JVMTI_EVENT_VIRTUAL_THREAD_END_ID 88 /* JVMTI_EVENT_VIRTUAL_THREAD_END (Java 21+) */

/* 1 when the mount and unmount events are enabled, 0 when this JVM has none (before Java 21),
 * -1 when they exist but could not be enabled. */
static int follow_virtual_threads(void)
{
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || !jvmti)
        return 0;
    jint n = 0;
    jvmtiExtensionEventInfo *events = NULL;
    if ((*jvmti)->GetExtensionEvents(jvmti, &n, &events) != JVMTI_ERROR_NONE)
        return 0;
    jint mount = -1, unmount = -1;
    for (jint i = 0; i < n; i++) {
        if (strcmp(events[i].id, "com.sun.hotspot.events.VirtualThreadMount") == 0)
            mount = events[i].extension_event_index;
        else if (strcmp(events[i].id, "com.sun.hotspot.events.VirtualThreadUnmount") == 0)
            unmount = events[i].extension_event_index;
    }
    /* (the descriptions GetExtensionEvents allocated are kept: a few hundred bytes, once) */
    if (mount < 0 || unmount < 0)
        return 0;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    add_vthread_capability(&caps);
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE)
        return -1;
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    /* VirtualThreadEnd's slot: the last of jvmtiEventCallbacks in Java 21+ headers */
    void (JNICALL **slots)(jvmtiEnv *, JNIEnv *, jthread) = (void *)&cb;
    size_t end_slot = JVMTI_EVENT_VIRTUAL_THREAD_END_ID - JVMTI_MIN_EVENT_TYPE_VAL;
    jint cb_size = (jint)((end_slot + 1) * sizeof(void *));
    if ((size_t)cb_size > sizeof cb) {
        /* older headers: a larger table for the newer JVM */
        static void *table[JVMTI_EVENT_VIRTUAL_THREAD_END_ID - JVMTI_MIN_EVENT_TYPE_VAL + 1];
        slots = (void *)table;
        slots[end_slot] = on_vthread_end;
        if ((*jvmti)->SetEventCallbacks(jvmti, (jvmtiEventCallbacks *)table, cb_size) !=
            JVMTI_ERROR_NONE)
            return -1;
    } else {
        slots[end_slot] = on_vthread_end;
        if ((*jvmti)->SetEventCallbacks(jvmti, &cb, (jint)sizeof cb) != JVMTI_ERROR_NONE)
            return -1;
    }
    if ((*jvmti)->SetExtensionEventCallback(jvmti, mount, (jvmtiExtensionEvent)on_mount) !=
            JVMTI_ERROR_NONE ||
        (*jvmti)->SetExtensionEventCallback(jvmti, unmount, (jvmtiExtensionEvent)on_unmount) !=
            JVMTI_ERROR_NONE ||
        (*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE,
                                           (jvmtiEvent)JVMTI_EVENT_VIRTUAL_THREAD_END_ID,
                                           NULL) != JVMTI_ERROR_NONE)
        return -1;
    return 1;
}

/* ---- proflink.otel.Native ------------------------------------------------------------------- */

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *jvm, void *reserved)
{
    (void)reserved;
    vm = jvm;
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

/* 1 when virtual threads are followed, 0 when the JVM has none, -1 when it could not. */
JNIEXPORT jint JNICALL Java_proflink_otel_Native_followVirtualThreads(JNIEnv *env, jclass cls)
{
    (void)env;
    (void)cls;
    if (!vthreads_followed)
        vthreads_followed = follow_virtual_threads() == 1 ? 1 : -1;
    return vthreads_followed == 1;
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
