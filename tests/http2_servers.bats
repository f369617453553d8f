#!/usr/bin/env bats
# serial: servers burn CPU while every thread's record is sampled at 1 kHz from outside
# Unmodified HTTP/2 servers under PROFLINK_HTTP=1 (plaintext, prior knowledge), through the HTTP
# matrix (tests/http_matrix.py: every request with its own traceparent, ground truth from the
# servers' own logs, samples read from outside): a stream is shown while it is the one its
# connection has open, never another stream's trace; hostile clients change no answer.
# modules: preload/http/h2_conn.c hooks/http_io.c hooks/ssl_io.c preload/http/http_conn.c preload/http/http_thread.c
# Upgrade: h2c against tests/http2_upgrade.py (both ends written out there); nginx http2 (h2c)
# proxying with gzip, sampled as tests/http_requests.bats does over HTTP/1.x.
load helpers

setup() { setup_sockdir; }
teardown() {
    [ -z "${UPSTREAM:-}" ] || { kill "$UPSTREAM" 2>/dev/null; wait "$UPSTREAM" 2>/dev/null || true; }
    stop_target
    rm -rf "$SOCKDIR"
}

# matrix WANT_CORRECT SHAPE:N… — runs the shapes; every one: wrong <= 1%, >= 50 samples, no
# client error; those in WANT_CORRECT (space-separated SHAPE:N) also >= 90% correct
matrix() {
    command -v node >/dev/null || skip "node is not installed"
    "$PY" "$ROOT/tests/http_matrix.py" --seconds 2 --json "$BATS_TEST_TMPDIR/m.json" "${@:2}" \
        >"$BATS_TEST_TMPDIR/table" 3>&-
    cat "$BATS_TEST_TMPDIR/table"
    "$PY" - "$BATS_TEST_TMPDIR/m.json" "$1" <<'PYEOF'
import json, sys
rows, want90 = json.load(open(sys.argv[1])), sys.argv[2].split()
bad = []
for r in rows:
    key = "%s:%d" % (r["shape"], r["inflight"])
    if r["client_errors"] or r["samples"] < 50:
        bad.append("%s: %d samples, %d client errors" % (key, r["samples"], r["client_errors"]))
    if r["wrong_pct"] > 1.0:
        bad.append("%s: %.1f%% wrong" % (key, r["wrong_pct"]))
    if key in want90 and r["correct_pct"] < 90:
        bad.append("%s: %.1f%% correct, want >= 90" % (key, r["correct_pct"]))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
}

@test "Node http2 h2c: one stream in flight is shown (>= 90% correct); never another stream's trace" {
    matrix "node_h2_sync:1 node_h2_immediate:1 node_h2_streams:1" \
        node_h2_sync:1 node_h2_sync:4 node_h2_immediate:1 node_h2_immediate:4 \
        node_h2_streams:1 node_h2_streams:4
}

@test "Upgrade: h2c: the upgraded request and the streams after it are shown (>= 90% correct), never a wrong trace" {
    matrix "py_h2c_upgrade:1 py_h2c_upgrade:4" py_h2c_upgrade:1 py_h2c_upgrade:4
}

@test "h2 over TLS (ALPN h2, Python's ssl on both ends): every stream shown (>= 90% correct), never a wrong trace" {
    command -v openssl >/dev/null || skip "the openssl command is not installed (scripts/deps.sh)"
    matrix "py_h2_tls:1 py_h2_tls:4 py_h2_tls:16" py_h2_tls:1 py_h2_tls:4 py_h2_tls:16
}

@test "Node http2 h2c: header blocks over 16 KiB give the connection up, never a wrong trace" {
    matrix "" node_h2_huge_headers:1 node_h2_huge_headers:4
    "$PY" - "$BATS_TEST_TMPDIR/m.json" <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))
sys.exit(1 if any(r["correct"] or r["wrong"] for r in rows) else 0)
PYEOF
}

@test "Node http2 h2c: hostile clients get the same answers, byte for byte, with and without proflink" {
    command -v node >/dev/null || skip "node is not installed"
    run "$PY" "$ROOT/tests/http2_hostile.py" "$LIB"
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "gRPC in Node (@grpc/grpc-js): one call in flight is shown (>= 90% correct); never another call's trace" {
    [ -f "$ROOT/tests/grpc/node_modules/@grpc/grpc-js/package.json" ] ||
        skip "@grpc/grpc-js is not installed: run tests/grpc/install.sh (scripts/deps.sh check)"
    matrix "grpc_node:1 grpc_node_streams:1" grpc_node:1 grpc_node:4 grpc_node_streams:4
}

@test "gRPC in Python (grpcio): handlers on worker threads are missed, never wrong" {
    [ -x "$ROOT/build/grpcenv/bin/python" ] ||
        skip "build/grpcenv is missing: run tests/grpc/install.sh (scripts/deps.sh check)"
    [ -f "$ROOT/tests/grpc/node_modules/@grpc/grpc-js/package.json" ] ||
        skip "@grpc/grpc-js (the client) is not installed: run tests/grpc/install.sh"
    matrix "" grpc_python:1 grpc_python:4
}

@test "nginx http2 (h2c) proxy + gzip: tiny requests beside a large compressed answer never lend their trace to its work" {
    libc_independent
    command -v nginx >/dev/null || skip "nginx is not installed"
    curl -V | grep -q nghttp2 || skip "curl has no HTTP/2 (nghttp2)"
    local d=$BATS_TEST_TMPDIR/ngx span=00f067aa0ba902b7
    local victim=4bf92f3577b34da6a3ce929d0e0e4736 attacker=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    mkdir -p "$d/tmp"
    # one worker on unix sockets (no TCP port), HTTP/2 with prior knowledge, proxying to the
    # upstream at DIR/up.sock and compressing its answers at gzip level 9: the worker's CPU
    # goes to compressing a response whose bytes come from a connection it did not accept
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
        listen unix:$d/front.sock http2;
        location / { proxy_pass http://unix:$d/up.sock:; }
        gzip on; gzip_comp_level 9; gzip_types *; gzip_proxied any; gzip_min_length 0;
    }
}
NGX
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
        curl -s -o /dev/null --http2-prior-knowledge --unix-socket "$d/front.sock" \
            -H 'Accept-Encoding: gzip' -H "traceparent: 00-$victim-$span-01" http://x/big
    done) 3>&- &
    local vpid=$!
    (while kill -0 "$vpid" 2>/dev/null; do
        curl -s -o /dev/null --http2-prior-knowledge --unix-socket "$d/front.sock" \
            -H "traceparent: 00-$attacker-$span-01" http://x/tiny
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
    [ "$att" -le $((total / 100)) ]
    [ "$vic" -gt $((total / 5)) ]
}

@test "HTTP/2 invariant: random interleavings of many clients' streams never show a stream that is not the thread's one open stream" {
    # tests/helpers/api_h2_invariant.c: ground truth from the server's own bookkeeping, the
    # shown stream read from the thread's record after every step
    for seed in 1 2 3 4 5 6; do
        run env PROFLINK_HTTP=1 LD_PRELOAD="$LIB" "$HELPERS/api_h2_invariant" "$seed" 200000
        echo "seed $seed: $output"
        [ "$status" -eq 0 ]
        [[ "$output" == "ok steps=200000 shown="* ]]
        # the driver exercises showing, not only hiding
        [ "${output##*shown=}" -gt 1000 ]
    done
}
