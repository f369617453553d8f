#!/usr/bin/env bats
# One apmint provider per process: a library of the same shape as the Elastic Java agent's
# (tests/provider/other_provider.c: exports the storage pointer and the TLS variable) loaded with
# dlopen after proflink, as a JVM loads its agent's. Its references resolve to proflink's
# definitions, so the block it publishes lands in proflink's pointer: proflink must leave it
# there, relay what reaches its own socket (a profiler that attached earlier sends there) to the
# other library's socket, and say so once; proflink-inspect names the other library.
# TARGET_PID and SOCK are read by send() (message_helpers.bash)
# shellcheck disable=SC2034
# modules: preload/messages/provider_relay.c preload/start/provider.c
# modules: preload/start/otel_ctx_watch.c
load message_helpers
bats_require_minimum_version 1.5.0

setup_file() {
    local d=$BATS_FILE_TMPDIR dialect=-mtls-dialect=gnu2
    if [ "$(uname -m)" = aarch64 ]; then dialect=-mtls-dialect=desc; fi
    # the agent's library name, which the profiler matches too
    gcc -O1 -g -Wall -Werror -fPIC -shared -ftls-model=global-dynamic $dialect \
        -o "$d/elastic-jvmti-linux-otherprovider.so" "$ROOT/tests/provider/other_provider.c"
    gcc -O1 -g -Wall -Werror -o "$d/provider_host" "$ROOT/tests/provider/provider_host.c" -ldl -lpthread
    gcc -O1 -g -Wall -Werror -rdynamic $dialect -o "$d/otel_exporter" "$ROOT/tests/provider/otel_exporter.c" -lpthread
}

setup() {
    libc_independent
    setup_sockdir
    OTHER=$BATS_FILE_TMPDIR/elastic-jvmti-linux-otherprovider.so
    OUT=$BATS_TEST_TMPDIR/host.out
    ERR=$BATS_TEST_TMPDIR/host.err
    mkfifo "$BATS_TEST_TMPDIR/in"
    PROFLINK_LOG=info LD_PRELOAD=$LIB OTEL_SERVICE_NAME=host-service "$BATS_FILE_TMPDIR/provider_host" \
        <"$BATS_TEST_TMPDIR/in" >"$OUT" 2>"$ERR" 3>&- &
    TARGET_PID=$!
    exec 8>"$BATS_TEST_TMPDIR/in"
    wait_for_line "$OUT" '^ready pid='
    # the profiler attaches at the first sample, before the other library is loaded
    SOCK=$(socket_of "$TARGET_PID")
}

teardown() {
    exec 8>&-
    wait "$TARGET_PID" 2>/dev/null || :
    rm -rf "$SOCKDIR"
}

host() { # COMMAND REPLY-PATTERN
    echo "$1" >&8
    wait_for_line "$OUT" "$2"
}

@test "a same-shape library loaded late keeps its storage; proflink relays the profiler's messages to it and says so once" {
    host "load $OTHER $SOCKDIR/other.sock" '^loaded'
    # the block in the pointer is the one the other library's code published
    host storage '^storage '
    grep -qx 'storage SAME' "$OUT"
    # the JVM goes on creating threads: proflink notices there
    host thread '^thread'
    # a correlation message sent to proflink's socket, as by a profiler that attached earlier
    send corr "$TRACE" "$TXN" "$ID_A" 1
    host recv '^other got'
    grep -qx 'other got 46 bytes' "$OUT"
    # a tracer's new service name does not overwrite the other block
    host "resource service.name=changed" '^resource '
    run "$INSPECT" --no-threads "$TARGET_PID"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q '^PASS  storage .*service-name "other-service".*socket "'"$SOCKDIR"'/other.sock"' <<<"$output"
    grep -q "^PASS  mapping .*another provider of the format is loaded: $OTHER" <<<"$output"
    refute grep -q '^WARN  mapping' <<<"$output"
    cat "$ERR"
    [ "$(grep -c 'published its own apmint process storage' "$ERR")" = 1 ]
    grep -qF "proflink: $OTHER published its own apmint process storage (socket $SOCKDIR/other.sock): proflink leaves the storage pointer to it and relays" "$ERR"
}

@test "without the other library the program's storage is proflink's and nothing is relayed" {
    host thread '^thread'
    host "resource service.name=changed" '^resource 0'
    run "$INSPECT" --no-threads "$TARGET_PID"
    [ "$status" -eq 0 ]
    grep -q "^PASS  storage .*service-name \"changed\".*socket \"$SOCK\"" <<<"$output"
    refute grep -q 'apmint process storage' "$ERR"
}

@test "a second OpenTelemetry process context published by the program: proflink withdraws its own and says so once" {
    [ "$(grep -c OTEL_CTX "/proc/$TARGET_PID/maps")" = 1 ]
    # before: a new thread gets proflink's OTel record
    host othread '^othread '
    grep -qx 'othread set' "$OUT"
    host otelctx '^otelctx '
    local addr rc
    read -r _ addr rc < <(grep '^otelctx ' "$OUT")
    grep OTEL_CTX "/proc/$TARGET_PID/maps" || :
    # proflink's mapping is gone; the program's is named where the kernel can name mappings
    if [ "$rc" = 0 ]; then
        [ "$(grep -c OTEL_CTX "/proc/$TARGET_PID/maps")" = 1 ]
        grep -q "^0*$addr-.*\[anon:OTEL_CTX\]" "/proc/$TARGET_PID/maps"
    else
        [ "$(grep -c OTEL_CTX "/proc/$TARGET_PID/maps")" = 0 ]
    fi
    # a tracer's new resource publishes nothing again
    host "resource service.name=changed" '^resource '
    refute grep -q '/memfd:OTEL_CTX' "/proc/$TARGET_PID/maps"
    # after: new threads' OTel pointer is left to the other publisher
    host othread '^othread null'
    [ "$(grep -c '^othread ' "$OUT")" = 2 ]
    cat "$ERR"
    [ "$(grep -c 'another OpenTelemetry process context was published in this process' "$ERR")" = 1 ]
    # the apmint side is untouched: still proflink's
    run "$INSPECT" --no-threads "$TARGET_PID"
    grep -q "^PASS  storage .*socket \"$SOCK\"" <<<"$output"
}

@test "a provider loaded before proflink keeps the process: proflink stays inactive and says so once" {
    local d=$BATS_TEST_TMPDIR/early
    mkdir "$d"
    # one program image, which reads its own maps
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$d PROFLINK_LOG=info \
        LD_PRELOAD="$OTHER $LIB" cat /proc/self/maps >"$d/out" 2>"$d/err"
    cat "$d/err"
    grep -q elastic-jvmti-linux-proflink "$d/out"
    refute grep -q OTEL_CTX "$d/out"
    [ -z "$(find "$d" -name 'proflink-*')" ]
    [ "$(grep -c "proflink: $OTHER, loaded before proflink, provides the apmint format in this process; proflink stays inactive here" "$d/err")" = 1 ]
    refute grep -q 'active: ' "$d/err"
}

@test "a program that exports otel_thread_ctx_v1 itself keeps it: proflink writes no OTel record into it and publishes no OTel context" {
    local d=$BATS_TEST_TMPDIR/exp
    mkdir "$d"
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$d PROFLINK_LOG=info LD_PRELOAD=$LIB \
        "$BATS_FILE_TMPDIR/otel_exporter" >"$d/out" 2>"$d/err"
    cat "$d/out" "$d/err"
    grep -qx 'main null' "$d/out"
    grep -qx 'thread null' "$d/out"
    grep -qx 'otel_ctx 0' "$d/out"
    [ "$(grep -c "exports otel_thread_ctx_v1 ahead of proflink: proflink leaves the OpenTelemetry thread and process contexts to it" "$d/err")" = 1 ]
    grep -q "^proflink: the program exports otel_thread_ctx_v1" "$d/err"
    # the apmint side is still proflink's
    grep -q 'proflink: active: ' "$d/err"
}

# intake_ticks PID — user+system CPU ticks of PID's proflink-intake thread
intake_ticks() {
    local t
    for t in /proc/"$1"/task/*; do
        [ "$(cat "$t/comm" 2>/dev/null)" = proflink-intake ] || continue
        awk '{ print $14 + $15 }' "$t/stat"
        return 0
    done
    echo "no proflink-intake thread in $1" >&2
    return 1
}

@test "a provider naming proflink's own socket spelt another way: nothing is relayed to it, no datagram loop" {
    # a host of its own whose socket directory is given with a trailing '/'
    local pid canon a b quiet=0
    mkfifo "$BATS_TEST_TMPDIR/in2"
    PROFLINK_LOG=info ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR="$SOCKDIR/" \
        LD_PRELOAD=$LIB "$BATS_FILE_TMPDIR/provider_host" <"$BATS_TEST_TMPDIR/in2" \
        >"$BATS_TEST_TMPDIR/out2" 2>"$BATS_TEST_TMPDIR/err2" 3>&- 8>&- &
    pid=$!
    exec 7>"$BATS_TEST_TMPDIR/in2"
    wait_for_line "$BATS_TEST_TMPDIR/out2" '^ready pid='
    canon=$(socket_of "$pid") # the same file, spelt canonically
    echo "alias $OTHER $canon" >&7
    wait_for_line "$BATS_TEST_TMPDIR/out2" '^aliased'
    echo thread >&7 # proflink notices the block there, and starts its intake to relay
    wait_for_line "$BATS_TEST_TMPDIR/out2" '^thread'
    wait_for_line "$BATS_TEST_TMPDIR/err2" 'published its own apmint process storage'
    cat "$BATS_TEST_TMPDIR/err2"
    intake_ticks "$pid"
    for _ in 1 2 3 4 5; do
        TARGET_PID=$pid SOCK=$canon send corr "$TRACE" "$TXN" "$ID_A" 1
    done
    # a loop keeps the intake on a core for good: wait (10 s at most) until its CPU time stays
    # the same over half a second
    for _ in $(seq 20); do
        a=$(intake_ticks "$pid")
        sleep 0.5
        b=$(intake_ticks "$pid")
        echo "intake ticks $a -> $b"
        if [ "$a" = "$b" ]; then quiet=1; break; fi
    done
    exec 7>&-
    wait "$pid"
    [ "$quiet" = 1 ]
}
