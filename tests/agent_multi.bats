#!/usr/bin/env bats
# serial: samples the CPU of its targets and counts the samples
# proflink-agent on the services a new user meets first: several processes at once (PIDs,
# --pidof NAME, --children for a pre-fork parent and its workers), each reported; a process
# where nothing reads the socket (no tracer, no FIFO) said to be that, not a queue length; and
# the flame graphs of each trace: folded stacks and a self-contained SVG that a real browser
# (headless Chromium) renders.
# shellcheck shell=bash
load helpers
load browser
bats_require_minimum_version 1.5.0

AGENT=$ROOT/build/proflink-agent
TRACE=4bf92f3577b34da6a3ce929d0e0e4736

setup() {
    setup_sockdir
    PIDS=()
}

teardown() {
    stop_pids "${PIDS[@]}"
    rm -rf "$SOCKDIR"
}

# prefork NAME: a parent (bash) under the library with two workers: the demo service copied as
# NAME (a name no other process of the machine has). Sets PARENT and WORKERS.
prefork() {
    cp "$HELPERS/api_demo_service" "$BATS_TEST_TMPDIR/$1"
    LD_PRELOAD=$LIB ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
        bash -c '"$1" -s 8 -t 2 & "$1" -s 8 -t 2 & wait' sh "$BATS_TEST_TMPDIR/$1" \
        >/dev/null 2>&1 3>&- &
    PARENT=$!
    PIDS+=("$PARENT")
    for _ in $(seq 100); do [ "$(pgrep -c -P "$PARENT")" = 2 ] && break; sleep 0.05; done
    mapfile -t WORKERS < <(pgrep -P "$PARENT")
    [ "${#WORKERS[@]}" -eq 2 ]
    PIDS+=("${WORKERS[@]}")
    for w in "${WORKERS[@]}"; do wait_attachable "$w"; done
}

@test "agent: no process named is a clear usage error, not a bare usage line" {
    run "$AGENT" -d 1
    [ "$status" -eq 2 ]
    grep -q '^proflink-agent: no process given: name one or more PIDs, or --pidof NAME$' <<<"$output"
    run "$AGENT" -d 1 --pidof "no-such-program-$$"
    [ "$status" -eq 2 ]
    grep -q "^proflink-agent: no process named no-such-program-$$\$" <<<"$output"
    run "$AGENT" -d 1 12 x
    [ "$status" -eq 2 ]
    grep -q '^proflink-agent: not a process id: x$' <<<"$output"
}

@test "agent: a process it cannot attach to gets inspect's fix line (the glibc build in a musl program)" {
    libc_independent # the glibc library and a musl program, whatever the variant
    local prog=$ROOT/build/tests/musl/api_demo_service
    [ -x "$prog" ] || skip "no musl build of the test programs (musl-tools)"
    LD_PRELOAD=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so "$prog" -s 30 -t 1 >/dev/null 2>&1 3>&- &
    PIDS+=("$!")
    for _ in $(seq 100); do grep -q elastic-jvmti-linux "/proc/$!/maps" 2>/dev/null && break; sleep 0.05; done
    run "$AGENT" -d 1 "$!"
    echo "$output"
    [ "$status" -eq 1 ]
    grep -q "^proflink-agent: pid $! is not attachable: storage pointer .* is NULL" <<<"$output"
    grep -q "^proflink-agent: fix: this is a musl program (/lib/ld-musl-$ARCH.so.1 is its loader) but the glibc build of proflink is loaded" <<<"$output"
}

@test "agent: several processes at once (--pidof, --children), each reported, JSON per process" {
    not_emulated "ptrace of an emulated process"
    local name=plsvc$$
    prefork "$name"
    run "$AGENT" -d 1.5 -f 50 -n 2 -o "$BATS_TEST_TMPDIR/agent.json" --pidof "$name"
    echo "$output"
    [ "$status" -eq 0 ]
    for w in "${WORKERS[@]}"; do
        grep -q "^=== pid $w (${name:0:15}), process [12] of 2$" <<<"$output"
        grep -q "^proflink-agent: attached to pid $w, " <<<"$output"
    done
    grep -q '^proflink-agent: 2 processes: 2 sampled, 0 not attachable, 0 could not be traced$' <<<"$output"
    "$PY" - "$BATS_TEST_TMPDIR/agent.json" "${WORKERS[@]}" <<'EOF2'
import json, sys
j = json.load(open(sys.argv[1]))
pids = sorted(int(p) for p in sys.argv[2:])
assert [p["pid"] for p in j["processes"]] == pids, j
for p in j["processes"]:
    assert p["samples_with_trace"] > 5 and p["transactions"], p["pid"]
EOF2
    # the whole tree: the parent too (a process without traces is sampled all the same)
    "$AGENT" -d 1 -f 20 --json --children "$PARENT" >"$BATS_TEST_TMPDIR/tree.json"
    "$PY" - "$BATS_TEST_TMPDIR/tree.json" "$PARENT" "${WORKERS[@]}" <<'EOF2'
import json, sys
j = json.load(open(sys.argv.pop(1)))
assert sorted(p["pid"] for p in j["processes"]) == sorted(int(p) for p in sys.argv[1:]), j
EOF2
}

@test "agent: SIGINT while sampling several processes: each stops, reports, none left traced" {
    not_emulated "ptrace of an emulated process"
    prefork plint$$
    "$AGENT" -d 30 "${WORKERS[@]}" >"$BATS_TEST_TMPDIR/agent.out" 2>&1 3>&- &
    local agent=$!
    # each process's report is printed when all have ended: wait until both are being traced
    for w in "${WORKERS[@]}"; do
        for _ in $(seq 100); do grep -q '^TracerPid:[[:space:]]*[1-9]' "/proc/$w/status" && break; sleep 0.05; done
    done
    kill -INT "$agent"
    local rc=0
    wait "$agent" || rc=$?
    cat "$BATS_TEST_TMPDIR/agent.out"
    [ "$rc" -eq 0 ]
    [ "$(grep -c '^proflink-agent: interrupted after' "$BATS_TEST_TMPDIR/agent.out")" -eq 2 ]
    grep -q '^proflink-agent: 2 processes: 2 sampled' "$BATS_TEST_TMPDIR/agent.out"
    for w in "${WORKERS[@]}"; do
        grep -q '^TracerPid:[[:space:]]*0$' "/proc/$w/status"
        refute grep -qE '^State:[[:space:]]*[tT]' "/proc/$w/status"
    done
}

@test "agent: a process where nothing reads the socket is said to be that, not a queue length" {
    libc_independent # bash with the glibc library: the reader threads are the library's
    not_emulated "ptrace of an emulated process"
    local glibc_lib=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so
    # the whole process runs inside a trace (TRACEPARENT), busy, with no tracer and no FIFO
    TRACEPARENT=00-$TRACE-00f067aa0ba902b7-01 LD_PRELOAD=$glibc_lib \
        bash -c 'while :; do :; done' 3>&- &
    PIDS+=("$!")
    local busy=$!
    wait_attachable "$busy"
    run "$AGENT" -d 1 -f 100 "$busy"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q "^proflink-agent: nothing in pid $busy reads its socket: proflink's reader threads are not running" <<<"$output"
    refute grep -q 'net.unix.max_dgram_qlen messages, 10 by default' <<<"$output"
    # with a FIFO the library's threads read the socket: no such line (they start at the
    # program's first thread: a busy program that creates one)
    mkfifo -m 600 "$BATS_TEST_TMPDIR/fifo"
    TRACEPARENT=00-$TRACE-00f067aa0ba902b7-01 LD_PRELOAD=$glibc_lib PROFLINK_FIFO=$BATS_TEST_TMPDIR/fifo \
        /usr/bin/python3 -c 'import threading
threading.Thread(target=lambda: None).start()
while True: pass' 3>&- &
    PIDS+=("$!")
    wait_attachable "$!"
    for _ in $(seq 100); do grep -qx proflink-intake /proc/"$!"/task/*/comm 2>/dev/null && break; sleep 0.05; done
    run "$AGENT" -d 1 -f 100 --json "$!"
    [ "$status" -eq 0 ]
    [ "$("$PY" -c 'import json,sys; print(json.load(sys.stdin)["socket_reader"])' <<<"$output")" = True ]
}

@test "agent: --folded and --flamegraph: per trace, the trace id in the title, its frames, shown by a browser" {
    not_emulated "ptrace of an emulated process"
    start_target "$HELPERS/api_demo_service" -s 6 -t 2
    PIDS+=("$TARGET_PID")
    local dir=$BATS_TEST_TMPDIR/graphs
    run "$AGENT" -d 1.5 -f 50 -o "$BATS_TEST_TMPDIR/agent.json" --folded "$BATS_TEST_TMPDIR/stacks.folded" \
        --flamegraph "$dir" "$TARGET_PID"
    [ "$status" -eq 0 ]
    grep -q "^proflink-agent: folded stacks: $BATS_TEST_TMPDIR/stacks.folded$" <<<"$output"
    grep -qE "^proflink-agent: flame graph of trace [0-9a-f]{32} \([0-9]+ samples\): $dir/trace-[0-9a-f]{32}\.svg$" <<<"$output"
    grep -q "flame graphs\? .*all listed in $dir/index.html$" <<<"$output"
    # folded: "trace T;SERVICE (pid N);transaction X;frames… COUNT", counts equal to the samples
    # the agent took per transaction; one SVG per trace holding its id and every frame it sent
    "$PY" - "$BATS_TEST_TMPDIR/agent.json" "$BATS_TEST_TMPDIR/stacks.folded" "$dir" "$TARGET_PID" <<'EOF2'
import json, re, sys, html, collections
agent = json.load(open(sys.argv[1]))
pid = sys.argv[4]
folded = collections.Counter()
for line in open(sys.argv[2]):
    m = re.fullmatch(r"trace ([0-9a-f]{32});(.*) \(pid (\d+)\);transaction ([0-9a-f]{16});(.+) (\d+)\n", line)
    assert m, line
    assert m.group(3) == pid and m.group(2) == agent["service_name"], line
    folded[(m.group(1), m.group(4))] += int(m.group(6))
want = {(t["trace_id"], t["transaction_id"]): t["samples"] for t in agent["transactions"] if t["samples"]}
assert folded == want, (folded, want)
checked = 0
for t in agent["transactions"]:
    if not t["stack_trace_ids"]:
        continue
    svg = open(f"{sys.argv[3]}/trace-{t['trace_id']}.svg").read()
    assert f"<title>proflink flame graph: trace {t['trace_id']}</title>" in svg
    names = set(html.unescape(n) for n in re.findall(r"<title>([^<(]*) \(", svg))
    for sid in t["stack_trace_ids"]:
        for frame in agent["stacks"][sid]["frames"]:
            assert frame in names, (frame, t["trace_id"])
    assert f"transaction {t['transaction_id']}" in names
    checked += 1
assert checked > 3, checked
EOF2
    # the most sampled trace's graph, rendered by a real browser: our frames are on the screen
    chromium_or_skip
    local svg
    svg=$(sed -n 's/^proflink-agent: flame graph of trace [0-9a-f]* ([0-9]* samples): //p' <<<"$output" | head -1)
    [ -f "$svg" ]
    screenshot_svg "$svg" "$BATS_TEST_TMPDIR/shot.png"
    flame_on_screen "$BATS_TEST_TMPDIR/shot.png"
    # a click on a frame (the service's request loop, then an innermost function) zooms it to
    # the whole width (1200 - 2 x 10 px), whatever was beside it hidden
    run zoomed_width "$svg" serve_requests
    echo "$output"
    [[ "$output" == "1180 hidden="* ]]
    local leaf
    leaf=$(grep -o 'data-n="[a-z_]*"' "$svg" | tail -1 | cut -d'"' -f2)
    run zoomed_width "$svg" "$leaf"
    echo "$leaf: $output"
    [[ "$output" == "1180 hidden="* ]]
}

@test "agent: nginx master and workers (--children): the request's trace in the worker that served it" {
    libc_independent # nginx is Debian's, glibc
    not_emulated "ptrace of an emulated process"
    command -v nginx >/dev/null || skip "nginx is not installed"
    unshare -n true 2>/dev/null || skip "no network namespace of its own (unshare -n)"
    local d=$BATS_TEST_TMPDIR/nginx glibc_lib=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so
    nginx_conf "$d" root 127.0.0.1:8080 400M
    # its own network namespace: port 8080 is nobody else's
    # shellcheck disable=SC2016 # expanded by the inner shell
    unshare -n sh -c 'ip link set lo up && exec "$@"' sh env LD_PRELOAD="$glibc_lib" PROFLINK_HTTP=1 \
        nginx -e "$d/error.log" -p "$d" -c "$d/nginx.conf" >/dev/null 2>&1 3>&- &
    local master=$!
    PIDS+=("$master")
    for _ in $(seq 100); do [ "$(pgrep -c -P "$master")" = 2 ] && break; sleep 0.05; done
    mapfile -t workers < <(pgrep -P "$master")
    [ "${#workers[@]}" -eq 2 ]
    for w in "$master" "${workers[@]}"; do wait_attachable "$w"; done
    # requests with the trace, one after the other, while the agent samples the whole tree
    # shellcheck disable=SC2016 # expanded by the inner shell
    nsenter -t "$master" -n sh -c 'while :; do curl -s -o /dev/null -H "Accept-Encoding: gzip" \
        -H "traceparent: 00-$1-00f067aa0ba902b7-01" http://127.0.0.1:8080/big; done' sh "$TRACE" \
        >/dev/null 2>&1 3>&- &
    local client=$!
    PIDS+=("$client")
    run "$AGENT" -d 3 -f 50 -o "$BATS_TEST_TMPDIR/agent.json" --children "$master"
    kill "$client"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -q '^proflink-agent: 3 processes: 3 sampled, 0 not attachable, 0 could not be traced$' <<<"$output"
    # the trace is in a worker's report, never in the master's (it serves no request)
    "$PY" - "$BATS_TEST_TMPDIR/agent.json" "$master" "$TRACE" <<'EOF2'
import json, sys
j, master, trace = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
by_pid = {p["pid"]: p for p in j["processes"]}
assert len(by_pid) == 3 and master in by_pid, by_pid.keys()
def traced(p):
    return sum(t["samples"] for t in p["transactions"] if t["trace_id"] == trace)
assert traced(by_pid[master]) == 0, by_pid[master]["transactions"]
assert sum(traced(p) for pid, p in by_pid.items() if pid != master) > 5, \
    {pid: traced(p) for pid, p in by_pid.items()}
EOF2
}

@test "agent: a trace across two processes: one flame graph holding both, one per process's transaction" {
    libc_independent # bash with the glibc library
    not_emulated "ptrace of an emulated process"
    local glibc_lib=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so dir=$BATS_TEST_TMPDIR/graphs
    # two busy processes inside the same trace and parent span (TRACEPARENT)
    for _ in 1 2; do
        TRACEPARENT=00-$TRACE-00f067aa0ba902b7-01 LD_PRELOAD=$glibc_lib \
            bash -c 'while :; do :; done' 3>&- &
        PIDS+=("$!")
        wait_attachable "$!"
    done
    run "$AGENT" -d 1 -f 50 --flamegraph "$dir" "${PIDS[@]}"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qE "^proflink-agent: flame graph of trace $TRACE \([0-9]+ samples\): $dir/trace-$TRACE.svg$" <<<"$output"
    grep -q "in 2 processes, 2 transactions" "$dir/trace-$TRACE.svg"
    for p in "${PIDS[@]}"; do
        grep -q "<title>proflink flame graph: trace $TRACE, transaction 00f067aa0ba902b7 (pid $p)</title>" \
            "$dir/trace-$TRACE-txn-00f067aa0ba902b7-pid-$p.svg"
        grep -q "(pid $p)" "$dir/trace-$TRACE.svg"
        grep -q "href=\"trace-$TRACE-txn-00f067aa0ba902b7-pid-$p.svg\"" "$dir/index.html"
    done
}
