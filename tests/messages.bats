#!/usr/bin/env bats
# variants: glibc musl aarch64-glibc aarch64-musl
# The profiler's datagrams (docs/formats.md) as a program under proflink receives them: parsing,
# the callback, counting what is discarded, the reader thread itself. Datagrams are sent the
# way the eBPF profiler sends them (tests/helpers/send_datagrams.c).
# modules: preload/api/stats_api.c preload/messages/messages.c preload/messages/receiver.c preload/messages/pending.c
# modules: preload/delivery/deliverer.c preload/messages/profiler_state.c preload/api/message_api.c
# modules: preload/leaves/stats.c preload/leaves/base64url.c preload/messages/json_lines.c
# modules: preload/leaves/json.c preload/deferral/accum.c preload/deferral/txqueue.c
# modules: preload/leaves/wakeup.c preload/leaves/pthread_real.c preload/leaves/utf8.c
load message_helpers

setup() { setup_sockdir; }
teardown() { msg_teardown; }

@test "unit: parser, base64url, JSON records, id table and deferral ring (ASan/UBSan)" {
    libc_independent
    run "$ROOT/build/tests/unit_reader"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "ok "* ]]
}

@test "every record is one valid JSON line of at most 4096 bytes, whatever the host id" {
    libc_independent
    "$ROOT/build/tests/unit_reader" records >"$BATS_TEST_TMPDIR/records"
    "$PY" - "$BATS_TEST_TMPDIR/records" <<'PY'
import json, sys
types = []
for raw in open(sys.argv[1], "rb"):
    assert raw.endswith(b"\n") and len(raw) <= 4096, len(raw)
    types.append(json.loads(raw.decode("utf-8"))["type"])
assert types.count("registration") == 2 and types.count("transaction") >= 3, types
PY
}

@test "every field of a correlation and of a registration reaches the callback" {
    start_msg_target
    cmd cb
    wait_lines '^ok cb' 1
    send corr "$TRACE" "$TXN" "$ID_A" 513
    send --minor 3 corr "$TRACE" "$TXN" "$ID_B" 65535
    send reg 77
    send reg-hex 250 "686f73742dc3bc2d31" # "host-ü-1"
    wait_lines '^msg ' 4
    grep -qx "msg correlation pid=$TARGET_PID minor=1 trace=$TRACE txn=$TXN stack=$B64_A count=513 thread=proflink-reader" "$OUT"
    grep -qx "msg correlation pid=$TARGET_PID minor=3 trace=$TRACE txn=$TXN stack=$B64_B count=65535 thread=proflink-reader" "$OUT"
    grep -qx "msg registration pid=$TARGET_PID minor=1 delay=77 host_len=0 host_hex=- thread=proflink-reader" "$OUT"
    grep -qx "msg registration pid=$TARGET_PID minor=2 delay=250 host_len=9 host_hex=686f73742dc3bc2d31 thread=proflink-reader" "$OUT"
    stats
    [ "$(stat_val messages_received)" -eq 4 ]
    [ "$(stat_val correlations)" -eq 2 ]
    [ "$(stat_val registrations)" -eq 2 ]
    [ "$(stat_val callbacks)" -eq 4 ]
}

@test "a registration sets the delay and host id; a second one replaces both" {
    start_msg_target
    cmd delay
    cmd host
    wait_lines '^host ' 1
    grep -qx 'delay 1000' "$OUT"
    grep -qx 'host len=0 id=' "$OUT"
    send reg 250 host-1
    wait_stat registrations 1
    cmd delay
    cmd host
    wait_lines '^host ' 2
    grep -qx 'delay 250' "$OUT"
    grep -qx 'host len=6 id=host-1' "$OUT"
    send reg 75 "machine two"
    send reg 60 # minor 1: a delay, no host id: the last one stays
    wait_stat registrations 3
    cmd delay
    cmd host
    wait_lines '^host ' 3
    grep -qx 'delay 60' "$OUT"
    grep -qx 'host len=11 id=machine two' "$OUT"
    # a host id longer than proflink keeps (255 bytes) is cut, the callback still gets it all
    cmd cb
    send reg 60 "$(printf 'h%.0s' $(seq 400))"
    wait_stat registrations 4
    cmd host
    wait_lines '^host ' 4
    grep -qE '^host len=255 id=h{255}$' "$OUT"
    grep -qE '^msg registration .* host_len=400 ' "$OUT"
    # and never inside a UTF-8 sequence: 200 two-byte characters keep 127 of them (254 bytes)
    send reg 60 "$(printf '\xc3\xa9%.0s' $(seq 200))"
    wait_stat registrations 5
    cmd host
    wait_lines '^host ' 5
    grep -qxF "host len=254 id=$(printf '\xc3\xa9%.0s' $(seq 127))" "$OUT"
}

@test "a registration's delay is bounded to 60 s; the callback still sees what was sent" {
    start_msg_target
    cmd cb
    wait_lines '^ok cb' 1
    send reg 4294967295 # 49.7 days of held transactions if taken as sent
    wait_stat registrations 1
    cmd delay
    wait_lines '^delay ' 1
    grep -qx 'delay 60000' "$OUT"
    grep -qE '^msg registration .* delay=4294967295 ' "$OUT"
    send reg 60001
    wait_stat registrations 2
    cmd delay
    wait_lines '^delay ' 2
    [ "$(grep -c '^delay 60000$' "$OUT")" -eq 2 ]
    send reg 59999
    wait_stat registrations 3
    cmd delay
    wait_lines '^delay ' 3
    grep -qx 'delay 59999' "$OUT"
}

@test "truncated, oversized and unknown datagrams are discarded, counted, never delivered" {
    start_msg_target
    cmd cb
    wait_lines '^ok cb' 1
    short_corr=$(printf '01000100%s' "$(printf '00%.0s' $(seq 41))") # 45 bytes
    send raw ""                               # 0 bytes: truncated
    send raw 010001                           # 3 bytes: truncated
    send raw 0100                             # 2 bytes: truncated
    send raw "$short_corr"                    # correlation, 45 bytes: truncated
    send raw 02000100f401                     # registration minor 1, 6 bytes: truncated
    send raw 02000200f4010000                 # minor 2 without host id length: truncated
    send raw 02000200f40100000500000061626364 # host id of 5 bytes, 4 there: truncated
    send raw 01000000                         # minor 0: unknown
    send --minor 0 corr "$TRACE" "$TXN" "$ID_A" 1 # minor 0, full length: unknown
    send raw 0300010000000000                 # type 3: unknown
    send raw 00000100                         # type 0: unknown
    send big 1025                             # beyond the 1024-byte receive buffer: oversized
    send big 60000                            # far beyond: oversized
    send big 1024                             # exactly the buffer: a (zero) correlation
    send raw "${short_corr}00aabbccdd"        # 50 bytes: a correlation with a tail, accepted
    wait_stat messages_received 15
    wait_stat callbacks 2 # delivery follows receiving: it starts once the socket is quiet
    [ "$(stat_val discarded_truncated)" -eq 7 ]
    [ "$(stat_val ignored_unknown_type)" -eq 4 ]
    [ "$(stat_val discarded_oversized)" -eq 2 ]
    [ "$(stat_val correlations)" -eq 2 ]
    [ "$(stat_val registrations)" -eq 0 ]
    [ "$(stat_val callbacks)" -eq 2 ]
    [ "$(lines '^msg ')" -eq 2 ]
    stop_msg_target
    [ "$TARGET_STATUS" -eq 0 ]
}

@test "a seeded random corpus of 5000 garbage datagrams: program unaffected, each one counted" {
    start_msg_target
    cmd cb-count
    sent=$("$SENDER" "$TARGET_PID" "$SOCK" garbage 20240611 5000 | sed -n 's/^sent \([0-9]*\) .*/\1/p')
    [ "$sent" -eq 5000 ]
    wait_stat messages_received 5000
    [ "$(stat_val messages_received)" -eq 5000 ]
    sum=$(( $(stat_val correlations) + $(stat_val registrations) + $(stat_val discarded_truncated) \
        + $(stat_val discarded_oversized) + $(stat_val ignored_unknown_type) ))
    [ "$sum" -eq 5000 ]
    # every class occurs in the corpus
    for s in correlations registrations discarded_truncated discarded_oversized ignored_unknown_type; do
        [ "$(stat_val $s)" -gt 0 ]
    done
    wait_stat callbacks $(( $(stat_val correlations) + $(stat_val registrations) ))
    [ "$(stat_val callbacks)" -eq $(( $(stat_val correlations) + $(stat_val registrations) )) ]
    # still serving, exits normally
    send corr "$TRACE" "$TXN" "$ID_A" 1
    wait_stat messages_received 5001
    stop_msg_target
    [ "$TARGET_STATUS" -eq 0 ]
}

@test "the callback can be removed, replaced, and swapped from another thread while messages flow" {
    start_msg_target
    cmd cb
    cmd nocb
    wait_lines '^ok nocb' 1
    send corr "$TRACE" "$TXN" "$ID_A" 1
    wait_stat messages_received 1
    [ "$(stat_val callbacks)" -eq 0 ]
    cmd cb
    send corr "$TRACE" "$TXN" "$ID_A" 2
    wait_lines '^msg ' 1
    grep -q 'count=2 ' "$OUT"
    # a thread swaps {fn, user} pairs as fast as it can for 1.5 s while 20000 messages come:
    # a fn never runs with the other fn's user pointer
    cmd flip 1500
    "$SENDER" "$TARGET_PID" "$SOCK" corr "$TRACE" "$TXN" "$ID_B" 1 20000 >/dev/null
    wait_lines '^flipped' 1 300
    cmd pairs
    wait_lines '^pairs ' 1
    grep -E '^pairs ' "$OUT"
    grep -qE '^pairs ok=[1-9][0-9]* bad=0$' "$OUT"
}

@test "proflink's threads are named proflink-reader and proflink-intake and block every signal" {
    not_emulated "qemu keeps SIGBUS and SIGSEGV unblocked in every thread (it handles them itself)"
    start_msg_target
    cmd cb
    wait_lines '^ok cb' 1
    local name tid blk
    for name in proflink-reader proflink-intake; do
        tid=$(reader_tid "$TARGET_PID" "$name")
        [ -n "$tid" ]
        blk=$(sed -n 's/^SigBlk:[[:space:]]*//p' /proc/"$TARGET_PID"/task/"$tid"/status)
        "$PY" - "$blk" <<'PY'
import sys
mask = int(sys.argv[1], 16)
# every standard signal but SIGKILL (9) and SIGSTOP (19), which cannot be blocked
missing = [s for s in range(1, 32) if s not in (9, 19) and not mask >> (s - 1) & 1]
assert not missing, "not blocked: %s (SigBlk %s)" % (missing, sys.argv[1])
PY
    done
    # and a signal sent to the process never lands on them: the program's handler runs elsewhere
    [ "$(find /proc/"$TARGET_PID"/task -mindepth 1 -maxdepth 1 | wc -l)" -eq 3 ]
    # the inspector knows them: their lack of a record is by design, not a WARN (--stop: musl's
    # thread list cannot be read from outside without stopping the threads)
    run "$INSPECT" --stop "$TARGET_PID"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q '^PASS  threads' <<<"$output"
}

@test "no consumer, no thread: the reader starts with the first message-side API call" {
    not_emulated "qemu adds a host thread of its own, so the thread count is off by one"
    start_msg_target
    send corr "$TRACE" "$TXN" "$ID_A" 3 # waits in the socket meanwhile
    sleep 0.3
    [ "$(find /proc/"$TARGET_PID"/task -mindepth 1 -maxdepth 1 | wc -l)" -eq 1 ] # still single-threaded
    refute reader_tid "$TARGET_PID"
    cmd cb
    wait_lines '^msg correlation .* count=3 ' 1 # the queued datagram is read then
    reader_tid "$TARGET_PID"
    reader_tid "$TARGET_PID" proflink-intake
    [ "$(find /proc/"$TARGET_PID"/task -mindepth 1 -maxdepth 1 | wc -l)" -eq 3 ]
}

@test "a FIFO starts the reader at the program's first wait, before any API call; a TRACEPARENT alone does not" {
    mkfifo -m 600 "$BATS_TEST_TMPDIR/fifo"
    start_msg_target PROFLINK_FIFO="$BATS_TEST_TMPDIR/fifo" # it polls once (message_helpers)
    for _ in $(seq 50); do reader_tid "$TARGET_PID" >/dev/null && break; sleep 0.05; done
    reader_tid "$TARGET_PID"
    stop_msg_target
    # a trace but no consumer of messages: the program stays single-threaded
    start_msg_target TRACEPARENT="00-$TRACE-$TXN-01"
    sleep 0.3
    refute reader_tid "$TARGET_PID"
}

@test "idle: proflink's threads do not wake up at all without traffic" {
    start_msg_target
    cmd cb
    send corr "$TRACE" "$TXN" "$ID_A" 1 # some traffic first, then silence
    wait_lines '^msg ' 1
    local rtid itid
    rtid=$(reader_tid "$TARGET_PID")
    itid=$(reader_tid "$TARGET_PID" proflink-intake)
    [ -n "$rtid" ]
    [ -n "$itid" ]
    sw() {
        grep -E '^(non)?voluntary_ctxt_switches' /proc/"$TARGET_PID"/task/"$rtid"/status \
            /proc/"$TARGET_PID"/task/"$itid"/status | tr -d ' \t\n'
    }
    sleep 0.3
    before=$(sw)
    sleep 2
    after=$(sw)
    echo "before $before after $after"
    [ "$before" = "$after" ]
    for tid in "$rtid" "$itid"; do
        state=$(sed -n 's/^State:[[:space:]]*//p' /proc/"$TARGET_PID"/task/"$tid"/status)
        [[ "$state" == S* ]]
    done
}

@test "a forked child gets its own socket, and its own reader at its first wait; each process receives its own messages" {
    not_emulated "qemu-user aborts when a multithreaded guest forks"
    start_msg_target
    cmd cb
    cmd fork 3
    wait_lines '^child pid=' 1
    child=$(sed -n 's/^child pid=//p' "$OUT")
    [ "$child" != "$TARGET_PID" ]
    child_sock=$(socket_of "$child")
    [ "$child_sock" != "$SOCK" ]
    for _ in $(seq 50); do reader_tid "$child" >/dev/null && break; sleep 0.05; done
    reader_tid "$child"
    "$SENDER" "$child" "$child_sock" corr "$TRACE" "$TXN" "$ID_B" 7 >/dev/null
    send corr "$TRACE" "$TXN" "$ID_A" 5
    wait_lines "^msg correlation pid=$child .*stack=$B64_B count=7 " 1
    wait_lines "^msg correlation pid=$TARGET_PID .*stack=$B64_A count=5 " 1
    [ "$(lines "^msg correlation pid=$child ")" -eq 1 ]
    [ "$(lines "^msg correlation pid=$TARGET_PID ")" -eq 1 ]
    wait_lines "^child-stats pid=$child " 1 80
    grep -qE "^child-stats pid=$child rc=0 messages_received=1 correlations=1 " "$OUT"
    cmd waitchild
    wait_lines '^child-exit status=0$' 1
    stats
    [ "$(stat_val messages_received)" -eq 1 ]
}
