#!/usr/bin/env bats
# variants: glibc musl
# shellcheck shell=bash
# Odd but legal programs against the message side of the API (issue 10, items 4, 5, 7, 11):
# cancellation inside the API, a deferral queue of capacity 1, a descriptor reused while the
# reader delivers, a child made by a raw clone().
# modules: preload/api/message_api.c preload/deferral/txqueue.c preload/deferral/deferral.c
# modules: preload/messages/receiver.c preload/start/fork_sequence.c
load message_helpers

setup() { setup_sockdir; }
teardown() {
    [ -n "${FIFO_READER:-}" ] && kill "$FIFO_READER" 2>/dev/null
    msg_teardown
}

@test "pthread_cancel inside proflink_end_transaction during a FIFO write: later forks do not hang" {
    mkfifo "$SOCKDIR/fifo"
    cat "$SOCKDIR/fifo" >/dev/null &
    FIFO_READER=$!
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
        PROFLINK_FIFO="$SOCKDIR/fifo"
    # the callback cancels its thread; the request acts at proflink's next cancellation point,
    # the FIFO write of the transaction's record (a lock held across it would stay held)
    cmd cancelend "$TRACE" "$TXN"
    wait_lines '^cancelled ' 1
    grep -qx 'cancelled 1' "$OUT"
    # fork() runs proflink's prepare handler, which takes every lock of proflink
    wait_lines '^cancel-fork ' 1 50
    grep -qx 'cancel-fork status=0' "$OUT"
    stats
    [ "$(stat_val fifo_records)" -ge 1 ]
}

@test "deferral queue capacity 1, 2, 3: every transaction is delivered" {
    for cap in 1 2 3; do
        start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
            ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE=$cap
        api_start
        send reg 100 host
        wait_stat registrations 1
        cmd endn 7 1 c$cap
        wait_lines "^endn c$cap " 1
        grep -qx "endn c$cap deferred=$cap now=$((7 - cap))" "$OUT"
        # later rounds reuse the ring's cells: each comes out once
        cmd endn 7 1 d$cap
        wait_lines "^txn c$cap-" 7 50
        wait_lines "^txn d$cap-" 7 50
        [ "$(grep -cE "^txn [cd]$cap-" "$OUT")" -eq 14 ]
        [ "$(grep -E "^txn [cd]$cap-" "$OUT" | cut -d' ' -f2 | sort -u | wc -l)" -eq 14 ]
        stop_msg_target
    done
}

# intake_fds — what the proflink-intake thread's descriptor table holds, one link per line
intake_fds() {
    local t fd
    for t in /proc/"$TARGET_PID"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = proflink-intake ] || continue
        for fd in "$t"/fd/*; do readlink "$fd"; done
        return 0
    done
    return 1
}

# socket_inode — the inode of the socket bound to $SOCK, as the kernel lists it
socket_inode() { awk -v p="$SOCK" '$8 == p { print $7 }' /proc/net/unix; }

@test "the intake shares the program's table: a program that closes and reuses proflink's number keeps its data, and the intake stops" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    send reg 0 host
    wait_stat registrations 1
    inode=$(socket_inode)
    [ -n "$inode" ]
    # from outside: the intake's table is the program's (no copy of the program's files)
    run intake_fds
    [ "$status" = 0 ]
    [ "$output" = "$(for fd in /proc/"$TARGET_PID"/fd/*; do readlink "$fd"; done)" ]
    grep -qx "socket:\[$inode\]" <<<"$output"
    # the program closes its number for the socket and gets it back for a socketpair of its own,
    # while the reader is busy delivering: every datagram of its own reaches it
    cmd fdreuse "$TRACE" "$TXN"
    wait_lines '^fdreuse ' 1 80
    grep -qx 'fdreuse reused=1 got=10 of 10' "$OUT"
    # the intake saw the number name another file before its next receive, and stopped
    send corr "$TRACE" "$TXN" "$ID_A" 1
    for _ in $(seq 100); do grep -q 'profiler socket: Bad file descriptor' "$ERR" && break; sleep 0.05; done
    grep -q 'profiler socket: Bad file descriptor' "$ERR"
}

@test "a child made by a raw clone() (no fork handlers) holds its ended transaction, delivered by a reader of its own" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    cmd rawclone "$TRACE" "$TXN" 1
    wait_lines '^rawclone-exit ' 1 50
    grep -qx 'rawclone-exit 0' "$OUT"
    child=$(sed -n 's/^txn raw pid=\([0-9]*\) .*/\1/p' "$OUT")
    [ -n "$child" ]
    [ "$child" != "$TARGET_PID" ]
    # set up at that call as a fork child is: the transaction is held, not handed back at once
    grep -qE '^ended raw rc=1 ' "$OUT"
    grep -qE "^txn raw pid=$child .* thread=proflink-reader caller=0 n=0 " "$OUT"
    # the parent's reader is unaffected
    cmd end "$TRACE" "$TXN" 0 parent
    wait_lines '^txn parent ' 1
}
