#!/usr/bin/env bats
# variants: glibc musl
# The stale-socket sweep (preload/publish/socket_cleanup.c) seen from outside: which files a starting
# process removes from its socket directory, in a directory shared with another pid namespace
# and in a crowded one.
# modules: preload/publish/socket_cleanup.c
load helpers

setup() {
    setup_sockdir
    HOLDER_PID=
}
teardown() {
    stop_pids ${HOLDER_PID:+"$HOLDER_PID"}
    rm -rf "$SOCKDIR"
}

need_pid_namespaces() {
    unshare -pf --mount-proc true 2>/dev/null || skip "unshare -p does not work here (needs root and pid namespaces)"
}

# one served start in this namespace (the sweep runs before main)
served_start() {
    LD_PRELOAD=$LIB "$HELPERS/target_threads" 1 0 >/dev/null
}

# bind_and_leave PATH…: socket files nobody is bound to any more (python binds, then exits)
bind_and_leave() {
    "$PY" -c 'import socket, sys
for p in sys.argv[1:]:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).bind(p)' "$@"
}

@test "a killed process of another pid namespace: its file goes, though its pid is alive here" {
    need_pid_namespaces
    # the target is pid 1 in its namespace, so its file is named proflink-1-…; pid 1 is alive
    # in ours (init), which is what a pid check would have asked
    unshare -pf --kill-child env LD_PRELOAD="$LIB" "$HELPERS/target_threads" 1 60 \
        >"$BATS_TEST_TMPDIR/ns.out" 2>&1 3>&- &
    local ns=$! f=
    for _ in $(seq 100); do
        f=$(find "$SOCKDIR" -name 'proflink-1-*.sock' | head -1)
        [ -n "$f" ] && break
        sleep 0.05
    done
    [ -S "$f" ]
    served_start
    [ -S "$f" ] # alive there: kept
    local child
    child=$(pgrep -P "$ns")
    kill -9 "$ns" # --kill-child: the target gets SIGKILL and leaves its file behind
    wait "$ns" || true
    for _ in $(seq 100); do
        kill -0 "$child" 2>/dev/null || break
        sleep 0.05
    done
    refute kill -0 "$child" 2>/dev/null
    [ -S "$f" ]
    served_start
    [ ! -e "$f" ]
}

@test "live sockets named with pids that mean something else here are never removed" {
    need_pid_namespaces
    # A holder in a pid namespace of its own binds live sockets named with the pids the next
    # processes of that namespace get, plus one named with a pid dead
    # here; then a served start in that namespace, whose own pid is among the names, sweeps.
    true &
    local dead=$!
    wait "$dead"
    # in the namespace: bash is 1, the holder 2 (process substitution execs it), the served
    # start 3; `read` is a builtin, so no other process takes a number in between
    # shellcheck disable=SC2016 # the script expands its own arguments, inside the namespace
    unshare -pf --mount-proc bash -c '
        exec 4< <(exec "$1" -c "
import socket, sys, time
d = sys.argv[1]
socks = []
for pid in list(range(2, 8)) + [int(sys.argv[2])]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(\"%s/proflink-%d-0000%04x.sock\" % (d, pid, pid % 65536))
    socks.append(s)
print(\"ready\", flush=True)
time.sleep(60)
" "$2" "$3")
        read -r line <&4
        echo "$line" >"$4"
        sh -c "echo \$\$ >\"$5\"; exec env LD_PRELOAD=\"$6\" \"$7\" 1 0" >/dev/null
    ' ns "$PY" "$SOCKDIR" "$dead" "$BATS_TEST_TMPDIR/holder.out" "$BATS_TEST_TMPDIR/pid" \
        "$LIB" "$HELPERS/target_threads"
    grep -q ready "$BATS_TEST_TMPDIR/holder.out"
    own=$(cat "$BATS_TEST_TMPDIR/pid")
    # the served start's pid was one of the names
    [ "$own" -ge 2 ]
    [ "$own" -le 7 ]
    # every holder socket outlived the sweep (the holder is gone now: they are stale)
    [ "$(find "$SOCKDIR" -name 'proflink-*-0000*.sock' | wc -l)" = 7 ]
    served_start
    [ -z "$(find "$SOCKDIR" -name 'proflink-*')" ]
}

@test "crowded directory: one read and a few probes per start, and stale files anywhere go away" {
    libc_independent
    # a random position means something only where positions are hashes (ext4)
    case $(stat -f -c %T "$SOCKDIR") in
        ext2/ext3) ;;
        *) skip "socket dir on $(stat -f -c %T "$SOCKDIR"): a random start position needs a hash-ordered directory (ext4)" ;;
    esac
    # 5,000 look-alikes: regular files and another user's sockets (mknod), dead pids
    "$PY" - "$SOCKDIR" <<'EOF'
import os, random, stat, sys
d, rng = sys.argv[1], random.Random(7)
for i in range(5000):
    p = "%s/proflink-%d-%08x.sock" % (d, rng.randrange(2, 4194304), rng.getrandbits(32))
    if i % 25:
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
    else:
        os.mknod(p, stat.S_IFSOCK | 0o600)
        os.chown(p, 65534, 65534)
EOF
    local stale=() i
    for i in 1 2 3 4 5; do stale+=("$SOCKDIR/proflink-$((4194304 + i))-0000abc$i.sock"); done
    bind_and_leave "${stale[@]}"
    local starts=0 left=5
    while [ "$left" -gt 0 ] && [ "$starts" -lt 1500 ]; do
        PROFLINK_LOG=debug LD_PRELOAD=$LIB /bin/true 2>"$BATS_TEST_TMPDIR/sweep.err"
        starts=$((starts + 1))
        # never more than one read's worth of entries, never more than 8 probes
        grep -qE 'socket sweep of .*: [0-9]+ entries examined \(one read of at most 4096 bytes, [0-8] of them probed\)' \
            "$BATS_TEST_TMPDIR/sweep.err"
        left=0
        for i in "${stale[@]}"; do [ ! -e "$i" ] || left=$((left + 1)); done
    done
    echo "starts until every stale file was gone: $starts (left: $left)"
    [ "$left" = 0 ]
    [ "$(find "$SOCKDIR" -name 'proflink-*' | wc -l)" = 5000 ] # the look-alikes are all there
}
