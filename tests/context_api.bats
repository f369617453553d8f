#!/usr/bin/env bats
# variants: glibc musl
# shellcheck shell=bash
# The one-buffer context calls (proflink_set_context / proflink_swap_context) and the default
# of PROFLINK_INHERIT, checked from outside: after each step of tests/helpers/api_context.c the
# main thread's records are read with proflink-inspect, as the profiler reads them.
# modules: preload/api/context_api.c preload/context/thread_records.c hooks/pthread_create.c
load stepped_helpers

A_TRACE=0af7651916cd43dd8448eb211c80319c
A_SPAN=b7ad6b7169203331
A_TXN=1111111111111111
B_TRACE=22222222222222222222222222222222
B_SPAN=3333333333333333
ZERO_CTX=00000000000000000000000000000000/0000000000000000/0000000000000000/00

setup() { setup_sockdir; }
teardown() { stepped_teardown; }

start_ctx_target() {
    start_stepped "$@" LD_PRELOAD="$LIB" "$HELPERS/api_context"
    wait_for_line "$OUT" '^ready pid='
}

# step NAME — lets the target make its next step and waits for its line.
step() {
    echo go >&8
    wait_for_line "$OUT" "^(step $1( |$)|$1 )"
}

# main_record — "present trace span txn flags" of the main thread's apmint record, and checks
# that its OTel record says the same (or is absent or hidden, valid 0, when no trace is present).
main_record() {
    inspect_json "$TARGET_PID"
    jget "' '.join(str(x) for x in (lambda a, o: [a['trace_present'], a['trace_id'], a['span_id'], a['transaction_id'], a['trace_flags'], (o is None or o['valid'] == 0) if not a['trace_present'] else (o['trace_id'] == a['trace_id'] and o['span_id'] == a['span_id'] and o['attributes'].get('local_root_span_id') == a['transaction_id'])])(*[(t['apm'], t['otel']) for t in j['threads'] if t['tid'] == $TARGET_PID][0]))"
}

# expect_record "PRESENT TRACE SPAN TXN FLAGS" — the main thread's records say that (both of
# them); with "0", no trace is present (and no visible OTel record).
expect_record() {
    local present trace span txn flags agree
    read -r present trace span txn flags agree <<<"$(main_record)"
    if [ "$1" = 0 ]; then
        [ "$present $agree" = "0 True" ]
    else
        [ "$present $trace $span $txn $flags $agree" = "$1 True" ]
    fi
}

@test "swap nests scopes: each level is published, and restoring is one set of the saved context" {
    start_ctx_target
    grep -q '^ready pid=.* api=1$' "$OUT"
    step outer
    # nothing was active: rc 0 and an all-zero previous context (the helper pre-filled it)
    grep -qx "step outer rc=0 prev=$ZERO_CTX reserved_zero=1" "$OUT"
    expect_record "1 $A_TRACE $A_SPAN $A_TXN 1"
    step inner
    grep -qx "step inner rc=1 prev=$A_TRACE/$A_SPAN/$A_TXN/01 reserved_zero=1" "$OUT"
    # B's transaction id was all-zero: the span is its own local root
    expect_record "1 $B_TRACE $B_SPAN $B_SPAN 0"
    step restored
    expect_record "1 $A_TRACE $A_SPAN $A_TXN 1"
    step cleared
    expect_record 0
    step null
    grep -qx "step null rc=1 prev=$A_TRACE/$A_SPAN/$A_TXN/01 reserved_zero=1" "$OUT"
    expect_record 0
}

@test "new threads start without the creator's context by default; PROFLINK_INHERIT=1 inherits" {
    start_ctx_target
    for s in outer inner restored cleared null; do step "$s"; done
    step thread
    grep -qx 'thread ctx=- rc=0' "$OUT"
    exec 8>&-
    wait "$TARGET_PID"
    TARGET_PID=
    start_ctx_target PROFLINK_INHERIT=1
    for s in outer inner restored cleared null; do step "$s"; done
    step thread
    grep -qx "thread ctx=$A_TRACE rc=1" "$OUT"
}

@test "disabled: swap returns -1, zeroes prev, and the program runs the same" {
    start_ctx_target ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false
    step outer
    grep -qx "step outer rc=-1 prev=$ZERO_CTX reserved_zero=1" "$OUT"
    step inner
    grep -qx "step inner rc=-1 prev=$ZERO_CTX reserved_zero=1" "$OUT"
}

# Signal safety (thread_records.h): a handler's set/swap/clear that interrupts the same thread
# inside the API. tests/helpers/api_signal_nesting.c samples the records the way the profiler
# does (interrupting the thread, through the exported TLS pointers), also exactly where the
# interrupted call resumes, and fails on any record marked valid that mixes two contexts.
@test "a signal handler's context calls inside an interrupted one: no valid record mixes two contexts" {
    run env LD_PRELOAD="$LIB" PROFLINK_OTEL_CONTEXT=1 "$HELPERS/api_signal_nesting" 2
    echo "$output"
    [ "$status" -eq 0 ]
    [ "${lines[1]}" = ok ]
    # the run did interrupt and sample (a quiet machine still gets thousands of each)
    read -r _ samples _ nested <<<"${lines[0]}"
    [ "$samples" -gt 1000 ] && [ "$nested" -gt 100 ]
}
