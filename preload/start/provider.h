/* provider.h — one provider of the apmint format per process. Another library that exports the
 * same symbols (the Elastic Java agent's elastic-jvmti-linux-*.so, loaded by the JVM after
 * proflink) stores its own process storage block in the pointer: its references resolve to
 * proflink's definitions, which come first in the global scope. proflink then yields that side:
 * it never writes the pointer again (process_storage.c), and relays the datagrams that reach its
 * own socket (a profiler that attached before the other library published keeps sending there)
 * to the socket the other block names. proflink's thread records and its OTel contexts stay as
 * they are (the other library sets the apmint TLS pointer itself on the threads it serves, and
 * that pointer is the one the profiler reads, through proflink's TLS offset). The relaying is
 * provider_relay.h, used by the intake thread; this is the check made where the program runs. */
#ifndef PROFLINK_PROVIDER_H
#define PROFLINK_PROVIDER_H

#include <stddef.h>

/* Notices another provider's block (a few atomic loads while there is none); the first time logs
 * which library it is (provider_noticed) and starts the intake thread, which relays. Called where proflink runs
 * anyway in such a process: thread creation and each received batch. */
void provider_check(void);

#endif
