/* jni_agent.c — the JNI side of a stand-in for the Elastic Java agent's native library, built
 * together with other_provider.c into elastic-jvmti-linux-fakeagent.so and loaded by the JVM
 * with System.load, as the agent loads its own: FakeAgent.start publishes the agent's storage
 * block naming its socket, FakeAgent.recv waits for one datagram on it. */
#include <jni.h>
#include <poll.h>
#include <sys/socket.h>

int other_provider_start(const char *path, const char *service);

JNIEXPORT jint JNICALL Java_FakeAgent_start(JNIEnv *env, jclass cls, jstring path)
{
    (void)cls;
    const char *p = (*env)->GetStringUTFChars(env, path, NULL);
    int fd = p ? other_provider_start(p, "fake-agent") : -1;
    if (p)
        (*env)->ReleaseStringUTFChars(env, path, p);
    return fd;
}

/* The datagram's length, or -1 when none came within timeout_ms. */
JNIEXPORT jint JNICALL Java_FakeAgent_recv(JNIEnv *env, jclass cls, jint fd, jint timeout_ms)
{
    (void)env;
    (void)cls;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char buf[2048];
    if (poll(&p, 1, timeout_ms) != 1)
        return -1;
    return (jint)recv(fd, buf, sizeof buf, 0);
}
