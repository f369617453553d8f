#!/usr/bin/env bats
# variants: glibc musl
# HTTP reading (PROFLINK_HTTP=1): unmodified servers under the library; requests carry distinct
# traceparent headers and do CPU work in the serving thread; proflink-inspect reads every
# thread's records from outside during that work and after it.
# modules: hooks/http_io.c preload/http/http_conn.c preload/http/http_scan.c
# modules: preload/http/http_thread.c hooks/fd_reuse.c
# modules: preload/http/http_request_scan.c preload/http/http_response_scan.c
load helpers

TRACE_A=4bf92f3577b34da6a3ce929d0e0e4736
TRACE_B=0af7651916cd43dd8448eb211c80319c
TRACE_C=5a3e1d7c9b8f4e2a6c0d1b3f5e7a9c11
SPAN=00f067aa0ba902b7
tp() { echo "00-$1-$SPAN-01"; }

setup() {
    setup_sockdir
    PORT=$(free_port)
}
teardown() {
    local p
    for p in ${CLIENT_PIDS:-}; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    stop_target
    rm -rf "$SOCKDIR"
}

# wait_port PORT — until something listens there (10 s)
wait_port() {
    for _ in $(seq 200); do
        (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nothing listens on $1" >&2
    return 1
}

# traced_tids PID TRACE — the threads of PID whose apmint and OTel records both show TRACE (a PID
# that cannot be read prints why, in parentheses: never empty)
traced_tids() {
    inspect_json "$1" >/dev/null || { echo "(pid $1 could not be read)"; return 1; }
    jget "' '.join(str(t['tid']) for t in j['threads'] if t['apm'] and t['apm']['valid'] == 1
          and t['apm']['trace_present'] == 1 and t['apm']['trace_id'] == '$2'
          and t['apm']['span_id'] == '$SPAN' and t['apm']['transaction_id'] == '$SPAN'
          and t['otel'] and t['otel']['trace_id'] == '$2')"
}

# any_traced PID — every trace id present on a thread of PID (empty: none; a PID that cannot be
# read, dead or gone, prints why: never empty, so `[ -z "$(any_traced PID)" ]` fails then)
any_traced() {
    inspect_json "$1" >/dev/null || { echo "(pid $1 could not be read)"; return 1; }
    jget "' '.join(t['apm']['trace_id'] for t in j['threads'] if t['apm'] and
          (t['apm']['trace_present'] or (t['otel'] and t['otel']['valid'])))"
}

# wait_traced PID TRACE — polls until one thread shows TRACE (15 s); prints its tid
wait_traced() {
    local tids
    for _ in $(seq 150); do
        tids=$(traced_tids "$1" "$2") || tids= # not readable (yet): try again
        if [ -n "$tids" ]; then echo "$tids"; return 0; fi
        sleep 0.1
    done
    echo "no thread of $1 showed trace $2" >&2
    "$INSPECT" "$1" >&2 || true
    return 1
}

# nthreads PID — threads of PID
nthreads() { find "/proc/$1/task" -mindepth 1 -maxdepth 1 | wc -l; }

start_server() {
    PROFLINK_HTTP=1 start_target "$@"
    wait_port "$PORT"
}

@test "python ThreadingHTTPServer: the serving thread shows each request's trace during its work, none after" {
    libc_independent
    start_server "$PY" "$ROOT/tests/helpers/http_spin_server.py" "$PORT" HTTP/1.0
    local t tid
    # two requests, two traces, a thread each
    for t in $TRACE_A $TRACE_B; do
        curl -s -H "traceparent: $(tp "$t")" "http://127.0.0.1:$PORT/spin?ms=3000" \
            >"$BATS_TEST_TMPDIR/$t" 3>&- &
        CLIENT_PIDS=$!
        tid=$(wait_traced "$TARGET_PID" "$t")
        wait "$CLIENT_PIDS"
        CLIENT_PIDS=
        # the answer names the thread that served it: the one that showed the trace
        [ "$(cat "$BATS_TEST_TMPDIR/$t")" = "$tid" ]
        [ -z "$(any_traced "$TARGET_PID")" ]
    done
}

@test "python: no header, a malformed one or two of them carry no trace while the request works" {
    libc_independent
    start_server "$PY" "$ROOT/tests/helpers/http_spin_server.py" "$PORT" HTTP/1.0
    local h
    for h in "" "traceparent: 00-${TRACE_A}-${SPAN}" "traceparent: 01-$TRACE_A-$SPAN-01" \
             "TraceParent: 00-${TRACE_A^^}-$SPAN-01" "traceparent: 00-$TRACE_A-0000000000000000-01"; do
        curl -s ${h:+-H "$h"} "http://127.0.0.1:$PORT/spin?ms=1500" >"$BATS_TEST_TMPDIR/r" 3>&- &
        CLIENT_PIDS=$!
        # the serving thread exists (2 threads) and is working: sample it several times
        for _ in $(seq 100); do [ "$(nthreads "$TARGET_PID")" -ge 2 ] && break; sleep 0.05; done
        [ "$(nthreads "$TARGET_PID")" -ge 2 ]
        for _ in 1 2 3; do
            [ -z "$(any_traced "$TARGET_PID")" ]
            sleep 0.2
        done
        wait "$CLIENT_PIDS"
        CLIENT_PIDS=
    done
    # two traceparent headers: ambiguous, none
    curl -s -H "traceparent: $(tp $TRACE_A)" -H "traceparent: $(tp $TRACE_B)" \
        "http://127.0.0.1:$PORT/spin?ms=1500" >/dev/null 3>&- &
    CLIENT_PIDS=$!
    sleep 0.5
    [ -z "$(any_traced "$TARGET_PID")" ]
    wait "$CLIENT_PIDS"
    # the same server does show a well-formed, case-insensitive header name (the checks above
    # could not pass only because reading is off)
    curl -s -H "TRACEPARENT: $(tp $TRACE_C)" "http://127.0.0.1:$PORT/spin?ms=2000" >/dev/null 3>&- &
    CLIENT_PIDS=$!
    wait_traced "$TARGET_PID" "$TRACE_C"
}

@test "C thread-per-connection server: concurrent requests, each thread its own trace" {
    start_server "$HELPERS/target_http_server" "$PORT"
    local t
    for t in $TRACE_A $TRACE_B $TRACE_C; do
        curl -s -H "traceparent: $(tp "$t")" "http://127.0.0.1:$PORT/spin?ms=4000" \
            >"$BATS_TEST_TMPDIR/$t" 3>&- &
        CLIENT_PIDS="${CLIENT_PIDS:-} $!"
    done
    declare -A seen
    for t in $TRACE_A $TRACE_B $TRACE_C; do
        seen[$t]=$(wait_traced "$TARGET_PID" "$t")
        [ "$(echo "${seen[$t]}" | wc -w)" -eq 1 ]
    done
    # three different threads
    [ "$(printf '%s\n' "${seen[@]}" | sort -u | wc -l)" -eq 3 ]
    for p in $CLIENT_PIDS; do wait "$p"; done
    CLIENT_PIDS=
    for t in $TRACE_A $TRACE_B $TRACE_C; do
        [ "$(cat "$BATS_TEST_TMPDIR/$t")" = "${seen[$t]}" ]
    done
    [ -z "$(any_traced "$TARGET_PID")" ]
}

@test "C server: a head split over several reads, the cut inside the traceparent line" {
    start_server "$HELPERS/target_http_server" "$PORT"
    "$PY" "$ROOT/tests/http_client.py" "$PORT" 3000 "$(tp $TRACE_B)" --split 4 \
        >"$BATS_TEST_TMPDIR/out" 3>&- &
    CLIENT_PIDS=$!
    tid=$(wait_traced "$TARGET_PID" "$TRACE_B")
    wait "$CLIENT_PIDS"
    CLIENT_PIDS=
    [ "$(cat "$BATS_TEST_TMPDIR/out")" = "done 0 $tid" ]
}

@test "C server: keep-alive sequence of traces, no header, malformed; none between requests" {
    start_server "$HELPERS/target_http_server" "$PORT"
    local pause=$BATS_TEST_TMPDIR/go out=$BATS_TEST_TMPDIR/out
    "$PY" "$ROOT/tests/http_client.py" "$PORT" 2500 \
        "$(tp $TRACE_A),-,00-$TRACE_B-$SPAN-zz,$(tp $TRACE_C)" --pause "$pause" >"$out" 3>&- &
    CLIENT_PIDS=$!
    # 1: traced; after it, the thread waits in read() on the open connection: no trace
    tid=$(wait_traced "$TARGET_PID" "$TRACE_A")
    wait_for_line "$out" "^done 0 $tid\$"
    [ -z "$(any_traced "$TARGET_PID")" ]
    # 2 (no header) and 3 (malformed): the same thread works without a trace
    local i
    for i in 1 2; do
        touch "$pause.$i"
        sleep 0.6
        [ -d "/proc/$TARGET_PID/task/$tid" ]
        [ -z "$(any_traced "$TARGET_PID")" ]
        wait_for_line "$out" "^done $i $tid\$"
    done
    # 4: traced again, on the same thread
    touch "$pause.3"
    [ "$(wait_traced "$TARGET_PID" "$TRACE_C")" = "$tid" ]
    wait "$CLIENT_PIDS"
    CLIENT_PIDS=
    grep -q "^done 3 $tid\$" "$out"
}

@test "without PROFLINK_HTTP a traced request leaves every record empty" {
    start_target "$HELPERS/target_http_server" "$PORT"
    wait_port "$PORT"
    curl -s -H "traceparent: $(tp $TRACE_A)" "http://127.0.0.1:$PORT/spin?ms=1500" >/dev/null 3>&- &
    CLIENT_PIDS=$!
    for _ in $(seq 100); do [ "$(nthreads "$TARGET_PID")" -ge 2 ] && break; sleep 0.05; done
    [ "$(nthreads "$TARGET_PID")" -ge 2 ]
    [ -z "$(any_traced "$TARGET_PID")" ]
    wait "$CLIENT_PIDS"
}

@test "the stats count requests with and without a valid header; pipelined heads each count" {
    PROFLINK_HTTP=1 start_target "$HELPERS/api_http_reader" "$PORT"
    wait_port "$PORT"
    "$PY" - "$PORT" <<PYEOF
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
req = lambda tp: ("POST / HTTP/1.1\r\nHost: x\r\n" + ("traceparent: %s\r\n" % tp if tp else "")
                  + "Content-Length: 5\r\n\r\nGET /").encode()
chunked = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nGET /\r\n0\r\nT: 1\r\n\r\n"
s.sendall(req("$(tp $TRACE_A)") + req(None) + chunked + req("00-bad") + req("$(tp $TRACE_B)"))
s.close()
PYEOF
    wait_for_line "$BATS_TEST_TMPDIR/target.out" "^stats traced=2 untraced=3\$"
}

@test "a tracer's API context wins over what the thread reads" {
    PROFLINK_HTTP=1 start_target "$HELPERS/api_http_reader" "$PORT" "$(tp $TRACE_C)"
    wait_port "$PORT"
    exec {conn}<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_A)" >&"$conn"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" "^got "
    [ "$(traced_tids "$TARGET_PID" "$TRACE_C")" = "$TARGET_PID" ]
    [ -z "$(traced_tids "$TARGET_PID" "$TRACE_A")" ]
    exec {conn}>&-
}

@test "a single-threaded reader shows what it read until it closes the connection" {
    PROFLINK_HTTP=1 start_target "$HELPERS/api_http_reader" "$PORT" - once
    wait_port "$PORT"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" "^closed"
    exec {conn}<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_A)" >&"$conn"
    [ "$(wait_traced "$TARGET_PID" "$TRACE_A")" = "$TARGET_PID" ]
    # it closes the connection and sleeps: the context ended with the connection
    for _ in $(seq 100); do
        [ "$(grep -c '^closed' "$BATS_TEST_TMPDIR/target.out")" -ge 2 ] && break
        sleep 0.05
    done
    [ "$(grep -c '^closed' "$BATS_TEST_TMPDIR/target.out")" -ge 2 ]
    [ -z "$(any_traced "$TARGET_PID")" ]
    exec {conn}>&-
}

# worker_traces MASTER — "pid:trace" for every worker thread with a trace
worker_traces() {
    local w out=
    pgrep -P "$1" >/dev/null || { echo "(no workers of $1)"; return 1; }
    for w in $(pgrep -P "$1"); do
        inspect_json "$w" >/dev/null || { echo "(worker $w could not be read)"; return 1; }
        out+=$(jget "' '.join('$w:' + t['apm']['trace_id'] for t in j['threads'] if t['apm']
                     and t['apm']['trace_present'])")" "
    done
    echo "$out" | xargs
}

@test "nginx (master + event-loop workers): the worker busy with a request shows its trace, none after" {
    libc_independent
    command -v nginx >/dev/null || skip "nginx is not installed"
    local d=$BATS_TEST_TMPDIR/nginx t got hdr
    nginx_conf "$d" root "127.0.0.1:$PORT" 400M
    PROFLINK_HTTP=1 start_target nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf"
    wait_port "$PORT"
    for t in $TRACE_A $TRACE_B -; do
        hdr=()
        if [ "$t" != - ]; then hdr=(-H "traceparent: $(tp "$t")"); fi
        curl -s -D "$d/headers" -o /dev/null -H 'Accept-Encoding: gzip' "${hdr[@]}" \
            "http://127.0.0.1:$PORT/big" 3>&- &
        CLIENT_PIDS=$!
        got=
        if [ "$t" = - ]; then
            # the request is being compressed (a worker on the CPU): no worker shows a trace
            for _ in $(seq 100); do
                pgrep -r R -P "$TARGET_PID" >/dev/null && break
                sleep 0.05
            done
            for _ in 1 2 3; do
                [ -z "$(worker_traces "$TARGET_PID")" ]
                sleep 0.2
            done
        else
            for _ in $(seq 150); do
                got=$(worker_traces "$TARGET_PID")
                [ -n "$got" ] && break
                sleep 0.1
            done
            # exactly one worker thread, with this request's trace
            [ "${got#*:}" = "$t" ]
        fi
        wait "$CLIENT_PIDS"
        CLIENT_PIDS=
        # the worker that answered (X-Worker) is the one that showed the trace
        if [ "$t" != - ]; then
            grep -qi "^x-worker: ${got%%:*}"$'\r'"\$" "$d/headers"
        fi
        # back in epoll_wait: none
        [ -z "$(worker_traces "$TARGET_PID")" ]
    done
    # keep-alive: after each answer the connection stays open and its worker waits: none
    local pause=$d/go out=$d/client.out
    "$PY" "$ROOT/tests/http_client.py" "$PORT" 0 "$(tp $TRACE_A),$(tp $TRACE_B)" \
        --path /small --pause "$pause" >"$out" 3>&- &
    CLIENT_PIDS=$!
    wait_for_line "$out" "^done 0 6 bytes"
    sleep 0.3
    [ -z "$(worker_traces "$TARGET_PID")" ]
    touch "$pause.1"
    wait "$CLIENT_PIDS"
    CLIENT_PIDS=
    grep -q "^done 1 6 bytes" "$out"
}

@test "proflink-inspect tells whether HTTP reading is on" {
    libc_independent
    PROFLINK_HTTP=1 start_target sleep 30
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["http_reading"]')" = true ]
    run "$INSPECT" --no-threads "$TARGET_PID"
    [[ "$output" == *"INFO  http     traceparent of HTTP/1.x and HTTP/2 requests read"* ]]
    stop_target
    start_target sleep 30
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["http_reading"]')" = false ]
    stop_target
    # disabled: nothing is active, so nothing is read either
    PROFLINK_HTTP=1 ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false \
        LD_PRELOAD=$LIB sleep 30 3>&- &
    TARGET_PID=$!
    sleep 0.3
    inspect_json "$TARGET_PID" --no-threads || true
    [ "$(jget 'j["http_reading"]')" = false ]
}

@test "proflink-run --http -- python3 -m http.server: proflink-agent attributes samples to each request's trace" {
    libc_independent
    [ "$VARIANT" = glibc ] || skip "python3 is a glibc program"
    local d=$BATS_TEST_TMPDIR/www t
    mkdir -p "$d"
    head -c 150M /dev/zero >"$d/big.bin"
    (cd "$d" && exec "$ROOT/scripts/proflink-run" --http -- "$PY" -m http.server "$PORT" \
        --bind 127.0.0.1) >"$BATS_TEST_TMPDIR/target.out" 2>&1 3>&- &
    TARGET_PID=$!
    wait_port "$PORT"
    # requests of both traces, one after the other, for as long as the agent samples (a fixed
    # number of them could be over before it attaches, or run while a loaded machine left no
    # sample to them)
    (while [ ! -e "$BATS_TEST_TMPDIR/sampled" ]; do
        for t in $TRACE_A $TRACE_B; do
            curl -s -o /dev/null -H "traceparent: $(tp "$t")" "http://127.0.0.1:$PORT/big.bin"
        done
    done) 3>&- &
    CLIENT_PIDS=$!
    timeout 60 "$ROOT/build/proflink-agent" -d 6 "$TARGET_PID" >"$BATS_TEST_TMPDIR/agent" 2>&1
    touch "$BATS_TEST_TMPDIR/sampled"
    wait "$CLIENT_PIDS"
    CLIENT_PIDS=
    sed -n '/^Transactions/,$p' "$BATS_TEST_TMPDIR/agent" | grep '^  ' >"$BATS_TEST_TMPDIR/txns" || true
    cat "$BATS_TEST_TMPDIR/agent" >&2
    # both requests' traces, with the caller's span as transaction, and nothing else
    grep -q "^  $TRACE_A $SPAN:" "$BATS_TEST_TMPDIR/txns"
    grep -q "^  $TRACE_B $SPAN:" "$BATS_TEST_TMPDIR/txns"
    every_line "$BATS_TEST_TMPDIR/txns" . "^  ($TRACE_A|$TRACE_B) $SPAN:"
}

@test "a pipe put on a connection's number (dup2, dup3, close_range, closefrom, syscall) is not read as the connection" {
    local m methods=(dup2 dup3 close_range closefrom syscall_close)
    # musl has no close_range or closefrom functions: programs make those system calls through
    # syscall(), which syscall_close covers
    if [ "$VARIANT" = musl ]; then methods=(dup2 dup3 syscall_close); fi
    for m in "${methods[@]}"; do
        PROFLINK_HTTP=1 start_target "$HELPERS/target_http_fdover" "$PORT" "$m" "$(tp $TRACE_B)"
        wait_for_line "$BATS_TEST_TMPDIR/target.out" '^listening'
        exec {conn}<>"/dev/tcp/127.0.0.1/$PORT"
        printf 'GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_A)" >&"$conn"
        wait_for_line "$BATS_TEST_TMPDIR/target.out" '^read-pipe '
        grep -qE '^read-pipe [1-9]' "$BATS_TEST_TMPDIR/target.out"
        # neither the connection's trace (it is gone) nor the one in the pipe's bytes
        traced=$(any_traced "$TARGET_PID")
        [ -z "$traced" ] || { echo "$m: $traced"; false; }
        exec {conn}>&-
        stop_target
    done
}
