/* runtime.c — the process's published presence (runtime.h): its socket, the storage that names
 * it and the OTel process context; published at start, again in a fork child, moved across a
 * failed exec, following the effective ids, removed at exit. Order matters and is the
 * contract's: socket first, then the storage that names it, then the pointer
 * (process_storage.c), so a profiler attaching at any instant sees either nothing or a
 * complete, usable block. */
#include "runtime.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config/config.h"
#include "leaves/log.h"
#include "leaves/start_path.h"
#include "mapping_renew.h"
#include "publish/otel_process_ctx.h"
#include "publish/process_storage.h"
#include "delivery/deliverer.h"
#include "leaves/runtime_state.h"
#include "publish/socket.h"
#include "leaves/real_calls.h"
#include "messages/provider_relay.h"
#include "leaves/raw_syscall.h"
#include "leaves/text.h"
#include "leaves/sys_calls.h"

static pid_t owner_pid;     /* the process that created socket_path */
START_PATH_DATA static char socket_path[SOCKET_PATH_MAX + 1];
static char socket_dir[SOCKET_PATH_MAX + 1];
static struct socket_file socket_file; /* the file socket_path named when we bound it */
/* exec: our file was removed before the exec, to be re-created if the exec fails. */
static int removed_for_exec;

/* The pids of the last CHILDREN_TRACKED children forked, for a parent that never waits (the
 * kernel reaps them: no wait hook runs). Each fork looks at every slot: one kill(pid, 0) each,
 * about 20 us for a full ring against the fork's own 100 us and more; a child whose slot was
 * taken before it died is left to the sweep (socket_cleanup.c). Slots are claimed with a
 * compare-and-swap, so two threads forking at once never remove a file twice. 0: empty. */
#define CHILDREN_TRACKED 64
static _Atomic int children[CHILDREN_TRACKED];
static _Atomic unsigned children_next;

/* Each fork child writes which file it bound (device, inode, name suffix) into a page shared
 * with its parent, so that the parent removes that file and only that one when the child is
 * gone, whoever owns it by then: a child that changed its ids (nginx and memcached workers run
 * as another user) gave its file to them (runtime_creds_follow), and the file's owner can no
 * longer tell it from a look-alike another user made. A slot is the child's pid modulo
 * CHILD_FILES; a child whose slot a later one took falls back to the owner check
 * (socket_remove_dead). The page is made at the first fork (fork_sequence.c's prepare), so a
 * process that never forks has none; a child leaves its parent's page at once and makes its own
 * when it forks. pid is written last (release) and taken back with a compare-and-swap, so a
 * reader never uses a record another child is rewriting. */
struct child_file {
    _Atomic int pid; /* 0: free */
    _Atomic uint32_t suffix;
    _Atomic uint64_t dev, ino;
};
#define CHILD_FILES_BYTES 4096
#define CHILD_FILES (CHILD_FILES_BYTES / sizeof(struct child_file))
static _Atomic(struct child_file *) child_files;

const char *runtime_socket_path(void) { return socket_path; }

int runtime_publish(const struct config *cfg)
{
    const char *dir;
    char why[256];
    int fd = socket_create(cfg, NULL, socket_path, &socket_file, &dir, why, sizeof why);
    if (fd < 0) {
        log_error("cannot create the profiler socket (%s); correlation disabled in this process",
                  why);
        socket_path[0] = 0;
        return -1;
    }
    text_copy(socket_dir, sizeof socket_dir, dir);
    provider_relay_own_socket(socket_path);
    owner_pid = raw_getpid();
    if (process_storage_publish(cfg, socket_path) != 0) {
        log_error("out of memory; profiler correlation disabled for this process");
        sys_unlink(socket_path);
        real_close(fd);
        socket_path[0] = 0;
        return -1;
    }
    /* the profiler may have looked before the storage existed: make it look again (after the
     * storage, before the OTel context, whose prctl makes it read our mappings) */
    mapping_renew();
    if (cfg->otel_context)
        otel_process_ctx_publish(cfg); /* optional protocol: a failure is logged there */
    return fd;
}

void runtime_sweep_stale(void) { socket_cleanup_stale(socket_dir, socket_path); }

/* Step R of the fork sequence (fork_sequence.c), whose rules it follows. The parent's socket
 * fd was closed by reader_fork_child.
 *
 * The child gets a socket file of its own at once, and its storage names it: the profiler
 * attaches to a process once, at its first sample, reading the socket path then and requiring
 * the file to exist and be writable by the process's effective ids, so the child's file must
 * be there before the child runs (naming the parent's instead would break when the parent
 * exits first, as a daemon's does, or when the child changes its ids, as nginx workers do, and
 * would send the child's messages to the parent for good). A child that dies without removing
 * it (a signal: a fork-per-connection server's child killed by SIGPIPE) would leave it behind,
 * one file per child; so the child's name is the parent's with the child's pid
 * (proflink-<child pid>-<the parent's suffix>.sock) and the parent, which reaps its children,
 * removes the file of each child it reaps (runtime_reap_child, from hooks/children.c), or,
 * when it never waits (SIGCHLD ignored), of its recent children that are gone by its next fork
 * or its exit (runtime_forked_child). Older children of such a parent are left to the sweep of
 * dead processes' files (socket_cleanup.c). */
void runtime_fork_child(void)
{
    const struct config *cfg = &proflink_config;
    const char *dir;
    char why[256];
    uint32_t parent_suffix = socket_file.suffix;
    int fd = socket_create(cfg, socket_path[0] ? &parent_suffix : NULL, socket_path, &socket_file,
                           &dir, why, sizeof why);
    if (fd < 0 || process_storage_publish(cfg, socket_path) != 0) {
        log_error("fork child: cannot publish its own socket; correlation disabled in pid %d",
                  (int)raw_getpid());
        if (fd >= 0) {
            sys_unlink(socket_path);
            real_close(fd);
        }
        socket_path[0] = 0;
        process_storage_unpublish();
        runtime_set_active(0);
        return;
    }
    text_copy(socket_dir, sizeof socket_dir, dir);
    owner_pid = raw_getpid();
    for (int i = 0; i < CHILDREN_TRACKED; i++) /* the parent's children are not ours */
        atomic_store_explicit(&children[i], 0, memory_order_relaxed);
    struct child_file *parents = atomic_exchange(&child_files, NULL);
    if (parents) { /* tell the parent which file is ours, then leave its page */
        struct child_file *slot = &parents[(unsigned)owner_pid % CHILD_FILES];
        atomic_store_explicit(&slot->pid, 0, memory_order_relaxed);
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&slot->suffix, socket_file.suffix, memory_order_relaxed);
        atomic_store_explicit(&slot->dev, (uint64_t)socket_file.dev, memory_order_relaxed);
        atomic_store_explicit(&slot->ino, (uint64_t)socket_file.ino, memory_order_relaxed);
        atomic_store_explicit(&slot->pid, (int)owner_pid, memory_order_release);
        sys_munmap(parents, CHILD_FILES_BYTES);
    }
    if (cfg->otel_context)
        otel_process_ctx_after_fork(cfg);
    reader_start(fd);
}

/* No socket, no reader: every one of those is a system call the filter may forbid. */
void runtime_fork_child_sandboxed(void)
{
    socket_path[0] = 0;
    process_storage_unpublish();
    runtime_set_active(0);
}

/* Only the process that created the file removes it: a fork child made without the atfork
 * handlers (raw clone) or a vfork child shares our memory, not our socket. */
static int own_file(void)
{
    return socket_path[0] && !runtime_sandboxed() && owner_pid == raw_getpid();
}

void runtime_fork_prepare(void)
{
    if (!own_file() || atomic_load_explicit(&child_files, memory_order_relaxed))
        return;
    void *p = sys_mmap(NULL, CHILD_FILES_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                       -1, 0);
    if (p == MAP_FAILED)
        return; /* the children's files fall back to the owner check */
    struct child_file *none = NULL;
    if (!atomic_compare_exchange_strong(&child_files, &none, p)) /* another thread's fork */
        sys_munmap(p, CHILD_FILES_BYTES);
}

/* The file child pid left, if it recorded one and nobody is bound to it any more: the one it
 * bound (same device and inode), whoever owns it now. Otherwise only a socket of our euid
 * under the child's usual name (socket_remove_dead). */
static void remove_child_file(int pid)
{
    struct child_file *files = atomic_load_explicit(&child_files, memory_order_acquire);
    if (files) {
        struct child_file *slot = &files[(unsigned)pid % CHILD_FILES];
        int seen = atomic_load_explicit(&slot->pid, memory_order_acquire);
        if (seen == pid) {
            uint32_t suffix = atomic_load_explicit(&slot->suffix, memory_order_relaxed);
            uint64_t dev = atomic_load_explicit(&slot->dev, memory_order_relaxed);
            uint64_t ino = atomic_load_explicit(&slot->ino, memory_order_relaxed);
            if (atomic_compare_exchange_strong(&slot->pid, &seen, 0)) {
                socket_remove_child(socket_dir, pid, suffix, dev, ino);
                return;
            }
        }
    }
    socket_remove_dead(socket_dir, pid, socket_file.suffix);
}

static void remove_gone_children(void)
{
    for (int i = 0; i < CHILDREN_TRACKED; i++) {
        int pid = atomic_load_explicit(&children[i], memory_order_relaxed);
        /* ESRCH: no such process, not even a zombie (EPERM: another user's, pid reused) */
        if (pid > 0 && raw_syscall6(SYS_kill, pid, 0, 0, 0, 0, 0) == -ESRCH &&
            atomic_compare_exchange_strong(&children[i], &pid, 0))
            remove_child_file(pid);
    }
}

START_PATH_CODE void runtime_remove_socket(void)
{
    if (!own_file())
        return;
    socket_file_remove(socket_path, &socket_file);
    remove_gone_children(); /* the process ends: nobody else would */
}

void runtime_reap_child(int pid)
{
    if (own_file()) /* touches no errno (socket.h) */
        remove_child_file(pid);
}

void runtime_forked_child(int pid)
{
    if (!own_file())
        return;
    int saved = errno;
    remove_gone_children();
    unsigned i = atomic_fetch_add_explicit(&children_next, 1, memory_order_relaxed);
    atomic_store_explicit(&children[i % CHILDREN_TRACKED], pid, memory_order_relaxed);
    errno = saved;
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
    int fd = socket_create(&proflink_config, NULL, path, &file, &dir, why, sizeof why);
    if (fd < 0)
        return;
    memcpy(socket_path, path, sizeof socket_path);
    socket_file = file;
    if (reader_replace_socket(fd) != 0) {
        socket_file_remove(path, &file);
        real_close(fd);
        socket_path[0] = 0;
        log_warn("after a failed exec: profiler messages no longer reach pid %d", (int)raw_getpid());
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
    socket_file_chown(socket_path, &socket_file, euid == (uid_t)-1 ? raw_geteuid() : euid,
                      egid == (gid_t)-1 ? raw_getegid() : egid);
}
