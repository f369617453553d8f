/* start.c — starting proflink in a process image: the constructor and proflink_init (static
 * programs), in the one order start-up needs. The top of the library: it calls every layer
 * and nothing calls it. */
#include <stdatomic.h>
#include <sys/auxv.h>

#include "context/attr_keys.h"
#include "config/config.h"
#include "copies.h"
#include "leaves/export.h"
#include "fork_sequence.h"
#include "http/http_conn.h"
#include "libc_check.h"
#include "leaves/log.h"
#include "leaves/start_path.h"
#include "proflink.h"
#include "delivery/deliverer.h"
#include "messages/json_lines.h"
#include "runtime.h"
#include "leaves/runtime_state.h"
#include "context/thread_records.h"

/* The decision comes first and costs next to nothing: proflink may be listed in
 * /etc/ld.so.preload and so loaded into every process of the host, most of which it does not
 * serve. Until the program is known to be served, nothing is allocated, no file but the
 * system configuration is opened and the configuration's memory is not touched (docs/speed.md,
 * what a start costs). Cold: it runs once, and the compiler places it with the
 * constructor at the front of the code rather than in a page of its own. */
__attribute__((cold)) static int start_once(void)
{
    struct config *cfg = &proflink_config;
    log_capture_stderr(); /* before anything of ours can take the number 2 */
    if (!libc_check()) /* first: nothing else of ours may run on the other libc */
        return -1;
    /* setuid/setgid programs (secure-exec): their environment is the caller's and unreadable to
     * us (secure_getenv), so nothing could select or configure them. Never activate there: a
     * root-owned socket in a shared /tmp for every `passwd` run helps nobody. */
    if (getauxval(AT_SECURE)) {
        log_info("inactive: setuid/setgid program (secure-exec), its environment is not trusted");
        return -1;
    }
    struct selection sel; /* on the stack: config.h says why */
    if (!config_decide(&sel)) {
        if (!sel.selected)
            log_info("inactive: %s is not selected by PROFLINK_INCLUDE/EXCLUDE", sel.exe_path);
        else
            log_info("inactive: ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED is false");
        return -1;
    }
    config_load_served(cfg, &sel);
    records_set_service(cfg->service_name);
    if (!copies_first())
        return -1;
    if (thread_records_init(cfg->otel_context, cfg->inherit,
                            cfg->has_traceparent ? &cfg->traceparent : NULL) != 0) {
        log_error("cannot create a thread key; profiler correlation disabled");
        return -1;
    }
    attr_keys_init(cfg); /* the fixed attributes before the first record, the map before OTEL_CTX */
    /* The main thread's record first, so that a profiler that finds the storage finds the
     * thread's context too (it reads the records on every sample, the storage once). */
    thread_block_install(thread_block_new_main(cfg->has_traceparent ? &cfg->traceparent : NULL));
    int fd = runtime_publish(cfg);
    if (fd < 0) {
        thread_block_release_self();
        return -1;
    }
    runtime_set_active(1);
    fork_sequence_install(); /* after the allocations above: fork_sequence.c says why */
#ifndef PROFLINK_STATIC
    if (cfg->http) /* the hooks (hooks/http_io.c) exist in the preload builds only */
        http_conn_enable();
#else
    if (cfg->http)
        log_warn("PROFLINK_HTTP needs the preloaded library; ignored in a static program");
#endif
    reader_configure(cfg->fifo_path, cfg->buffer_size, cfg->mode == MODE_AUTO,
                     cfg->mode == MODE_TRUE);
    reader_start(fd);
    runtime_sweep_stale();
    log_info("active: service %s, socket %s", cfg->service_name, runtime_socket_path());
    return 0;
}

/* Starts proflink in this process image; a second call does nothing. 0 active, -1 not. */
static int start(void)
{
    START_PATH_DATA static _Atomic int started; /* start_once ran (whatever its outcome) */
    int expected = 0;
    if (!atomic_compare_exchange_strong(&started, &expected, 1))
        return runtime_active() ? 0 : -1;
    return start_once();
}

__attribute__((constructor)) static void proflink_constructor(void)
{
#ifndef PROFLINK_STATIC
    start();
#endif
}

PROFLINK_EXPORT int proflink_init(void)
{
    fork_sequence_check_process(); /* called again in a raw clone child: set it up */
    return start();
}
