#!/usr/bin/env bats
# shellcheck shell=bash
# serial: the real profiler samples every CPU of the host
# The real OpenTelemetry eBPF profiler (built from the Go module proxy at the version pinned in
# tests/e2e/go.mod, see tests/e2e/e2e.mk) reads proflink: one profiler run serves every test of
# this file; it exports its samples over OTLP to tests/e2e/receiver (one JSON line per sample)
# and logs (-v) what it attached and every correlation datagram it sent. Each test runs a
# workload under proflink and asserts on the samples the profiler exported (linked to which
# trace id and span id = transaction id), on what reached proflink over the socket (its FIFO
# records, its callback, its stats) and on what the profiler logged about the process.
# Figures of each scenario are appended to build/e2e/figures.txt.

# helpers.bash finds the tree from the suite's directory, one level up from here
# modules: preload/start/mapping_renew.c preload/context/thread_records.c
# modules: preload/messages/receiver.c preload/deferral/deferral.c
BATS_TEST_DIRNAME=$(dirname "$BATS_TEST_DIRNAME") load helpers

E2E=$ROOT/build/e2e
E2E_SRC=$ROOT/tests/e2e
VERSION=$(sed -n 's/^[[:space:]]*go\.opentelemetry\.io\/ebpf-profiler \(v[^ ]*\).*/\1/p' "$E2E_SRC/go.mod")
PROFILER=$E2E/ebpf-profiler-$VERSION
FIGURES=$E2E/figures.txt
REPORT=$E2E_SRC/e2e_report.py
TP_A=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
LINK_A=4bf92f3577b34da6a3ce929d0e0e4736/00f067aa0ba902b7

# ---- the one profiler run -----------------------------------------------------------------------

# no_run REASON — every test of the file skips with REASON (bats 1.8 cannot skip in setup_file)
no_run() { export E2E_SKIP=$1; }

setup_file() {
    [ "$(id -u)" = 0 ] || { no_run "the eBPF profiler needs root"; return 0; }
    local b
    for b in "$PROFILER" "$E2E/receiver" "$E2E/memlock_exec" "$E2E/switcher" "$E2E/spinner"; do
        [ -x "$b" ] || { no_run "$b is not built: make e2e (needs Go) builds it"; return 0; }
    done
    [ -d /sys/kernel/tracing ] || { no_run "no tracefs in this kernel (/sys/kernel/tracing)"; return 0; }
    # the profiler finds its tracepoints through tracefs, not mounted by default on every system
    if ! mountpoint -q /sys/kernel/tracing; then
        mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
            { no_run "tracefs is not mounted and cannot be mounted here"; return 0; }
    fi
    # a second profiler on the host would send its own datagrams to the same sockets
    local other
    other=$(pgrep '^ebpf-profiler' | xargs)
    if [ -n "$other" ]; then
        echo "another eBPF profiler runs on this host (pid $other): its datagrams would be counted too" >&2
        return 1
    fi
    export E2E_RUN
    E2E_RUN=$(mktemp -d /tmp/plt-e2e.XXXXXX)
    chmod 755 "$E2E_RUN"
    "$E2E/receiver" -port-file "$E2E_RUN/port" -out "$E2E_RUN/samples.jsonl" \
        2>"$E2E_RUN/receiver.log" 3>&- &
    echo $! >"$E2E_RUN/receiver.pid"
    for _ in $(seq 200); do
        [ -s "$E2E_RUN/port" ] && break
        sleep 0.05
    done
    [ -s "$E2E_RUN/port" ]
    # 97 Hz (default 20): enough samples in a few seconds of CPU; reports every second
    "$E2E/memlock_exec" "$PROFILER" -collection-agent="127.0.0.1:$(cat "$E2E_RUN/port")" \
        -disable-tls -v -samples-per-second 97 -reporter-interval 1s \
        >"$E2E_RUN/profiler.log" 2>&1 3>&- &
    echo $! >"$E2E_RUN/profiler.pid"
    local pid=$!
    for _ in $(seq 1200); do
        grep -q 'msg="Attached tracer program"' "$E2E_RUN/profiler.log" 2>/dev/null && break
        if ! kill -0 "$pid" 2>/dev/null; then
            # only its start failing for want of privileges (BPF, perf events) is a skip
            if grep -qE 'level=ERROR msg="Failed to start agent controller: .*operation not permitted' "$E2E_RUN/profiler.log"; then
                no_run "the profiler may not load eBPF here: $(grep -m1 'level=ERROR' "$E2E_RUN/profiler.log")"
                return 0
            fi
            cat "$E2E_RUN/profiler.log" >&2
            return 1
        fi
        sleep 0.05
    done
    grep -q 'msg="Attached tracer program"' "$E2E_RUN/profiler.log"
    # the thread pointer offset in task_struct: without it no sample is ever linked
    grep -qE 'Found offsets: .*tpbase 0x[1-9a-f]' "$E2E_RUN/profiler.log"
    mkdir -p "$E2E"
    echo "profiler $VERSION ($(date -u +%FT%TZ))" >>"$FIGURES"
}

teardown_file() {
    [ -n "${E2E_RUN:-}" ] || return 0
    local f
    for f in profiler receiver; do
        if [ -e "$E2E_RUN/$f.pid" ]; then kill "$(cat "$E2E_RUN/$f.pid")" 2>/dev/null || true; fi
    done
    for f in profiler receiver; do
        if [ -e "$E2E_RUN/$f.pid" ]; then
            for _ in $(seq 100); do
                kill -0 "$(cat "$E2E_RUN/$f.pid")" 2>/dev/null || break
                sleep 0.1
            done
        fi
    done
    # the logs stay next to the build for a look after a failure
    cp "$E2E_RUN/profiler.log" "$E2E_RUN/samples.jsonl" "$E2E/" 2>/dev/null || true
    rm -rf "$E2E_RUN"
}

setup() {
    if [ -n "${E2E_SKIP:-}" ]; then skip "$E2E_SKIP"; fi
    W=$(mktemp -d "$E2E_RUN/t.XXXXXX")
    chmod 755 "$W"
    SOCKDIR=$W/sock
    mkdir -m 1777 "$SOCKDIR"
    export ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$SOCKDIR
    PIDS=()
}

teardown() {
    stop_pids "${PIDS[@]}"
    stop_target
}

# ---- helpers --------------------------------------------------------------------------------------

# cycles — export cycles so far: each is one request to the receiver, or one skip line when
# nothing was sampled
cycles() {
    echo $(($(grep -c 'export [0-9]*:' "$E2E_RUN/receiver.log") +
        $(grep -c 'Skip sending of OTLP profile' "$E2E_RUN/profiler.log")))
}

# wait_exported — until two more export cycles have ended: everything sampled before the call
# has been exported (the profiler hands traces to the reporter as they come)
wait_exported() {
    local want=$(($(cycles) + 2))
    for _ in $(seq 300); do
        [ "$(cycles)" -ge "$want" ] && return 0
        sleep 0.1
    done
    echo "the profiler exported nothing for 30 s" >&2
    return 1
}

# samples_json PID… — the exported samples of those processes, summarized, into $W/samples.json
samples_json() {
    "$PY" "$REPORT" samples "$E2E_RUN/samples.jsonl" "$@" >"$W/samples.json"
}
sget() { json_get "$W/samples.json" s "$1"; }

# all_linked_once_attached PID — every exported sample of PID is linked, but those taken before
# the profiler attached to PID (it reads a process's records only from its attach on, which
# happens at the process's first samples: an upstream limit) and those of proflink's own threads
# (they work for no trace)
all_linked_once_attached() {
    "$PY" "$REPORT" unlinked "$E2E_RUN/samples.jsonl" "$E2E_RUN/profiler.log" "$1" >"$W/unlinked.json"
    cat "$W/unlinked.json"
    [ "$(json_get "$W/unlinked.json" u 'u["attach_ns"] is not None')" = true ]
    [ "$(json_get "$W/unlinked.json" u 'u["after_attach"]')" = 0 ]
}

# log_json PID — what the profiler logged about PID, into $W/log.json
log_json() {
    "$PY" "$REPORT" log "$E2E_RUN/profiler.log" "$1" >"$W/log.json"
}
lget() { json_get "$W/log.json" l "$1"; }

# start_fifo — a reader for PROFLINK_FIFO ($W/fifo, records into $W/fifo.out)
start_fifo() {
    mkfifo -m 600 "$W/fifo"
    cat "$W/fifo" >"$W/fifo.out" 3>&- &
    PIDS+=("$!")
}

# probe_count — correlation messages proflink counted (proflink_get_stats, written to $W/stats by
# stats_probe.so or by the switcher), and what its FIFO dropped if anything (on stderr)
probe_count() {
    local drops
    drops=$(sed -n 's/.*fifo_drops=\([0-9]*\).*/\1/p' "$W/stats" 2>/dev/null)
    if [ -n "$drops" ] && [ "$drops" != 0 ]; then echo "FIFO records dropped: $drops" >&2; fi
    sed -n 's/.*correlations=\([0-9]*\).*/\1/p' "$W/stats" 2>/dev/null
}

# wait_delivered PID CMD… — every correlation datagram the profiler sent to PID reached proflink:
# waits (10 s) until CMD (proflink's count of correlation messages received by PID) equals the
# datagrams the profiler logged sending to PID minus the sends it logged as failed. A send fails
# (EAGAIN, MSG_DONTWAIT) when the kernel's queue of the socket is full: at most
# net.unix.max_dgram_qlen + 1 datagrams wait for proflink's receiving thread; those are the
# profiler's own to drop and are reported with the figures.
wait_delivered() {
    local pid=$1 got want failed
    shift
    for _ in $(seq 100); do
        log_json "$pid"
        failed=$(lget 'l["failed"]')
        want=$(($(lget 'l["reported"]') - failed))
        got=$("$@")
        [ "$got" = "$want" ] && break
        sleep 0.1
    done
    echo "datagrams to $pid: profiler sent $want (+ $failed refused by a full socket queue), proflink received $got" |
        tee -a "$FIGURES"
    [ "$want" -gt 0 ]
    [ "$got" = "$want" ]
}

# attach_matches_inspect PID — the profiler logged attaching to PID with the service name and
# socket that proflink-inspect (run while PID lived, into $W/inspect.PID.json) reported
attach_matches_inspect() {
    local pid=$1
    log_json "$pid"
    [ "$(lget 'l["attached"]')" = true ]
    [ "$(lget 'l["attach"]["service"]')" = "$(json_get "$W/inspect.$pid.json" j 'j["storage"]["service_name"]')" ]
    [ "$(lget 'l["attach"]["socket"]')" = "$(json_get "$W/inspect.$pid.json" j 'j["storage"]["socket_path"]')" ]
    [ "$(json_get "$W/inspect.$pid.json" j 'j["attachable"]')" = true ]
}

inspect_to() { "$INSPECT" --json --no-threads "$1" >"$W/inspect.$1.json"; }

# figures NAME — one line of figures for the closing report: samples, linked, per link
figures() {
    echo "$1: $(sget '"samples=%d linked=%d " % (s["samples"], s["linked"]) + " ".join("%s=%d" % kv for kv in sorted(s["links"].items()))')" |
        tee -a "$FIGURES"
}

# ---- scenarios --------------------------------------------------------------------------------

# traceparent_run NAME SERVICE NTHREADS — the checks for spinner (NTHREADS threads) started with
# TRACEPARENT=$TP_A, OTEL_SERVICE_NAME=SERVICE, PROFLINK_FIFO (the consumer that starts proflink's
# reader) and stats_probe.so writing $W/stats, pid TARGET_PID, output in
# $BATS_TEST_TMPDIR/target.out; NAME labels its figures.
traceparent_run() {
    local name=$1 service=$2 n=$3
    wait_attachable "$TARGET_PID"
    inspect_to "$TARGET_PID"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^spun' 30
    wait_exported
    samples_json "$TARGET_PID"
    figures "$name"
    [ "$(sget 's["samples"]')" -ge $((n * 25)) ]
    # every sample of every thread, linked to the trace, span id = the transaction id
    all_linked_once_attached "$TARGET_PID"
    [ "$(sget 'list(s["links"])')" = "[\"$LINK_A\"]" ]
    # the threads with linked samples: the spinning ones
    [ "$(sget 'sorted(k for k, v in s["names"].items() if set(v) - {"-"})')" = \
        "$("$PY" -c "import json; print(json.dumps(['spin-%d' % i for i in range($n)]))")" ]
    wait_delivered "$TARGET_PID" probe_count
    attach_matches_inspect "$TARGET_PID"
    [ "$(lget 'l["attach"]["service"]')" = "$service" ]
}

@test "e2e: an unmodified C program with TRACEPARENT: every sampled thread linked to that trace" {
    start_fifo
    TRACEPARENT=$TP_A PROFLINK_FIFO=$W/fifo OTEL_SERVICE_NAME=e2e-traceparent STATS_PROBE_FILE=$W/stats \
        LD_PRELOAD="$LIB $E2E/stats_probe.so" "$E2E/spinner" 3 2 >"$BATS_TEST_TMPDIR/target.out" 2>&1 3>&- &
    TARGET_PID=$!
    # at the host's queue (the kernel's default 10 unless raised): what the kernel refused is
    # printed with the figures
    traceparent_run "traceparent (glibc, max_dgram_qlen $(cat /proc/sys/net/unix/max_dgram_qlen))" e2e-traceparent 3
}

@test "e2e: a program on the CPU before proflink's constructor ran (another library's constructor burns 1 s): attached once proflink published, its threads linked" {
    # The profiler reads the process storage when it first sees proflink's mapping, at the
    # process's first samples, and takes a second look only at a mapping that is new to it: here
    # its first look finds the storage not yet published, and proflink then splits its
    # executable mapping (mapping_renew.c) so that the profiler looks again.
    start_fifo
    TRACEPARENT=$TP_A PROFLINK_FIFO=$W/fifo OTEL_SERVICE_NAME=e2e-slow-start SLOW_START_MS=1000 \
        STATS_PROBE_FILE=$W/stats LD_PRELOAD="$LIB $E2E/stats_probe.so $E2E/slow_start.so" \
        "$E2E/spinner" 2 2 >"$BATS_TEST_TMPDIR/target.out" 2>&1 3>&- &
    TARGET_PID=$!
    traceparent_run "traceparent, slow start" e2e-slow-start 2
    # the profiler's first look came during that second, found no storage, and it looked again
    local early
    early=$(grep -c "attach to APM integration in PID $TARGET_PID: failed to read APM correlation process storage" "$E2E_RUN/profiler.log" || true)
    echo "slow start: first looks that found no storage: $early, then attached" | tee -a "$FIGURES"
    [ "$early" -ge 1 ]
}

@test "e2e: at the package's net.unix.max_dgram_qlen in the program's network namespace, the kernel refuses none of the profiler's datagrams and every one reaches proflink" {
    command -v unshare >/dev/null || skip "unshare is not installed"
    unshare -n true 2>/dev/null || skip "no new network namespace here"
    # the default queue (10 + 1 datagrams) overflows in the profiler's bursts when the program
    # keeps every CPU busy (the first scenario's figures); the length is read from the network
    # namespace of the process that creates the socket. The value: the one the Debian package
    # installs (packaging/deb/sysctl.conf) and proflink-inspect advises.
    local qlen
    qlen=$(sed -n 's/^net\.unix\.max_dgram_qlen = //p' "$ROOT/packaging/deb/sysctl.conf")
    [ "$qlen" -gt 10 ]
    start_fifo
    TRACEPARENT=$TP_A PROFLINK_FIFO=$W/fifo OTEL_SERVICE_NAME=e2e-qlen STATS_PROBE_FILE=$W/stats \
        unshare -n sh -c "sysctl -qw net.unix.max_dgram_qlen=$qlen &&
            LD_PRELOAD='$LIB $E2E/stats_probe.so' exec '$E2E/spinner' 3 2" \
        >"$BATS_TEST_TMPDIR/target.out" 2>&1 3>&- &
    TARGET_PID=$!
    traceparent_run "traceparent, max_dgram_qlen $qlen (the package's)" e2e-qlen 3
    [ "$(lget 'l["failed"]')" = 0 ]
}

@test "e2e: a C program switching contexts through the API: samples linked to each trace in proportion, none outside" {
    LD_PRELOAD=$LIB "$E2E/switcher" 4 "$W/stats" >"$W/switcher.out" 2>&1 3>&- &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
    inspect_to "$TARGET_PID"
    wait_for_line "$W/switcher.out" '^cpu_ms' 30
    wait_exported
    samples_json "$TARGET_PID"
    figures "api switch"
    local a b none
    a=$(sget 's["names"]["switcher"].get("4bf92f3577b34da6a3ce929d0e0e4736/5a5a00000000000a", 0)')
    b=$(sget 's["names"]["switcher"].get("0af7651916cd43dd8448eb211c80319c/5a5a00000000000b", 0)')
    none=$(sget 's["names"]["switcher"].get("-", 0)')
    echo "switching thread: a=$a b=$b none=$none (CPU sections 1 : 2 : 1)" | tee -a "$FIGURES"
    # only the two transactions, never the span ids (proflink links the transaction)
    [ "$(sget 'sorted(s["links"])')" = '["0af7651916cd43dd8448eb211c80319c/5a5a00000000000b", "4bf92f3577b34da6a3ce929d0e0e4736/5a5a00000000000a"]' ]
    # the thread that never set a context: nothing linked
    [ "$(sget 'list(s["names"]["no-context"])')" = '["-"]' ]
    # CPU sections of 20, 40 and 20 ms: a quarter, a half, a quarter of the switching thread's
    # samples, within four binomial standard deviations
    [ $((a + b + none)) -ge 40 ]
    "$PY" - "$a" "$b" "$none" <<'EOF'
import math, sys
got = [int(x) for x in sys.argv[1:]]
n = sum(got)
for k, e in zip(got, (.25, .5, .25)):
    tol = 4 * math.sqrt(e * (1 - e) / n)
    assert abs(k / n - e) < tol, (got, e, tol)
EOF
    # every datagram reached proflink's callback, per transaction as sent
    wait_delivered "$TARGET_PID" probe_count
    log_json "$TARGET_PID"
    grep -q "a=$(lget 'l["sent_per_tx"]["5a5a00000000000a"]') b=$(lget 'l["sent_per_tx"]["5a5a00000000000b"]') other=0" "$W/stats"
    grep -q 'discarded=0' "$W/stats"
    attach_matches_inspect "$TARGET_PID"
}


# listening_port PID — the TCP port PID listens on (the kernel picked it), once it does (10 s)
listening_port() {
    local port
    for _ in $(seq 200); do
        port=$(${NETNS:+nsenter -t "$NETNS" -n} ss -Hltnp 2>/dev/null | awk -v p="pid=$1," 'index($0, p) { n = split($4, a, ":"); print a[n]; exit }')
        if [ -n "$port" ]; then
            echo "$port"
            return 0
        fi
        sleep 0.05
    done
    echo "pid $1 listens on no TCP port" >&2
    return 1
}

@test "e2e: an unmodified HTTP server with PROFLINK_HTTP=1: concurrent requests with distinct traceparents, each request's samples linked to its trace" {
    local port
    start_fifo
    PROFLINK_HTTP=1 PROFLINK_FIFO=$W/fifo STATS_PROBE_FILE=$W/stats LIB="$LIB $E2E/stats_probe.so" \
        start_target "$HELPERS/target_http_server" 0
    port=$(listening_port "$TARGET_PID")
    inspect_to "$TARGET_PID"
    # the profiler knows a process only from its first samples on (those are lost): one request
    # without a traceparent first, until the profiler attached
    curl -s "http://127.0.0.1:$port/spin?ms=200" >/dev/null
    for _ in $(seq 100); do
        grep -q "Attached to APM integration interpreter in PID $TARGET_PID\"" "$E2E_RUN/profiler.log" && break
        curl -s "http://127.0.0.1:$port/spin?ms=100" >/dev/null
    done
    # 4 clients at once, 2 requests each, every request on a connection (and a thread) of its own
    "$PY" "$E2E_SRC/http_load.py" "$port" 4 2 600 >"$W/requests"
    [ "$(wc -l <"$W/requests")" = 8 ]
    wait_exported
    samples_json "$TARGET_PID"
    figures "http (PROFLINK_HTTP=1, 8 requests)"
    "$PY" - "$W/samples.json" "$W/requests" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
reqs = {tid: "%s/%s" % (t, p) for t, p, tid in (l.split() for l in open(sys.argv[2]))}
assert len(set(reqs.values())) == 8 and len(reqs) == 8, reqs
sampled = 0
for tid, link in reqs.items():
    got = s["threads"].get(tid, {})
    # the serving thread: its samples linked to its request's trace and parent span id, never to
    # another's; unlinked only around the request (the thread's start before it reads the head,
    # its exit after the connection closed): a few. A request the profiler did not catch on the
    # CPU, on a loaded machine, has none.
    assert set(got) <= {link, "-"}, (tid, link, got)
    assert got.get("-", 0) <= max(2, got.get(link, 0) // 10), (tid, link, got)
    sampled += bool(got.get(link))
print("requests with samples: %d of 8" % sampled)
assert sampled >= 4, sampled
# nothing linked outside the requests' threads, and no other link
assert set(s["links"]) <= set(reqs.values()), s["links"]
for tid, links in s["threads"].items():
    assert tid in reqs or set(links) == {"-"}, (tid, links)
PY
    wait_delivered "$TARGET_PID" probe_count
    attach_matches_inspect "$TARGET_PID"
}

@test "e2e: a musl program started through proflink-run: its threads linked to TRACEPARENT's trace" {
    [ -x "$E2E/musl/spinner" ] || skip "musl-gcc is not installed"
    start_fifo
    TRACEPARENT=$TP_A PROFLINK_FIFO=$W/fifo STATS_PROBE_FILE=$W/stats LD_PRELOAD=$E2E/musl/stats_probe.so \
        "$ROOT/scripts/proflink-run" --service e2e-musl -- \
        "$E2E/musl/spinner" 2 2 >"$BATS_TEST_TMPDIR/target.out" 2>&1 3>&- &
    TARGET_PID=$!
    traceparent_run "traceparent (musl, proflink-run)" e2e-musl 2
    # proflink-run picked the musl build
    json_get "$W/inspect.$TARGET_PID.json" j 'j["library"]' | grep -q 'elastic-jvmti-linux-proflink-musl-'
}

@test "e2e: nginx workers running as nobody (PROFLINK_HTTP=1): each traced request's samples linked to its trace in the worker that served it" {
    command -v nginx >/dev/null || skip "nginx is not installed"
    local d=$W/nginx t worker
    mkdir -p "$d"
    nginx_conf "$d" "nobody nogroup" "unix:$d/http.sock" 150M
    chmod 755 "$d" "$d/www"
    PROFLINK_HTTP=1 OTEL_SERVICE_NAME=e2e-nginx LD_PRELOAD=$LIB \
        nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" >"$W/nginx.out" 2>&1 3>&- &
    TARGET_PID=$!
    for _ in $(seq 200); do
        [ "$(pgrep -c -P "$TARGET_PID")" = 2 ] && [ -S "$d/http.sock" ] && break
        sleep 0.05
    done
    for worker in $(pgrep -P "$TARGET_PID"); do
        wait_attachable "$worker"
        inspect_to "$worker"
        [ "$(json_get "$W/inspect.$worker.json" j 'j["socket"]["target_euid"]')" = 65534 ]
    done
    : >"$W/requests"
    for t in 11111111111111111111111111111111 22222222222222222222222222222222; do
        curl -s --unix-socket "$d/http.sock" -D "$W/headers" -o /dev/null -H 'Accept-Encoding: gzip' \
            -H "traceparent: 00-$t-00000000000000a1-01" http://localhost/big
        worker=$(sed -n 's/^x-worker: \([0-9]*\).*/\1/ip' "$W/headers")
        echo "$t $worker" >>"$W/requests"
    done
    cat "$W/requests"
    wait_exported
    # shellcheck disable=SC2046
    samples_json "$TARGET_PID" $(pgrep -P "$TARGET_PID")
    figures "nginx (2 workers as nobody, 2 requests)"
    "$PY" - "$W/samples.json" "$W/requests" "$TARGET_PID" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
reqs = [l.split() for l in open(sys.argv[2])]
links = {"%s/00000000000000a1" % t for t, _ in reqs}
# only the two requests' links, each with samples
assert set(s["links"]) == links, s["links"]
assert all(n >= 5 for n in s["links"].values()), s["links"]
# the master never serves: nothing of it linked
assert set(s["threads"].get(sys.argv[3], {"-": 0})) == {"-"}, s["threads"]
PY
    # each worker that served: attached with its own socket, the one proflink-inspect saw
    local served
    mapfile -t served < <(awk '{print $2}' "$W/requests" | sort -u)
    for worker in "${served[@]}"; do
        attach_matches_inspect "$worker"
        [ "$(lget 'l["attach"]["service"]')" = e2e-nginx ]
        lget 'l["attach"]["socket"]' | grep -q "/proflink-$worker-"
        # the profiler sent to the worker's socket (nginx consumes no message: no reader
        # thread, so the kernel takes one queue-full and refuses the rest)
        [ "$(lget 'l["reported"]')" -gt "$(lget 'l["failed"]')" ]
    done
    kill -QUIT "$TARGET_PID"
}

# node_roots LABEL [NETNS_PID] — the Node example under proflink-run, 8 requests, and the checks
# of every root span's ids; in NETNS_PID's network namespace when given (its own queue length:
# the server, the requests and the port lookup run there), else in the host's. LABEL names the
# figures.
node_roots() {
    local label=$1 ns=() port
    [ -z "${2:-}" ] || ns=(nsenter -t "$2" -n)
    start_fifo
    PORT=0 EXPORT_FILE=$W/spans.jsonl PROFLINK_FIFO=$W/fifo "${ns[@]}" "$ROOT/scripts/proflink-run" --service e2e-node -- \
        node "$ROOT/integrations/node/example/server.js" >"$W/node.out" 2>"$W/node.err" 3>&- &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
    port=$(NETNS=${2:-} listening_port "$TARGET_PID")
    inspect_to "$TARGET_PID"
    # the profiler knows a process only from its first samples on (a loaded machine may not have
    # sampled node's start): requests until it attached, their roots left out of the checks
    local warm=0
    for _ in $(seq 50); do
        grep -q "Attached to APM integration interpreter in PID $TARGET_PID\"" "$E2E_RUN/profiler.log" && break
        "${ns[@]}" curl -sS --max-time 30 "http://127.0.0.1:$port/work?ms=100" >/dev/null
        warm=$((warm + 1))
    done
    for _ in $(seq 300); do
        [ "$(grep -c '"parentSpanId":null' "$W/spans.jsonl" 2>/dev/null)" -ge "$warm" ] && break
        sleep 0.1
    done
    for _ in $(seq 8); do
        "${ns[@]}" curl -sS --max-time 30 "http://127.0.0.1:$port/work?ms=250" >/dev/null
    done
    # every root span exported (each held for the samples delay first)
    for _ in $(seq 300); do
        [ "$(grep -c '"parentSpanId":null' "$W/spans.jsonl" 2>/dev/null)" -ge $((warm + 8)) ] && break
        sleep 0.1
    done
    [ "$(grep -c '"parentSpanId":null' "$W/spans.jsonl")" = $((warm + 8)) ]
    wait_exported
    samples_json "$TARGET_PID"
    figures "node (8 requests, $label)"
    log_json "$TARGET_PID"
    echo "node ($label): datagrams the profiler sent $(lget 'l["reported"] - l["failed"]'), refused by a full socket queue $(lget 'l["failed"]')" |
        tee -a "$FIGURES"
    "$PY" "$REPORT" deferral "$W/fifo.out" "$TARGET_PID" >"$W/deferral.json"
    # (into a file, not a pipe: the check's status must be the test's)
    "$PY" - "$W/samples.json" "$W/spans.jsonl" "$W/log.json" "$W/deferral.json" "$warm" >"$W/roots.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
spans = [json.loads(l) for l in open(sys.argv[2])]
log = json.load(open(sys.argv[3]))
deferral = json.load(open(sys.argv[4]))
roots = [sp for sp in spans if sp["parentSpanId"] is None]
root_links = {"%s/%s" % (r["traceId"], r["spanId"]) for r in roots}
# samples are linked to local roots (the transactions) only, never to child spans
assert set(s["links"]) <= root_links, (s["links"], root_links)
# the requests before the profiler attached were exported first (ended first, same delay)
for r in roots[int(sys.argv[5]):]:
    link = "%s/%s" % (r["traceId"], r["spanId"])
    ids = r["attributes"].get("elastic.profiler_stack_trace_ids", [])
    linked = s["links"].get(link, 0)
    sent = log["sent_per_tx"].get(r["spanId"], 0)
    d = deferral.get(r["spanId"], {"before": 0, "delivered": 0, "late": 0, "unheld": False})
    print("  root %s: exported samples linked %d, datagrams the profiler sent %d, stack-trace ids on the span %d%s"
          % (link, linked, sent, len(ids),
             ", %d arrived after the span was exported unheld" % d["late"] if d["late"] else ""),
          flush=True)
    # every datagram the profiler sent for the transaction reached proflink, and all of them are
    # on its span; but for a root that ended before the first datagram reached the process:
    # until then proflink (auto mode) does not hold spans, it knows of no profiler yet
    assert d["before"] + d["late"] == sent, (link, d, sent)
    assert len(ids) == d["delivered"] == d["before"], (link, len(ids), d)
    assert d["late"] == 0 or d["unheld"], (link, d)
    # and the span's ids count the linked samples, but for the sends the kernel refused
    # (socket queue full) and the samples linked before the profiler's attach completed
    assert sent <= linked, (link, sent, linked)
    assert linked > 0, link
for sp in spans:
    if sp["parentSpanId"] is not None:
        assert "elastic.profiler_stack_trace_ids" not in sp["attributes"], sp
PY
    tee -a "$FIGURES" <"$W/roots.txt"
    attach_matches_inspect "$TARGET_PID"
    [ "$(lget 'l["attach"]["service"]')" = e2e-node ]
}

@test "e2e: the Node example (OpenTelemetry SDK + proflink-otel), at the host's queue: each root span carries the stack-trace ids of the samples linked to its transaction" {
    command -v node >/dev/null || skip "node is not installed"
    [ -d "$ROOT/integrations/node/node_modules/@opentelemetry" ] ||
        skip "the Node.js integration's packages are not installed (cd integrations/node && npm ci)"
    node_roots "max_dgram_qlen $(cat /proc/sys/net/unix/max_dgram_qlen)"
}

@test "e2e: the Node example at the package's net.unix.max_dgram_qlen: the kernel refuses none of the profiler's datagrams, every root span carries an id per linked sample" {
    command -v node >/dev/null || skip "node is not installed"
    [ -d "$ROOT/integrations/node/node_modules/@opentelemetry" ] ||
        skip "the Node.js integration's packages are not installed (cd integrations/node && npm ci)"
    command -v nsenter >/dev/null || skip "nsenter is not installed"
    unshare -n true 2>/dev/null || skip "no new network namespace here"
    local qlen holder
    qlen=$(sed -n 's/^net\.unix\.max_dgram_qlen = //p' "$ROOT/packaging/deb/sysctl.conf")
    # a network namespace held by a sleeper: the queue set there, its loopback up
    unshare -n sleep 600 3>&- &
    holder=$!
    PIDS+=("$holder")
    for _ in $(seq 100); do
        [ "$(readlink "/proc/$holder/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
        sleep 0.05
    done
    nsenter -t "$holder" -n sysctl -qw net.unix.max_dgram_qlen="$qlen"
    nsenter -t "$holder" -n ip link set lo up
    node_roots "max_dgram_qlen $qlen (the package's)" "$holder"
    [ "$(lget 'l["failed"]')" = 0 ]
}

@test "e2e: with -t native the profiler never computes the thread pointer's offset and links nothing (the caveat in docs/profilers.md)" {
    # a second profiler, for this test only, with its own receiver; the suite's keeps running
    local r=$W/native
    mkdir -p "$r"
    "$E2E/receiver" -port-file "$r/port" -out "$r/samples.jsonl" 2>"$r/receiver.log" 3>&- &
    PIDS+=("$!")
    for _ in $(seq 200); do
        [ -s "$r/port" ] && break
        sleep 0.05
    done
    "$E2E/memlock_exec" "$PROFILER" -t native -collection-agent="127.0.0.1:$(cat "$r/port")" \
        -disable-tls -v -samples-per-second 97 -reporter-interval 1s >"$r/profiler.log" 2>&1 3>&- &
    PIDS+=("$!")
    for _ in $(seq 1200); do
        grep -q 'msg="Attached tracer program"' "$r/profiler.log" 2>/dev/null && break
        sleep 0.05
    done
    grep -E 'Found offsets: .*tpbase 0x0,' "$r/profiler.log"
    TRACEPARENT=$TP_A LD_PRELOAD=$LIB "$E2E/spinner" 2 2 >"$BATS_TEST_TMPDIR/target.out" 2>&1 3>&- &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^spun' 30
    # two of its export cycles after the work
    local want=$(($(grep -c 'export [0-9]*:' "$r/receiver.log") + 2))
    for _ in $(seq 300); do
        [ "$(grep -c 'export [0-9]*:' "$r/receiver.log")" -ge "$want" ] && break
        sleep 0.1
    done
    "$PY" "$REPORT" samples "$r/samples.jsonl" "$TARGET_PID" >"$W/samples.json"
    figures "-t native"
    # it attached (the storage and socket are fine) but no sample is linked, none sent
    grep -q "Attached to APM integration interpreter in PID $TARGET_PID\"" "$r/profiler.log"
    [ "$(sget 's["samples"]')" -ge 50 ]
    [ "$(sget 's["linked"]')" = 0 ]
    refute grep -q "for PID $TARGET_PID\"" "$r/profiler.log"
}
