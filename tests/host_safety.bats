#!/usr/bin/env bats
# shellcheck shell=bash
# variants: glibc musl
# Never harm the host: each test reproduces a way proflink once changed what a program saw (a
# file's mode, a seccomp kill, a multi-threaded fork child, a hang, a flushed file, files left
# behind), and runs it with and without the library: the results must be the same.
# modules: hooks/children.c hooks/exec.c preload/start/fork_sequence.c preload/start/atfork.c
# modules: hooks/seccomp.c preload/leaves/runtime_state.c preload/publish/socket.c
# modules: preload/messages/fifo.c preload/messages/receiver.c
load helpers

setup() {
    setup_sockdir
    PIDS=()
}

teardown() {
    teardown_mount
    stop_pids "${PIDS[@]}"
    rm -rf "$SOCKDIR"
}

# ---- a failed exec and the program's umask ----------------------------------------------------

@test "a failed exec in one thread never changes the modes of files another thread creates" {
    local files=$BATS_TEST_TMPDIR/files
    mkdir "$files"
    run "$HELPERS/target_exec_umask" "$files" 2000
    echo "without: $output"
    [[ "$output" == *" bad=0 umask=022 socket=none" ]]
    # each failed exec recreates the socket (docs/internals.md, fork and exec) while the other thread runs
    run env LD_PRELOAD="$LIB" "$HELPERS/target_exec_umask" "$files" 2000
    echo "with: $output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" bad=0 umask=022 socket=0600" ]]
}

@test "a umask that takes the owner's bits still gives a 0600 socket, and stays the program's" {
    local files=$BATS_TEST_TMPDIR/files
    mkdir "$files"
    TARGET_UMASK=0277 run env LD_PRELOAD="$LIB" "$HELPERS/target_exec_umask" "$files" 50
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" bad=0 umask=277 socket=0600" ]]
    # nothing of the private directory it was made in is left
    [ -z "$(find "$SOCKDIR" -mindepth 1 -name '.*')" ]
}

# ---- a seccomp allowlist and HTTP reading -----------------------------------------------------

# serve_sandboxed [ENV…] — runs target_seccomp_allowlist as a sandboxed HTTP server (under ENV),
# sends it one request with a traceparent, and leaves its exit status in SERVED_STATUS and what
# it printed in SERVED_OUT.
serve_sandboxed() {
    local out=$BATS_TEST_TMPDIR/server.out port="" reply
    : >"$out"
    env "$@" "$HELPERS/target_seccomp_allowlist" prctl exit serve >"$out" 2>&1 3>&- &
    local pid=$!
    for _ in $(seq 200); do
        port=$(sed -n 's/^port //p' "$out")
        [ -n "$port" ] && break
        sleep 0.05
    done
    [ -n "$port" ]
    reply=$("$PY" - "$port" <<'PY'
import socket, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n"
          b"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n")
print(c.recv(4096).decode(errors="replace"))
PY
)
    SERVED_STATUS=0
    wait "$pid" || SERVED_STATUS=$?
    SERVED_OUT=$(cat "$out")
    echo "status $SERVED_STATUS reply '$reply' output: $SERVED_OUT"
}

@test "an HTTP server with a seccomp allowlist serves under PROFLINK_HTTP=1 as without the library" {
    serve_sandboxed PROFLINK_LOG=warn
    [ "$SERVED_STATUS" -eq 6 ]
    [[ "$SERVED_OUT" == *served* ]]
    serve_sandboxed LD_PRELOAD="$LIB" PROFLINK_HTTP=1
    # not 159 (SIGSYS): after the filter, proflink's accept hook makes no system call of its own
    [ "$SERVED_STATUS" -eq 6 ]
    [[ "$SERVED_OUT" == *"sandboxed"*"served"* ]]
}

# ---- the intake thread and the program's descriptors ------------------------------------------

# with_flush_fs — mounts tests/fuse_flush_log.py on $MNT, logging to $FLUSHLOG (skips without
# FUSE); the test's teardown unmounts it.
with_flush_fs() {
    [ -c /dev/fuse ] || skip "no /dev/fuse on this machine"
    "$PY" -c 'import fuse' 2>/dev/null || skip "python3-fuse is not installed (scripts/deps.sh check installs it)"
    MNT=$BATS_TEST_TMPDIR/mnt FLUSHLOG=$BATS_TEST_TMPDIR/flush.log
    mkdir "$MNT"
    : >"$FLUSHLOG"
    "$PY" "$ROOT/tests/fuse_flush_log.py" "$MNT" "$FLUSHLOG" >"$BATS_TEST_TMPDIR/fuse.out" 2>&1 3>&- &
    PIDS+=($!)
    for _ in $(seq 100); do
        mountpoint -q "$MNT" && return 0
        sleep 0.05
    done
    cat "$BATS_TEST_TMPDIR/fuse.out" >&2
    return 1
}

# hold_file [ENV…] — api_hold_file (under ENV) writes a file on the FUSE file system and starts
# proflink's intake while holding it; FLUSH_BEFORE is what the file system logged then, FLUSH_AFTER
# what it logged once the program closed the file itself.
hold_file() {
    local in=$BATS_TEST_TMPDIR/in out=$BATS_TEST_TMPDIR/hold.out
    rm -f "$in"
    mkfifo "$in"
    : >"$FLUSHLOG"
    env "$@" "$HELPERS/api_hold_file" "$MNT/held" <"$in" >"$out" 3>&- &
    local pid=$!
    exec 6>"$in"
    wait_for_line "$out" '^intake='
    HOLD_INTAKE=$(sed -n 's/^intake=//p' "$out")
    FLUSH_BEFORE=$(grep -c . "$FLUSHLOG" || true)
    exec 6>&-
    wait "$pid"
    grep -qx closed "$out"
    FLUSH_AFTER=$(grep -c . "$FLUSHLOG" || true)
    echo "intake=$HOLD_INTAKE flushes while held: $FLUSH_BEFORE, after its close: $FLUSH_AFTER"
}

teardown_mount() {
    if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then fusermount -u "$MNT" || umount -l "$MNT"; fi
}

@test "starting the intake never closes a copy of the program's files (FUSE sees no FLUSH)" {
    with_flush_fs
    hold_file PROFLINK_LOG=warn
    [ "$FLUSH_BEFORE" -eq 0 ]
    [ "$FLUSH_AFTER" -eq 1 ]
    hold_file LD_PRELOAD="$LIB"
    [ "$HOLD_INTAKE" -eq 1 ]
    [ "$FLUSH_BEFORE" -eq 0 ]
    [ "$FLUSH_AFTER" -eq 1 ]
}

# ---- namespaces: a process stays single-threaded until it asks for messages -------------------

@test "a fork child of a process whose reader runs can still setns and unshare(CLONE_NEWUSER)" {
    run "$HELPERS/api_fork_ns" api
    echo "without: $output"
    [ "$output" = "threads=1 setns=ok unshare=ok" ]
    run env LD_PRELOAD="$LIB" "$HELPERS/api_fork_ns" api
    echo "with: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "threads=1 setns=ok unshare=ok" ]
}

@test "with an inherited PROFLINK_FIFO, fork children and unshare -U / nsenter -m still work" {
    mkfifo -m 600 "$SOCKDIR/fifo"
    cat "$SOCKDIR/fifo" >/dev/null 3>&- &
    PIDS+=($!)
    run env PROFLINK_FIFO="$SOCKDIR/fifo" LD_PRELOAD="$LIB" "$HELPERS/api_fork_ns"
    echo "fork child: $output"
    [ "$output" = "threads=1 setns=ok unshare=ok" ]
    [ "$LIBC" = glibc ] || return 0 # the tools are Debian's, glibc programs
    run env PROFLINK_FIFO="$SOCKDIR/fifo" LD_PRELOAD="$LIB" nsenter -t "$$" -m true
    echo "nsenter -m: $status $output"
    [ "$status" -eq 0 ]
    # the kernel refuses a new user namespace in a chroot, for instance (EPERM): then it is not
    # proflink's doing, and nothing here can show that it does not refuse it
    local plain
    plain=$(unshare -U true 2>&1) || skip "unshare -U fails here without proflink too: $plain"
    run env PROFLINK_FIFO="$SOCKDIR/fifo" LD_PRELOAD="$LIB" unshare -U true
    echo "unshare -U: $status $output"
    [ "$status" -eq 0 ]
}

# ---- children: raw clones that serve, forks that die ------------------------------------------

@test "raw clone children that accept and answer under PROFLINK_HTTP=1 never hang (MALLOC_ARENA_MAX=1)" {
    # a parent thread allocates without pause: each copy may take the one arena's lock held, and
    # hangs if anything in it allocates; proflink must not set up a child from its accept hook
    run env MALLOC_ARENA_MAX=1 "$HELPERS/target_conn_children" rawclone 100
    echo "without: $output"
    [ "$output" = "children=100 hung=0" ]
    run env MALLOC_ARENA_MAX=1 PROFLINK_HTTP=1 LD_PRELOAD="$LIB" "$HELPERS/target_conn_children" rawclone 100
    echo "with: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "children=100 hung=0" ]
}

@test "1,000 children of a forking server killed by SIGPIPE leave no socket file behind" {
    run "$HELPERS/target_conn_children" fork 1000
    echo "without: $output"
    [ "$output" = "children=1000 signaled=1000 files=0" ]
    # each child had a socket of its own (the profiler may attach to it); its parent, which
    # reaps it, removes the file it left: only the parent's own remains while it runs
    run env LD_PRELOAD="$LIB" "$HELPERS/target_conn_children" fork 1000
    echo "with: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "children=1000 signaled=1000 files=1" ]
    [ -z "$(find "$SOCKDIR" -name 'proflink-*')" ]
}

@test "1,000 children of a forking server that ignores SIGCHLD leave no socket file behind" {
    run "$HELPERS/target_conn_children" fork-ignore 1000
    echo "without: $output"
    [ "$output" = "children=1000 gone=1000 files=0" ]
    # nobody waits: the parent removes its gone children's files at its next fork, and at exit;
    # while it runs, its own file and its last child's are left
    run env LD_PRELOAD="$LIB" "$HELPERS/target_conn_children" fork-ignore 1000
    echo "with: $output"
    [ "$status" -eq 0 ]
    [ "$output" = "children=1000 gone=1000 files=2" ]
    [ -z "$(find "$SOCKDIR" -name 'proflink-*')" ]
}

# ---- a program that is not selected makes only the loader's system calls ---------------------

# syscall_set FILE — the names of the system calls in an strace -f log, one per line, sorted
syscall_set() {
    sed -n 's/^[0-9]* *\([a-z_0-9]*\)(.*/\1/p' "$1" | sort -u
}

@test "a program not selected makes no system call an empty preloaded library does not cause" {
    command -v strace >/dev/null || skip "strace is not installed"
    local cc=gcc d=$BATS_TEST_TMPDIR name extra how
    if [ "$LIBC" = musl ]; then cc=musl-gcc; fi
    command -v "$cc" >/dev/null || skip "$cc is not installed (scripts/deps.sh check installs musl-tools)"
    echo 'int proflink_test_empty;' | "$cc" -shared -fPIC -x c - -o "$d/libempty.so"
    # a merged-/usr layout: the program reached through a link to its directory; and by a
    # relative name
    mkdir -p "$d/usr/bin"
    cp "$HELPERS/target_threads" "$d/usr/bin/prog"
    ln -s usr/bin "$d/bin"
    strace -f -qq -o "$d/empty.log" env LD_PRELOAD="$d/libempty.so" "$d/bin/prog" 1 0
    syscall_set "$d/empty.log" >"$d/empty.set"
    echo "the loader's, and the program's own: $(tr '\n' ' ' <"$d/empty.set")"
    for how in "PROFLINK_INCLUDE=/nothing" "PROFLINK_EXCLUDE=*/prog" \
        "ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false"; do
        for name in "$d/bin/prog" ./bin/prog; do
            (cd "$d" && strace -f -qq -o "$d/with.log" env "$how" LD_PRELOAD="$LIB" "$name" 1 0)
            syscall_set "$d/with.log" >"$d/with.set"
            extra=$(comm -13 "$d/empty.set" "$d/with.set" | tr '\n' ' ')
            echo "$how $name: $extra"
            [ -z "$extra" ]
        done
    done
}

@test "a selected program under a kill-by-default allowlist of its own calls and docs/system-wide.md's line survives every phase" {
    command -v strace >/dev/null || skip "strace is not installed"
    local d=$BATS_TEST_TMPDIR line names nrs n nr
    # the documented line (docs/system-wide.md, "Under a system-call allowlist")
    line=$(sed -n 's/^SystemCallFilter=//p' "$ROOT/docs/system-wide.md")
    [ -n "$line" ]
    # the numbers of this machine's calls, from the C library's headers
    printf '#include <sys/syscall.h>\n' | gcc -E -dM - |
        sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9][0-9]*\)$/\1 \2/p' >"$d/numbers"
    # the program's own calls, without the library: its start, a thread, a fork, an exec
    strace -f -qq -o "$d/own.log" "$HELPERS/target_phases"
    names="$(syscall_set "$d/own.log" | tr '\n' ' ') $line"
    nrs=
    for n in $names; do
        nr=$(awk -v n="$n" '$1 == n { print $2 }' "$d/numbers")
        [ -n "$nr" ] || continue # a name this architecture does not have
        nrs=$nrs${nrs:+,}$nr
    done
    # also with PROFLINK_FIFO: proflink's threads start at the first thread, and write the pipe
    for fifo in "" "$d/records.fifo"; do
        run env ${fifo:+PROFLINK_FIFO="$fifo"} SECCOMP_EXEC_PRELOAD="$LIB" \
            "$ROOT/build/tests/seccomp_exec" "$nrs" "$HELPERS/target_phases"
        echo "PROFLINK_FIFO=$fifo: status $status: $output"
        [ "$status" -eq 0 ]
        [ "$output" = "phases done" ]
    done
    # the filter is not too wide to tell: without the line, the same run is killed (SIGSYS)
    nrs=
    for n in $(syscall_set "$d/own.log"); do
        nr=$(awk -v n="$n" '$1 == n { print $2 }' "$d/numbers")
        nrs=$nrs${nrs:+,}$nr
    done
    run env SECCOMP_EXEC_PRELOAD="$LIB" "$ROOT/build/tests/seccomp_exec" "$nrs" "$HELPERS/target_phases"
    echo "without the line: status $status"
    [ "$status" -eq 159 ]
}
