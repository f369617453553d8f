/* target_tls.h — which TLS library a target's connections go through, and whether proflink's
 * HTTP reading (PROFLINK_HTTP=1, hooks/ssl_io.c) can see their plaintext: only OpenSSL's
 * libssl, loaded as a shared library, can be interposed. Found from outside: the mapped files
 * (/proc/PID/maps) and the program's own ELF symbols (OpenSSL or BoringSSL linked in, as the
 * NodeSource node binary does; Go's crypto/tls; rustls). */
#ifndef TARGET_TLS_H
#define TARGET_TLS_H

#include <stddef.h>
#include <sys/types.h>

enum target_tls_reach {
    TARGET_TLS_NONE,       /* no TLS library found */
    TARGET_TLS_OPENSSL,    /* libssl mapped: its plaintext is read */
    TARGET_TLS_OUT_OF_REACH /* a TLS library proflink cannot interpose */
};

struct target_tls {
    enum target_tls_reach reach;
    char what[4800]; /* which library, and where it was found ("" for none) */
};

/* Looks at pid's mappings and its executable. 0, or -1 when /proc/PID/maps cannot be read. */
int target_tls_find(pid_t pid, struct target_tls *out);

#endif
