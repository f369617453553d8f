#!/usr/bin/env bats
# variants: glibc musl
# HTTP reading (PROFLINK_HTTP=1): a request lives from its head to the end of its response; the
# response framing (unit), and connections whose bytes go by where proflink cannot see them or
# that are closed behind its back: their requests end, and what later takes their number is not
# read as HTTP. Threads are read from outside with proflink-inspect.
# modules: preload/http/http_scan.c preload/http/http_conn.c preload/http/http_thread.c
# modules: hooks/http_io.c preload/http/http_request_scan.c preload/http/http_response_scan.c
load helpers

TRACE_A=4bf92f3577b34da6a3ce929d0e0e4736
TRACE_B=0af7651916cd43dd8448eb211c80319c
SPAN=00f067aa0ba902b7
tp() { echo "00-$1-$SPAN-01"; }

setup() { setup_sockdir; }
teardown() {
    [ -z "${CONN:-}" ] || exec {CONN}>&-
    [ -z "${UPSTREAM:-}" ] || { kill "$UPSTREAM" 2>/dev/null; wait "$UPSTREAM" 2>/dev/null || true; }
    stop_target
    rm -rf "$SOCKDIR"
}

# traces PID — every trace id a thread of PID shows (apmint or OTel record), empty: none
traces() {
    inspect_json "$1" >/dev/null || true
    jget "' '.join(t['apm']['trace_id'] for t in j['threads'] if t['apm'] and
          (t['apm']['trace_present'] or (t['otel'] and t['otel']['valid'])))"
}

@test "unit: response framing, every framing cut anywhere across writes" {
    libc_independent
    run "$ROOT/build/tests/unit_http_framing"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == *" 0 failures" ]]
}

# start_unseen METHOD — the server of tests/helpers/target_http_unseen.c; sets PORT
start_unseen() {
    PROFLINK_HTTP=1 start_target "$HELPERS/target_http_unseen" "$1" "$(tp $TRACE_B)"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^port '
    PORT=$(sed -n 's/^port //p' "$BATS_TEST_TMPDIR/target.out")
}

# during_work N — three looks at the threads while the server works on step N: what they show
during_work() {
    wait_for_line "$BATS_TEST_TMPDIR/target.out" "^working $1"
    for _ in 1 2 3; do
        traces "$TARGET_PID"
        sleep 0.15
    done | sort -u | xargs
}

@test "a connection closed by fclose, or by the system call itself: a file on its number is not read as HTTP" {
    local m
    for m in fclose rawclose; do
        start_unseen "$m"
        exec {CONN}<>"/dev/tcp/127.0.0.1/$PORT"
        printf 'GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_A)" >&"$CONN"
        # the request's work shows its trace (so the empty look below is not blindness)
        [ "$(during_work 1)" = "$TRACE_A" ]
        wait_for_line "$BATS_TEST_TMPDIR/target.out" '^reused 1'
        # the file's head is not a request, and the closed connection's has ended
        local seen
        seen=$(during_work 2)
        [ -z "$seen" ] || { echo "$m: $seen"; false; }
        exec {CONN}>&-
        CONN=
        stop_target
    done
}

@test "a body spliced to a pipe: what follows is not read as requests (a head inside a body)" {
    start_unseen splice
    exec {CONN}<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'POST / HTTP/1.1\r\ntraceparent: %s\r\nContent-Length: 3000\r\n\r\n%03000d' \
        "$(tp $TRACE_A)" 0 >&"$CONN"
    [ "$(during_work 1)" = "$TRACE_A" ]
    # the next request's body holds a head with trace B exactly 3000 bytes after that request's
    # start: where a scanner that took the spliced body for unread would look for a head
    "$PY" - "$(tp $TRACE_B)" >&"$CONN" <<'PYEOF'
import sys
fake = ("GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n" % sys.argv[1]).encode()
head = b"POST / HTTP/1.1\r\nContent-Length: %04d\r\n\r\n"
pad = 3000 - len(head % 0)
sys.stdout.buffer.write(head % (pad + len(fake)) + b"x" * pad + fake)
PYEOF
    local seen
    seen=$(during_work 2)
    [ -z "$seen" ] || { echo "during request 2: $seen"; false; }
}

@test "an answer written on a dup() of the connection: the next request does not run under the answered one's trace" {
    start_unseen dup
    exec {CONN}<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_A)" >&"$CONN"
    [ "$(during_work 1)" = "$TRACE_A" ]
    local answer
    read -r -t 10 answer <&"$CONN"
    [[ "$answer" == "HTTP/1.1 200 OK"* ]]
    printf 'GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_B)" >&"$CONN"
    local seen
    seen=$(during_work 2)
    [ -z "$seen" ] || { echo "during request 2: $seen"; false; }
}

# shows PID TID — the trace id thread TID of PID shows (empty: none)
shows() {
    inspect_json "$1" >/dev/null || true
    jget "' '.join(t['apm']['trace_id'] for t in j['threads'] if t['tid'] == $2 and t['apm']
          and t['apm']['trace_present'])"
}

@test "a worker answering what another thread read shows that request until its answer ends" {
    PROFLINK_HTTP=1 start_target "$HELPERS/target_http_adopt"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^port '
    PORT=$(sed -n 's/^port //p' "$BATS_TEST_TMPDIR/target.out")
    exec {CONN}<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET / HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_A)" >&"$CONN"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^working 1 '
    local worker
    worker=$(sed -n 's/^working 1 //p' "$BATS_TEST_TMPDIR/target.out")
    # between the answer's first bytes and its last, the worker works for that request
    [ "$(shows "$TARGET_PID" "$worker")" = "$TRACE_A" ]
    sleep 0.3
    [ "$(shows "$TARGET_PID" "$worker")" = "$TRACE_A" ]
    # the last chunk is written: the request is over for the worker (the reader, blocked in
    # read() meanwhile, drops it when that call returns: no sample of it can be taken before)
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^working 2 '
    [ -z "$(shows "$TARGET_PID" "$worker")" ]
}

# proxy_conf DIR — nginx, one worker, on unix sockets under DIR (no TCP port), proxying to the
# upstream at DIR/up.sock and compressing its answers at gzip level 9: the worker's CPU goes to
# compressing a response whose bytes come from a connection it did not accept
proxy_conf() {
    local d=$1
    mkdir -p "$d/tmp"
    cat >"$d/nginx.conf" <<NGX
user root;
worker_processes 1;
daemon off;
master_process on;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fcgi; uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;
    server {
        listen unix:$d/front.sock;
        location / { proxy_pass http://unix:$d/up.sock:; }
        gzip on; gzip_comp_level 9; gzip_types *; gzip_proxied any; gzip_min_length 0;
    }
}
NGX
}

@test "nginx proxy + gzip: tiny requests beside a large compressed answer never lend their trace to its work" {
    libc_independent
    command -v nginx >/dev/null || skip "nginx is not installed"
    local d=$BATS_TEST_TMPDIR/ngx victim=4bf92f3577b34da6a3ce929d0e0e4736
    local attacker=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    proxy_conf "$d"
    "$PY" "$ROOT/tests/http_upstream.py" "$d/up.sock" >"$d/up.out" 2>&1 3>&- &
    UPSTREAM=$!
    wait_for_line "$d/up.out" '^listening'
    PROFLINK_HTTP=1 start_target nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf"
    for _ in $(seq 100); do [ -S "$d/front.sock" ] && pgrep -P "$TARGET_PID" >/dev/null && break; sleep 0.05; done
    local worker
    worker=$(pgrep -P "$TARGET_PID")
    inspect_json "$worker" --no-threads
    local off
    off=$(jget 'j["tls_offset"]')
    # the victim: three large compressed answers one after the other; beside it, the
    # attacker's stream of tiny requests, each on its own connection
    (for _ in 1 2 3; do
        curl -s -o /dev/null --unix-socket "$d/front.sock" -H 'Accept-Encoding: gzip' \
            -H "traceparent: $(tp $victim)" http://x/big
    done) 3>&- &
    local vpid=$!
    (while kill -0 "$vpid" 2>/dev/null; do
        curl -s -o /dev/null --unix-socket "$d/front.sock" -H "traceparent: $(tp $attacker)" http://x/tiny
    done) 3>&- &
    local apid=$!
    "$ROOT/build/tests/http_sampler" 1000 "$off" "$d/samples" "$worker" 3>&- &
    local spid=$!
    wait "$vpid"
    kill "$spid"; wait "$spid" || true
    wait "$apid" || true
    kill "$UPSTREAM"; wait "$UPSTREAM" 2>/dev/null || true
    local total vic att
    total=$(wc -l <"$d/samples")
    vic=$(grep -c " $victim\$" "$d/samples" || true)
    att=$(grep -c " $attacker\$" "$d/samples" || true)
    echo "worker samples: $total, victim's trace: $vic, attacker's: $att"
    [ "$total" -gt 500 ]
    # the attacker's requests are answered at once: only while one is open alone (between
    # two of the victim's answers) may its trace show; never during the victim's work
    [ "$att" -le $((total / 100)) ]
    [ "$vic" -gt $((total / 5)) ]
}

@test "hostile client: 32 held requests on an event loop never lend their trace to another client's work" {
    # the attacker fills the thread's 32 notes with requests that never end; the victim's
    # connection then has no note (lost); once the attacker closes all but one, the victim's
    # later work must not show the one left
    PROFLINK_HTTP=1 start_target "$HELPERS/target_http_hold"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^port '
    PORT=$(sed -n 's/^port //p' "$BATS_TEST_TMPDIR/target.out")
    local fds=() fd
    for _ in $(seq 32); do
        exec {fd}<>"/dev/tcp/127.0.0.1/$PORT"
        printf 'GET /hold HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_A)" >&"$fd"
        fds+=("$fd")
    done
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^held 32$'
    exec {CONN}<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET /work?ms=1 HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_B)" >&"$CONN"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^worked 1$'
    for fd in "${fds[@]:1}"; do exec {fd}>&-; done
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^closed 31$'
    printf 'GET /work?ms=3000 HTTP/1.1\r\ntraceparent: %s\r\n\r\n' "$(tp $TRACE_B)" >&"$CONN"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^working 2$'
    local seen=()
    for _ in 1 2 3 4 5; do
        seen+=("$(shows "$TARGET_PID" "$TARGET_PID")")
        sleep 0.2
    done
    echo "shown during the victim's work: ${seen[*]}"
    fd=${fds[0]}
    exec {fd}>&-
    [[ " ${seen[*]} " != *"$TRACE_A"* ]]
}

@test "hostile client: a HEAD smuggled in a GET's body never leaves its trace on a hand-off server's workers" {
    libc_independent # python3 is a glibc program
    # the server does not read GET bodies: it answers the smuggled HEAD too, with a head only,
    # when no request proflink saw is open; the attacker's next request is then answered by a
    # worker that adopts it, and must not keep showing it once its answer has arrived
    PROFLINK_HTTP=1 start_target "$PY" "$ROOT/tests/http_matrix_servers.py" handoff \
        "$BATS_TEST_TMPDIR/work.log"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^port '
    PORT=$(sed -n 's/^port //p' "$BATS_TEST_TMPDIR/target.out")
    "$PY" - "$PORT" "$(tp $TRACE_A)" >"$BATS_TEST_TMPDIR/attacker.out" 2>&1 3>&- <<'PYEOF' &
import socket, sys, time
port, tp = int(sys.argv[1]), sys.argv[2]
c = socket.create_connection(("127.0.0.1", port))
smuggled = b"HEAD /big?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n"
c.sendall(b"GET /work?ms=0 HTTP/1.1\r\ntraceparent: %s\r\nContent-Length: %d\r\n\r\n%s"
          % (tp.encode(), len(smuggled), smuggled))
def read_until(data, want):
    while data.count(b"\r\n\r\n") < want:
        data += c.recv(65536)
    return data
got = read_until(b"", 2)  # the GET's answer, then the HEAD's head
c.sendall(b"GET /work?ms=200 HTTP/1.1\r\ntraceparent: %s\r\n\r\n" % tp.encode())
got = read_until(got, 3)
while not got.endswith(b"ok"):
    got += c.recv(65536)
print("answered", flush=True)
time.sleep(30)  # the connection stays open, with nothing of the attacker's open
PYEOF
    local attacker=$!
    wait_for_line "$BATS_TEST_TMPDIR/attacker.out" '^answered'
    # the workers (the reader, blocked in select since it read the last request, keeps it
    # until that call returns, as documented in docs/http.md)
    local seen=()
    for _ in 1 2 3; do
        inspect_json "$TARGET_PID" >/dev/null || true
        seen+=("$(jget "' '.join(t['apm']['trace_id'] for t in j['threads'] if t['apm'] and
                       t['apm']['trace_present'] and t['tid'] != $TARGET_PID)")")
    done
    echo "shown by the workers after the attacker's last answer: ${seen[*]}"
    kill "$attacker"
    wait "$attacker" || true
    [[ " ${seen[*]} " != *"$TRACE_A"* ]]
}

@test "randomised: one server thread, many clients' reads, writes, closes and waits: it never shows a request it may not be working on" {
    # tests/helpers/api_http_invariant.c: ground truth from the server's own bookkeeping, the
    # thread's record read after every step; 8 seeds of 200000 steps
    local seed shown=0
    for seed in 1 2 3 4 5 6 7 8; do
        run env PROFLINK_HTTP=1 LD_PRELOAD="$LIB" "$HELPERS/api_http_invariant" "$seed" 200000
        echo "seed $seed: $output"
        [ "$status" -eq 0 ]
        shown=$((shown + $(sed -n 's/^ok .* shown=//p' <<<"$output")))
    done
    # the checks ran on shown requests, not only on "none"
    [ "$shown" -gt 1000 ]
}

@test "hostile client: 32 held requests on nginx (1 worker, gzip) never lend their trace to another client's work" {
    libc_independent
    command -v nginx >/dev/null || skip "nginx is not installed"
    local d=$BATS_TEST_TMPDIR/ngx
    proxy_conf "$d"
    "$PY" "$ROOT/tests/http_upstream.py" "$d/up.sock" >"$d/up.out" 2>&1 3>&- &
    UPSTREAM=$!
    wait_for_line "$d/up.out" '^listening'
    PROFLINK_HTTP=1 start_target nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf"
    for _ in $(seq 100); do [ -S "$d/front.sock" ] && pgrep -P "$TARGET_PID" >/dev/null && break; sleep 0.05; done
    local worker off
    worker=$(pgrep -P "$TARGET_PID")
    inspect_json "$worker" --no-threads
    off=$(jget 'j["tls_offset"]')
    # the attacker: 32 requests whose bodies never come; the victim, once they are held, one
    # request on its connection (no note: lost); then the attacker closes all but one and the
    # victim asks for three large compressed answers on the same connection
    "$PY" - "$d/front.sock" "$(tp $TRACE_A)" "$(tp $TRACE_B)" >"$d/clients.out" 2>&1 3>&- <<'PYEOF' &
import socket, sys, time
path, attacker, victim = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
def conn():
    c = socket.socket(socket.AF_UNIX)
    c.connect(path)
    return c
held = []
for _ in range(32):
    c = conn()
    c.sendall(b"POST /tiny HTTP/1.1\r\nHost: x\r\ntraceparent: %s\r\nContent-Length: 100000\r\n\r\n"
              % attacker)
    held.append(c)
time.sleep(1)  # nginx reads them all
print("held", flush=True)
time.sleep(0.5)  # the sampler starts
v = conn()
def ask(what):
    v.sendall(b"GET /%s HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\ntraceparent: %s\r\n\r\n"
              % (what, victim))
    buf = b""
    while b"\r\n0\r\n\r\n" not in buf and not (b"\r\n\r\n" in buf and b"chunked" not in buf
                                                 and buf.endswith(b"ok")):
        buf += v.recv(1 << 20)
ask(b"tiny")
for c in held[1:]:
    c.close()
time.sleep(0.5)
for _ in range(3):
    ask(b"big")
print("done", flush=True)
PYEOF
    local clients=$!
    wait_for_line "$d/clients.out" '^held'
    "$ROOT/build/tests/http_sampler" 1000 "$off" "$d/samples" "$worker" 3>&- &
    local spid=$!
    wait "$clients"
    kill "$spid"; wait "$spid" || true
    cat "$d/clients.out"
    local total att vic
    total=$(wc -l <"$d/samples")
    att=$(grep -c " $TRACE_A\$" "$d/samples" || true)
    vic=$(grep -c " $TRACE_B\$" "$d/samples" || true)
    echo "worker samples: $total, attacker's trace: $att, victim's: $vic"
    [ "$total" -gt 500 ]
    [ "$att" -le $((total / 100)) ]
}
