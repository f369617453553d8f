#!/usr/bin/env bats
# variants: glibc musl aarch64-glibc aarch64-musl
# timed: delivery times are compared with the samples delay
# The spec's "APM Agent output of correlation data": ended sampled transactions are held
# samples-delay-ms, then handed back with every stack-trace id received for them.
# modules: preload/deferral/deferral.c preload/deferral/accum.c preload/deferral/txqueue.c
# modules: preload/api/message_api.c preload/messages/profiler_state.c preload/delivery/deliverer.c
# modules: preload/leaves/clock.c
load message_helpers

setup() { setup_sockdir; }
teardown() { msg_teardown; }

T2=11111111111111111111111111111111
X2=2222222222222222

# delivery TAG — "<ended t> <delivered t> <rc> <caller> <thread> <n> <ids>" of a transaction.
# shellcheck disable=SC2001 # sed with capture groups reads plainly here
delivery() {
    local e d
    e=$(grep -E "^ended $1 " "$OUT")
    d=$(grep -E "^txn $1 " "$OUT")
    echo "$(echo "$e" | sed 's/.* t=//') $(echo "$d" | sed 's/.* t=\([0-9.]*\) .*/\1/') \
$(echo "$e" | sed 's/.* rc=\([-0-9]*\) .*/\1/') $(echo "$d" | sed 's/.* caller=\([01]\) .*/\1/') \
$(echo "$d" | sed 's/.* thread=\([^ ]*\) .*/\1/') $(echo "$d" | sed 's/.* n=\([0-9]*\) .*/\1/') \
$(echo "$d" | sed 's/.* ids=//')"
}

@test "unit: threads ending transactions against a reader: each delivered once, never early" {
    libc_independent
    run "$ROOT/build/tests/unit_deferral"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *"ok "* ]]
}

@test "the spec's example: A x2, B x1, A x1 are delivered as A:3 B:1, late messages included" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    send corr "$TRACE" "$TXN" "$ID_A" 2
    send corr "$TRACE" "$TXN" "$ID_B" 1
    send corr "$T2" "$X2" "$ID_A" 9  # another transaction: not mixed in
    send corr "$TRACE" "$X2" "$ID_B" 4 # same trace, other transaction: not mixed in
    wait_stat correlations 4
    cmd end "$TRACE" "$TXN" 1 spec
    wait_lines '^ended spec rc=1 ' 1
    send corr "$TRACE" "$TXN" "$ID_A" 1 # after the end, within the delay: still counted
    wait_lines '^txn spec ' 1 40
    read -r ended delivered rc caller thread n ids <<<"$(delivery spec)"
    [ "$rc" -eq 1 ]
    [ "$caller" -eq 0 ]
    [ "$thread" = proflink-reader ]
    [ "$n" -eq 2 ]
    [ "$ids" = "$B64_B:1,$B64_A:3" ] || [ "$ids" = "$B64_A:3,$B64_B:1" ]
    cmd end "$T2" "$X2" 1 other
    wait_lines '^txn other ' 1 40
    grep -qE "^txn other .* n=1 ids=$B64_A:9$" "$OUT"
    stats
    [ "$(stat_val transactions_deferred)" -eq 2 ]
    [ "$(stat_val transactions_immediate)" -eq 0 ]
}

@test "registration delays 0, 50 and 1000 ms: delivered not before the delay, soon after" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    for d in 0 50 1000; do
        send reg "$d" host
        wait_stat registrations $(( ${regs:=0} + 1 ))
        regs=$((regs + 1))
        cmd end "$TRACE" "$TXN" 1 "d$d"
        wait_lines "^txn d$d " 1 40
        read -r ended delivered rc rest <<<"$(delivery "d$d")"
        echo "delay $d: ended $ended delivered $delivered"
        [ "$rc" -eq 1 ]
        "$PY" -c "import sys; e, d, want = map(float, sys.argv[1:]); \
            sys.exit(0 if want <= d - e <= want + 500 else 1)" "$ended" "$delivered" "$d"
    done
    cmd delay
    wait_lines '^delay ' 2
    [ "$(grep -E '^delay ' "$OUT" | tail -1)" = 'delay 1000' ]
}

@test "the default delay is 1000 ms, and a held transaction is released without any traffic" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    cmd delay
    wait_lines '^delay 1000$' 1
    # nothing ever arrives on the socket: the reader sleeps with no timeout until woken
    sleep 0.3
    cmd end "$TRACE" "$TXN" 1 quiet
    wait_lines '^txn quiet ' 1 40
    read -r ended delivered rc caller thread n ids <<<"$(delivery quiet)"
    [ "$rc" -eq 1 ]
    [ "$n" -eq 0 ]
    [ "$thread" = proflink-reader ]
    "$PY" -c "import sys; e, d = map(float, sys.argv[1:]); sys.exit(0 if 1000 <= d - e <= 1500 else 1)" \
        "$ended" "$delivered"
}

@test "unsampled transactions are never held: delivered in the caller's thread, with known ids" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    send corr "$TRACE" "$TXN" "$ID_A" 2
    wait_stat correlations 1
    cmd end "$TRACE" "$TXN" 0 unsampled
    cmd end "$T2" "$X2" 2 flags2 # flag bits other than "sampled" do not matter
    wait_lines '^ended flags2 ' 1
    read -r ended delivered rc caller thread n ids <<<"$(delivery unsampled)"
    [ "$rc" -eq 0 ]
    [ "$caller" -eq 1 ]
    [ "$n" -eq 1 ]
    [ "$ids" = "$B64_A:2" ]
    # fn ran inside proflink_end_transaction: its line comes before "ended"
    [ "$(grep -nE '^txn unsampled ' "$OUT" | cut -d: -f1)" -lt "$(grep -nE '^ended unsampled ' "$OUT" | cut -d: -f1)" ]
    read -r ended delivered rc caller thread n ids <<<"$(delivery flags2)"
    [ "$rc" -eq 0 ]
    [ "$caller" -eq 1 ]
    [ "$n" -eq 0 ]
    stats
    [ "$(stat_val transactions_immediate)" -eq 2 ]
    [ "$(stat_val transactions_deferred)" -eq 0 ]
}

@test "auto mode: nothing is held until the first valid profiler message, then sampled ones are" {
    start_msg_target
    cmd end "$TRACE" "$TXN" 1 before # (this first call starts the reader)
    wait_lines '^ended before ' 1
    grep -qE '^ended before rc=0 ' "$OUT"
    grep -qE '^txn before .* caller=1 ' "$OUT"
    send raw 0100            # garbage is not a profiler
    send raw 0900010000000000 # nor an unknown type
    wait_stat messages_received 2
    cmd end "$TRACE" "$TXN" 1 garbage
    wait_lines '^ended garbage rc=0 ' 1
    send corr "$T2" "$X2" "$ID_B" 1 # the OTel profiler never registers: any valid message counts
    wait_stat correlations 1
    cmd end "$TRACE" "$TXN" 1 after
    wait_lines '^ended after ' 1
    grep -qE '^ended after rc=1 ' "$OUT"
    cmd end "$TRACE" "$TXN" 0 after-unsampled
    wait_lines '^ended after-unsampled rc=0 ' 1
    wait_lines '^txn after .* thread=proflink-reader ' 1 40
}

@test "ENABLED=false: every transaction is handed back at once and the API reports disabled" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false
    cmd end "$TRACE" "$TXN" 1 off
    cmd delay
    cmd stats
    wait_lines '^stats ' 1
    grep -qE '^ended off rc=0 ' "$OUT"
    grep -qE '^txn off .* caller=1 n=0 ' "$OUT"
    grep -qx 'delay 0' "$OUT"
    grep -qE '^stats rc=-1 ' "$OUT"
    [ -z "$(ls "$SOCKDIR")" ]
}

@test "queue full (BUFFER_SIZE=4): the rest is delivered at once, counted, warned once, none lost" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
        ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_BUFFER_SIZE=4
    cmd endn 10 1 q
    wait_lines '^endn q ' 1
    grep -qx 'endn q deferred=4 now=6' "$OUT"
    [ "$(grep -cE '^txn q-[0-9]+ .* caller=1 ' "$OUT")" -eq 6 ]
    wait_lines '^txn q-' 10 40
    [ "$(grep -cE '^txn q-[0-9]+ .*thread=proflink-reader ' "$OUT")" -eq 4 ]
    stats
    [ "$(stat_val queue_overflows)" -eq 6 ]
    [ "$(stat_val transactions_deferred)" -eq 4 ]
    [ "$(stat_val transactions_immediate)" -eq 6 ]
    [ "$(grep -c 'deferral queue full' "$ERR")" -eq 1 ]
    # the queue has room again once they are out
    cmd endn 4 1 r
    wait_lines '^endn r ' 1
    grep -qx 'endn r deferred=4 now=0' "$OUT"
}

@test "thousands of held transactions come out in order, each once, on time" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    send reg 100 host
    wait_stat registrations 1
    cmd endn 5000 1 bulk
    wait_lines '^endn bulk deferred=5000 now=0$' 1
    wait_lines '^txn bulk-' 5000 100
    grep -E '^txn bulk-' "$OUT" | sed 's/^txn bulk-\([0-9]*\) .*/\1/' >"$BATS_TEST_TMPDIR/order"
    seq 0 4999 | diff - "$BATS_TEST_TMPDIR/order"
}

@test "ids of transactions that never end stay bounded: the oldest keys are evicted, counted" {
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    send corr-keys 5000 # 5000 distinct transactions, one sample each; 4096 keys are kept
    wait_stat correlations 5000
    # counted when received (intake), evicted when delivered (reader, after the burst)
    wait_stat ids_evicted 904
    [ "$(stat_val ids_evicted)" -eq 904 ]
    # a transaction with more distinct stacks than kept per transaction (1024)
    send corr-ids "$T2" "$X2" 1100
    wait_stat correlations 6100
    cmd end "$T2" "$X2" 0 wide
    wait_lines '^txn wide ' 1
    grep -qE '^txn wide .* n=1024 ' "$OUT"
    wait_stat ids_evicted $((904 + 76))
}

@test "a forked child drops the parent's held transactions; the parent still delivers them" {
    not_emulated "qemu-user aborts when a multithreaded guest forks"
    start_msg_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
    api_start
    send corr "$TRACE" "$TXN" "$ID_A" 3
    wait_stat correlations 1
    cmd end "$TRACE" "$TXN" 1 held
    wait_lines '^ended held rc=1 ' 1
    cmd fork 2
    wait_lines '^child pid=' 1
    child=$(sed -n 's/^child pid=//p' "$OUT")
    wait_lines '^txn held ' 1 40
    wait_lines "^child-stats pid=$child " 1 60
    [ "$(lines '^txn held ')" -eq 1 ]
    grep -qE "^txn held pid=$TARGET_PID .* n=1 ids=$B64_A:3$" "$OUT"
    grep -qE "^child-stats pid=$child rc=0 .* transactions_deferred=0 " "$OUT"
    cmd waitchild
    wait_lines '^child-exit status=0$' 1
}
