/* provider_relay.h — the intake thread's side of yielding the apmint format to another provider
 * (provider.h says when and why): received datagrams go on to the socket the other provider's
 * storage block names. No dependency on the reader or the runtime, so that the intake (which
 * calls it) and the reader (which starts the intake) stay free of a call cycle. */
#ifndef PROFLINK_PROVIDER_RELAY_H
#define PROFLINK_PROVIDER_RELAY_H

#include <stddef.h>

/* Our own socket's path, never relayed to (runtime.c, once it has one). */
void provider_relay_own_socket(const char *path);

/* 1 while another provider's block is in the pointer; the first time, logs which library it is.
 * Any thread; a few atomic loads while there is none. */
int provider_noticed(void);

/* 1 while another provider's block is in the pointer: received datagrams go to provider_relay,
 * not to proflink's consumers. */
int provider_relaying(void);

/* Sends one received datagram on to the other provider's socket (intake thread only). */
void provider_relay(const void *buf, size_t len);

#endif
