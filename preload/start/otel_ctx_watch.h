/* otel_ctx_watch.h — another publisher of the OpenTelemetry process context in this process (an
 * OpenTelemetry SDK, a vendor tracer): OTEP 4719 allows one OTEL_CTX mapping per process and
 * its readers keep the last one they find, so proflink withdraws its own and leaves the format
 * to the other. Noticed when the other names its mapping with prctl(PR_SET_VMA_ANON_NAME, ...,
 * "OTEL_CTX") through libc (hooks/seccomp.c), even where the kernel refuses to name mappings;
 * a publisher that never names its mapping, or makes the system call itself (Go), is not seen. */
#ifndef PROFLINK_OTEL_CTX_WATCH_H
#define PROFLINK_OTEL_CTX_WATCH_H

/* After a prctl the program made (whatever its result): when it named a mapping other than ours
 * "OTEL_CTX", withdraws ours and logs it once. Errno is left as the call set it. */
void otel_ctx_watch_prctl(int option, unsigned long a2, unsigned long addr, unsigned long name);

#endif
