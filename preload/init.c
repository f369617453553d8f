/* init.c — starting proflink in a process (constructor, proflink_init, fork child) and cleaning
 * up at exit. Order matters and is the contract's: socket first, then the storage that names
 * it, then the pointer (process_storage.c), so a profiler attaching at any instant sees either
 * nothing or a complete, usable block. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "config.h"
#include "export.h"
#include "hooks.h"
#include "http_conn.h"
#include "libc_check.h"
#include "log.h"
#include "attr_keys.h"
#include "otel_process_ctx.h"
#include "process_storage.h"
#include "proflink.h"
#include "reader.h"
#include "records.h"
#include "runtime.h"
#include "socket.h"
#include "stats.h"
#include "thread_records.h"

static _Atomic int active;
static _Atomic int started; /* runtime_start ran (whatever its outcome) */
static pid_t owner_pid;     /* the process that created socket_path */
static char socket_path[SOCKET_PATH_MAX + 1];
static char socket_dir[SOCKET_PATH_MAX + 1];
static struct socket_file socket_file; /* the file socket_path named when we bound it */
/* Set by the seccomp hooks before the program installs a filter: from then on proflink makes
 * no system call the program did not ask for (its filter may kill the process for one). */
static _Atomic int sandboxed;
/* exec: our file was removed before the exec, to be re-created if the exec fails. */
static int removed_for_exec;

/* Relaxed: "active" only gates whether to do work; every structure it guards was published
 * before it was set, by this same thread, before any other thread could have been created by
 * the program (constructor) — or is reached through pointers published with release stores. */
int runtime_active(void) { return atomic_load_explicit(&active, memory_order_relaxed); }

const char *runtime_socket_path(void) { return socket_path; }

/* Socket + storage (+ OTel context). On failure nothing is left behind. */
static int publish_process(const struct config *cfg)
{
    const char *dir;
    char why[256];
    int fd = socket_create(cfg, socket_path, &socket_file, &dir, why, sizeof why);
    if (fd < 0) {
        log_error("cannot create the profiler socket (%s); correlation disabled in this process",
                  why);
        socket_path[0] = 0;
        return -1;
    }
    snprintf(socket_dir, sizeof socket_dir, "%s", dir);
    owner_pid = getpid();
    if (process_storage_publish(cfg, socket_path) != 0) {
        log_error("out of memory; profiler correlation disabled for this process");
        unlink(socket_path);
        close(fd);
        socket_path[0] = 0;
        return -1;
    }
    if (cfg->otel_context)
        otel_process_ctx_publish(cfg); /* optional protocol: a failure is logged there */
    return fd;
}

static int start_once(void)
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
    config_load(cfg);
    records_set_service(cfg->service_name);
    if (!cfg->selected) {
        log_info("inactive: %s is not selected by PROFLINK_INCLUDE/EXCLUDE", cfg->exe_path);
        return -1;
    }
    if (cfg->mode == MODE_FALSE) {
        log_info("inactive: ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED is false");
        return -1;
    }
    if (thread_records_init(cfg->otel_context) != 0) {
        log_error("cannot create a thread key; profiler correlation disabled");
        return -1;
    }
    attr_keys_init(cfg); /* the fixed attributes before the first record, the map before OTEL_CTX */
    /* The main thread's record first, so that a profiler that finds the storage finds the
     * thread's context too (it reads the records on every sample, the storage once). */
    struct thread_block *main_block =
        thread_block_new(cfg->has_traceparent ? &cfg->traceparent : NULL, NULL);
    if (main_block)
        thread_block_install(main_block);
    int fd = publish_process(cfg);
    if (fd < 0) {
        thread_block_release_self();
        return -1;
    }
    atomic_store_explicit(&active, 1, memory_order_release);
    hooks_install_fork_handlers();
#ifndef PROFLINK_STATIC
    if (cfg->http) /* the hooks (hooks/http_io.c) exist in the preload builds only */
        http_conn_enable();
#else
    if (cfg->http)
        log_warn("PROFLINK_HTTP needs the preloaded library; ignored in a static program");
#endif
    reader_start(fd, socket_path);
    socket_cleanup_stale(socket_dir, socket_path);
    log_info("active: service %s, socket %s", cfg->service_name, socket_path);
    return 0;
}

int runtime_start(void)
{
    int expected = 0;
    if (!atomic_compare_exchange_strong(&started, &expected, 1))
        return runtime_active() ? 0 : -1;
    return start_once();
}

void runtime_fork_prepare(void)
{
    if (runtime_active())
        reader_fork_prepare();
}

void runtime_fork_parent(void)
{
    if (runtime_active())
        reader_fork_parent();
}

/* Runs in the child before fork() returns there, single-threaded. The parent's socket fd was
 * inherited: it is closed here, or the child would steal the parent's messages. */
void runtime_fork_child(void)
{
    if (!runtime_active())
        return;
    const struct config *cfg = &proflink_config;
    const char *dir;
    char why[256];
    if (atomic_load_explicit(&sandboxed, memory_order_relaxed)) {
        /* no socket, no reader: every one of those is a system call the filter may forbid */
        socket_path[0] = 0;
        process_storage_unpublish();
        atomic_store_explicit(&active, 0, memory_order_relaxed);
        return;
    }
    reader_fork_child();
    attr_keys_after_fork();
    stats_reset();
    int fd = socket_create(cfg, socket_path, &socket_file, &dir, why, sizeof why);
    if (fd < 0 || process_storage_publish(cfg, socket_path) != 0) {
        log_error("fork child: cannot publish its own socket; correlation disabled in pid %d",
                  (int)getpid());
        if (fd >= 0) {
            unlink(socket_path);
            close(fd);
        }
        socket_path[0] = 0;
        process_storage_unpublish();
        atomic_store_explicit(&active, 0, memory_order_relaxed);
        return;
    }
    owner_pid = getpid();
    if (cfg->otel_context)
        otel_process_ctx_after_fork(cfg);
    reader_start(fd, socket_path);
}

__attribute__((constructor)) static void proflink_constructor(void)
{
#ifndef PROFLINK_STATIC
    runtime_start();
#endif
}

/* Only the process that created the file removes it: a fork child made without the atfork
 * handlers (raw clone) or a vfork child shares our memory, not our socket. */
static int own_file(void)
{
    return socket_path[0] && !atomic_load_explicit(&sandboxed, memory_order_relaxed) &&
           owner_pid == getpid();
}

void runtime_remove_socket(void)
{
    if (own_file())
        socket_file_remove(socket_path, &socket_file);
}

/* exit(), and the _exit/_Exit hooks (hooks/exit.c). Killed processes leave the file for
 * socket_cleanup.c. */
__attribute__((destructor)) static void proflink_destructor(void) { runtime_remove_socket(); }

void runtime_exec_prepare(void)
{
    removed_for_exec = own_file() && socket_file_remove(socket_path, &socket_file) == 0;
}

/* The exec failed and the program runs on: a new socket and storage naming it. The old socket
 * cannot be given its file back (an unlinked socket cannot be linked again). */
void runtime_exec_failed(void)
{
    if (!removed_for_exec)
        return;
    removed_for_exec = 0;
    const char *dir;
    char why[256];
    char path[SOCKET_PATH_MAX + 1];
    struct socket_file file;
    int fd = socket_create(&proflink_config, path, &file, &dir, why, sizeof why);
    if (fd < 0)
        return;
    memcpy(socket_path, path, sizeof socket_path);
    socket_file = file;
    if (reader_replace_socket(fd) != 0) {
        socket_file_remove(path, &file);
        close(fd);
        socket_path[0] = 0;
        log_warn("after a failed exec: profiler messages no longer reach pid %d", (int)getpid());
        return;
    }
    if (process_storage_publish(&proflink_config, socket_path) != 0)
        log_warn("after a failed exec: out of memory; the storage names the removed socket");
}

void runtime_creds_follow(uid_t euid, gid_t egid)
{
    if (!own_file())
        return;
    /* The profiler requires the socket to be writable by the target's effective ids, and at
     * exit the process must be able to remove it (a sticky /tmp lets only the owner do so). */
    socket_file_chown(socket_path, &socket_file, euid == (uid_t)-1 ? geteuid() : euid,
                      egid == (gid_t)-1 ? getegid() : egid);
}

void runtime_sandbox_begin(void) { atomic_store_explicit(&sandboxed, 1, memory_order_relaxed); }
void runtime_sandbox_failed(void) { atomic_store_explicit(&sandboxed, 0, memory_order_relaxed); }
int runtime_sandboxed(void) { return atomic_load_explicit(&sandboxed, memory_order_relaxed); }

PROFLINK_EXPORT int proflink_init(void) { return runtime_start(); }
