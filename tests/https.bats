#!/usr/bin/env bats
# serial: servers burn CPU while every thread's record is sampled at 1 kHz from outside
# modules: hooks/ssl_io.c preload/http/http_conn.c preload/http/http_thread.c hooks/http_io.c
# HTTPS through OpenSSL (PROFLINK_HTTP=1, hooks/ssl_io.c): unmodified servers that terminate TLS
# themselves (nginx, Python's ssl with threads and with asyncio) show each request's trace as
# their plaintext twins do; what the program reads and writes on the socket (ciphertext) is never
# scanned; a program without libssl runs no SSL path and resolves nothing more at start;
# proflink-inspect names a TLS library it cannot reach.
load helpers

TRACE_A=4bf92f3577b34da6a3ce929d0e0e4736
SPAN=00f067aa0ba902b7

setup() {
    setup_sockdir
    command -v openssl >/dev/null || skip "openssl is not installed"
}
teardown() {
    local p
    for p in ${CLIENT_PIDS:-}; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    stop_target
    rm -rf "$SOCKDIR"
}

# cert DIR — a self-signed certificate and key for 127.0.0.1 under DIR
cert() {
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1/key.pem" -out "$1/cert.pem" -days 2 \
        -subj /CN=127.0.0.1 2>/dev/null
}

# matrix OUT SHAPE… — the HTTP matrix (tests/http_matrix.py) on those shapes; its JSON in OUT
matrix() {
    local out=$1
    shift
    "$PY" "$ROOT/tests/http_matrix.py" --seconds 2 --json "$out" "$@" >"$out.table" 3>&-
    cat "$out.table"
    grep 'left out' "$out.table" >&3 || true
}

# check_matrix JSON CORRECT_95 CORRECT_80 — wrong <= 1% everywhere, correct where asked
check_matrix() {
    "$PY" - "$@" <<'PYEOF'
import json, sys
rows, c95, c80 = json.load(open(sys.argv[1])), sys.argv[2].split(), sys.argv[3].split()
bad = []
for r in rows:
    key = "%s:%d" % (r["shape"], r["inflight"])
    if r["client_errors"] or r["samples"] < 50:
        bad.append("%s: %d samples, %d client errors" % (key, r["samples"], r["client_errors"]))
    if r["wrong_pct"] > 1.0:
        bad.append("%s: %.1f%% wrong" % (key, r["wrong_pct"]))
    want = 95 if key in c95 else 80 if key in c80 else 0
    if r["correct_pct"] < want:
        bad.append("%s: %.1f%% correct, want >= %d" % (key, r["correct_pct"], want))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PYEOF
}

@test "HTTPS matrix: Python threads and asyncio behind ssl, nginx ssl: wrong <= 1%, correct as their plaintext twins" {
    libc_independent
    # 16 handshakes at once on asyncio: a stray error on a connection's OpenSSL error queue closed
    # some of them (client errors)
    local shapes=(py_threading_tls:4 py_asyncio_protocol_tls:4 py_asyncio_protocol_tls:16
                  py_asyncio_pipelined_tls:4 py_asyncio_streams_tls:1 nginx_gzip_tls:1)
    matrix "$BATS_TEST_TMPDIR/m.json" "${shapes[@]}"
    check_matrix "$BATS_TEST_TMPDIR/m.json" \
        "py_threading_tls:4 py_asyncio_protocol_tls:4 py_asyncio_protocol_tls:16 py_asyncio_pipelined_tls:4 nginx_gzip_tls:1" \
        "py_asyncio_streams_tls:1"
    # nginx was there (the matrix leaves out what is not installed)
    if command -v nginx >/dev/null; then grep -q '"nginx_gzip_tls"' "$BATS_TEST_TMPDIR/m.json"; fi
}

@test "nginx with kernel TLS (ssl_conf_command Options KTLS): no byte counted twice, wrong <= 1%" {
    libc_independent
    command -v nginx >/dev/null || skip "nginx is not installed"
    grep -qw tls /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null ||
        skip "the kernel has no tls module loaded (tcp_available_ulp: $(cat /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null))"
    matrix "$BATS_TEST_TMPDIR/m.json" nginx_gzip_ktls:1
    check_matrix "$BATS_TEST_TMPDIR/m.json" "nginx_gzip_ktls:1" ""
}

# nginx_tls DIR PORT — an nginx on 127.0.0.1:PORT with TLS, serving DIR/www/small
nginx_tls() {
    local d=$1
    mkdir -p "$d/www" "$d/tmp"
    echo small >"$d/www/small"
    cert "$d"
    cat >"$d/nginx.conf" <<NGX
user root;
worker_processes 1;
daemon off;
master_process on;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fcgi; uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;
    server {
        listen 127.0.0.1:$2 ssl;
        ssl_certificate $d/cert.pem; ssl_certificate_key $d/key.pem;
        root $d/www;
        etag off;
    }
}
NGX
}

# wait_port PORT — until something listens there (10 s)
wait_port() {
    for _ in $(seq 200); do
        (: <"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

@test "hostile requests over TLS: nginx's answers byte-identical with and without the library" {
    libc_independent
    command -v nginx >/dev/null || skip "nginx is not installed"
    local d=$BATS_TEST_TMPDIR/ngx port run
    port=$(free_port)
    nginx_tls "$d" "$port"
    for run in without with; do
        if [ $run = with ]; then
            PROFLINK_HTTP=1 start_target nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf"
        else
            nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" 3>&- &
            TARGET_PID=$!
        fi
        wait_port "$port"
        "$PY" "$ROOT/tests/https_hostile.py" "$port" "$BATS_TEST_TMPDIR/$run" 3>&-
        [ $run = without ] || inspect_json "$TARGET_PID" --no-threads
        stop_target
        TARGET_PID=
    done
    [ "$(jget 'j["https_reach"]')" = openssl ]
    # every case got an answer of some kind from the first run (the cases reach nginx)
    grep -c '^HTTP/1.1 ' "$BATS_TEST_TMPDIR/without"
    [ "$(grep -c '^HTTP/1.1 200' "$BATS_TEST_TMPDIR/without")" -ge 12 ]
    cmp "$BATS_TEST_TMPDIR/without" "$BATS_TEST_TMPDIR/with"
}

# traced_tids PID TRACE — threads of PID whose apmint record shows TRACE
traced_tids() {
    inspect_json "$1" >/dev/null || { echo "(pid $1 could not be read)"; return 1; }
    jget "' '.join(str(t['tid']) for t in j['threads'] if t['apm'] and t['apm']['trace_present'] == 1
          and t['apm']['trace_id'] == '$2' and t['apm']['span_id'] == '$SPAN')"
}

@test "python ThreadingHTTPServer behind ssl: the serving thread shows the request's trace, none after" {
    libc_independent
    [ "$VARIANT" = glibc ] || skip "python3 is a glibc program"
    local d=$BATS_TEST_TMPDIR port tid=
    cert "$d"
    port=$(free_port)
    cat >"$d/server.py" <<'PYEOF'
import ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        end = time.monotonic() + 2
        while time.monotonic() < end:
            pass
        body = b"%d\n" % threading.get_native_id()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2] + "/cert.pem", sys.argv[2] + "/key.pem")
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
PYEOF
    PROFLINK_HTTP=1 start_target "$PY" "$d/server.py" "$port" "$d"
    wait_port "$port"
    curl -sk -H "traceparent: 00-$TRACE_A-$SPAN-01" "https://127.0.0.1:$port/" >"$d/answer" 3>&- &
    CLIENT_PIDS=$!
    for _ in $(seq 150); do
        tid=$(traced_tids "$TARGET_PID" "$TRACE_A") || tid=
        [ -n "$tid" ] && break
        sleep 0.1
    done
    [ -n "$tid" ]
    wait "$CLIENT_PIDS"
    CLIENT_PIDS=
    # the thread that showed it is the one that served it
    [ "$(cat "$d/answer")" = "$tid" ]
    [ -z "$(traced_tids "$TARGET_PID" "$TRACE_A")" ]
}

@test "a program without libssl: no libssl mapped, no SSL symbol bound, no symbol more to resolve at start" {
    libc_independent
    PROFLINK_HTTP=1 start_target sleep 30
    for _ in $(seq 50); do grep -q proflink "/proc/$TARGET_PID/maps" 2>/dev/null && break; sleep 0.05; done
    grep -q elastic-jvmti-linux "/proc/$TARGET_PID/maps"
    refute grep -q libssl "/proc/$TARGET_PID/maps"
    stop_target
    # the library names no OpenSSL symbol, and reaches dlopen/dlclose only through dlsym
    local undef
    undef=$(nm -D --undefined-only "$LIB" | awk '{print $2}' | sed 's/@.*//')
    refute grep -qE '^(SSL_|BIO_|dlopen$|dlclose$)' <<<"$undef"
    # a start binds nothing named SSL_ (the hooks are reached only by a program calling them)
    LD_DEBUG=bindings LD_PRELOAD=$LIB PROFLINK_HTTP=1 "$(type -P true)" 2>"$BATS_TEST_TMPDIR/bind" 3>&-
    grep -q "binding file" "$BATS_TEST_TMPDIR/bind" || skip "this libc's loader prints no bindings"
    refute grep -q "symbol \`SSL_" "$BATS_TEST_TMPDIR/bind"
}

@test "proflink-inspect: HTTPS out of reach for a program with OpenSSL linked in (NodeSource node), read for one with libssl" {
    libc_independent
    command -v node >/dev/null || skip "node is not installed"
    PROFLINK_HTTP=1 start_target node -e 'setTimeout(() => {}, 30000)'
    for _ in $(seq 100); do grep -q elastic-jvmti-linux "/proc/$TARGET_PID/maps" 2>/dev/null && break; sleep 0.05; done
    if grep -q libssl "/proc/$TARGET_PID/maps"; then skip "this node uses a shared libssl"; fi
    nm -D "$(readlink -f "$(command -v node)")" 2>/dev/null | grep -q ' T SSL_read$' ||
        skip "this node has no OpenSSL of its own"
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["https_reach"]')" = out_of_reach ]
    [[ "$(jget 'j["https_library"]')" == "OpenSSL (or BoringSSL) linked into the program itself"* ]]
    run "$INSPECT" --no-threads "$TARGET_PID"
    [[ "$output" == *"WARN  https    HTTPS out of reach: OpenSSL (or BoringSSL) linked into the program itself"* ]]
    stop_target
    PROFLINK_HTTP=1 start_target "$PY" -c 'import ssl, time; time.sleep(30)'
    for _ in $(seq 100); do grep -q libssl "/proc/$TARGET_PID/maps" 2>/dev/null && break; sleep 0.05; done
    inspect_json "$TARGET_PID" --no-threads
    [ "$(jget 'j["https_reach"]')" = openssl ]
}
