#!/usr/bin/env bats
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2153 # ROOT, LIB are set and SOCK is read by the loaded helpers
# The Node.js integration (integrations/node, proflink-otel) with the real OpenTelemetry JS SDK
# from npm: what a profiler reads from outside while requests run (proflink-inspect, ptrace),
# correlation datagrams sent the profiler's way coming back on the exported root spans, and the
# same program without the library. The test service is tests/node/fixture_server.js.
load message_helpers

PKG=$ROOT/integrations/node
FIXTURE=$ROOT/tests/node/fixture_server.js
EXAMPLE=$PKG/example/server.js
PORT=$(free_port)
PORT2=$(free_port)

setup() {
    command -v node >/dev/null || skip "node is not installed"
    [ -d "$PKG/node_modules/@opentelemetry/sdk-trace-node" ] ||
        skip "run 'npm ci' in integrations/node first (.ci/run does)"
    setup_sockdir
    W=$BATS_TEST_TMPDIR
    mkdir -p "$W/release"
    PIDS=()
}

teardown() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    # stop_msg_target of message_helpers is not used: the servers get no commands on fd 8
    TARGET_PID=
    [ -n "${SOCKDIR:-}" ] && rm -rf "$SOCKDIR"
    return 0
}

# start_node PORT ERRFILE PRELOAD(yes|no) CMD… — a node server in the background; waits for its
# "listening" line; sets NODE_PID.
start_node() {
    local port=$1 err=$2 pre=$3
    shift 3
    if [ "$pre" = yes ]; then
        env PORT="$port" LD_PRELOAD="$LIB" "$@" >"$err.out" 2>"$err" 3>&- &
    else
        env PORT="$port" "$@" >"$err.out" 2>"$err" 3>&- &
    fi
    NODE_PID=$!
    PIDS+=("$NODE_PID")
    wait_for_line "$err" '^listening'
}

start_fixture() { # [VAR=VALUE…]
    start_node "$PORT" "$W/server.err" yes "$@" EXPORT_FILE="$W/export.jsonl" \
        MARKER_FILE="$W/marker" RELEASE_DIR="$W/release" node "$FIXTURE"
    TARGET_PID=$NODE_PID
    wait_attachable "$TARGET_PID"
}

get() { curl -sS --max-time 30 "http://127.0.0.1:$PORT$1"; }

# wait_stats KEY N — until the fixture's proflink_get_stats shows KEY >= N (10 s).
wait_stats() {
    local i v
    for i in $(seq 100); do
        v=$(get /stats | tr ' ' '\n' | sed -n "s/^$1=//p")
        [ -n "$v" ] && [ "$v" -ge "$2" ] && return 0
        sleep 0.1
    done
    echo "stat $1 never reached $2: $(get /stats)" >&2
    return 1
}

# The JS thread (tid = pid) as the profiler reads it: "present trace span transaction otel-root".
js_thread() {
    inspect_json "$TARGET_PID"
    jget "' '.join(str(x) for t in j['threads'] if t['tid'] == $TARGET_PID for x in [t['apm']['trace_present'], t['apm']['trace_id'], t['apm']['span_id'], t['apm']['transaction_id'], (t['otel'] or {}).get('trace_id'), ((t['otel'] or {}).get('attributes') or {}).get('local_root_span_id')])"
}

@test "node: each request's ids on the JS thread across awaits; profiler ids on exported roots only" {
    start_fixture
    SOCK=$(socket_of "$TARGET_PID")
    # the profiler registers with a long delay: sampled roots are held until /flush
    send reg 60000
    wait_stats registrations 1
    # three concurrent requests; each stops on CPU in its third round (after three awaits, while
    # the others are in flight) and says so in the marker file
    local i
    for i in 1 2 3; do
        get "/req?id=$i&rounds=6&hold=3" >"$W/resp.$i" &
        PIDS+=("$!")
    done
    declare -A TRACE_OF ROOT_OF
    for i in 1 2 3; do
        wait_lines_in "$W/marker" '^hold ' "$i"
        read -r _ id trace span root < <(sed -n "${i}p" "$W/marker")
        TRACE_OF[$id]=$trace ROOT_OF[$id]=$root
        # apmint and OTel records of the JS thread: this request's trace, its "work" span, and
        # its root span as the transaction
        [ "$(js_thread)" = "1 $trace $span $root $trace $root" ]
        touch "$W/release/$id"
    done
    for i in 1 2 3; do
        wait_for_line "$W/resp.$i" "^done $i\$"
    done
    # idle: no trace on the JS thread
    [ "$(js_thread | cut -d' ' -f1)" = 0 ]
    # an unsampled root is exported at once (not held) while the sampled ones still wait
    get "/req?id=4&rounds=2&sampled=0" | grep -qx 'done 4'
    wait_for_line "$W/export.jsonl" '"name":"request 4"'
    run grep -c '"name":"request [123]"' "$W/export.jsonl"
    [ "$output" = 0 ]
    # the profiler's samples: request 1 has two stacks (3 and 2 samples), request 2 one; request
    # 3 none; one sent under a child span's id (not a transaction) must land nowhere
    send corr "${TRACE_OF[1]}" "${ROOT_OF[1]}" "$ID_A" 3
    send corr "${TRACE_OF[1]}" "${ROOT_OF[1]}" "$ID_B" 2
    send corr "${TRACE_OF[2]}" "${ROOT_OF[2]}" "$ID_A" 1
    span3=$(sed -n 's/^hold 3 [0-9a-f]* \([0-9a-f]*\) .*/\1/p' "$W/marker")
    send corr "${TRACE_OF[3]}" "$span3" "$ID_B" 7
    wait_stats correlations 4
    get /flush | grep -qx flushed
    "$PY" - "$W/export.jsonl" "$B64_A" "$B64_B" <<'PY'
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1])]
A, B = sys.argv[2], sys.argv[3]
attr = "elastic.profiler_stack_trace_ids"
by = {s["name"]: s for s in spans if s["parentSpanId"] is None}
assert sorted(by) == ["request 1", "request 2", "request 3", "request 4"], sorted(by)
assert sorted(by["request 1"]["attributes"][attr]) == sorted([A, A, A, B, B]), by["request 1"]
assert by["request 2"]["attributes"][attr] == [A], by["request 2"]
assert attr not in by["request 3"]["attributes"], by["request 3"]
assert attr not in by["request 4"]["attributes"] and not by["request 4"]["sampled"]
children = [s for s in spans if s["parentSpanId"] is not None]
assert len(children) == 4 and all(attr not in s["attributes"] for s in children), children
for s in children:  # each child under its own root
    assert by[[n for n in by if by[n]["spanId"] == s["parentSpanId"]][0]]["traceId"] == s["traceId"]
PY
}

# wait_lines_in FILE PATTERN N — until FILE has N lines matching PATTERN (20 s).
wait_lines_in() {
    touch "$1"
    OUT=$1 wait_lines "$2" "$3" 200
}

@test "node: the SDK's resource is the OTel process context's (service.instance.id, telemetry.sdk.*)" {
    start_fixture
    inspect_json "$TARGET_PID"
    [ "$(jget "j['otel_process_context']['resource']['telemetry.sdk.language']")" = cpp ]
    # published when the first span starts (span processors see the resource only then)
    get "/req?id=1&rounds=1" | grep -qx 'done 1'
    inspect_json "$TARGET_PID"
    [ "$(jget "j['otel_process_context']['resource']['service.instance.id']")" = fixture-instance-1 ]
    [ "$(jget "j['otel_process_context']['resource']['telemetry.sdk.language']")" = nodejs ]
    [ "$(jget "j['otel_process_context']['resource']['telemetry.sdk.name']")" = opentelemetry ]
    [ "$(jget "j['storage']['service_name']")" = node-fixture ]
}

# pool_threads_traced INHERIT — runs /fs (the first async fs call, inside a span: libuv starts
# its pool threads then); sets TRACED (threads carrying a trace afterwards) and CREATED (threads
# the request created).
pool_threads_traced() {
    start_fixture PROFLINK_INHERIT="$1"
    local before
    before=$(find "/proc/$TARGET_PID/task" -mindepth 1 -maxdepth 1 -printf '%f,')
    get /fs | grep -qx 'fs true'
    inspect_json "$TARGET_PID"
    # only the threads the request created: the JS thread itself may still be finishing the
    # request (its context is restored after the callback that answered it)
    CREATED=$(jget "sum(1 for t in j['threads'] if str(t['tid']) not in '$before'.split(','))")
    TRACED=$(jget "sum(1 for t in j['threads'] if str(t['tid']) not in '$before'.split(',') and t['apm'] and t['apm']['trace_present'])")
    echo "traced $TRACED created $CREATED"
}

@test "node: libuv pool threads created inside a request carry no trace after it" {
    pool_threads_traced 0
    [ "$CREATED" -ge 1 ] # the request did create the pool
    [ "$TRACED" -eq 0 ]
}

@test "node: with PROFLINK_INHERIT=1 the same pool threads keep the request's trace (the test sees it)" {
    pool_threads_traced 1
    [ "$CREATED" -ge 1 ]
    [ "$TRACED" -eq "$CREATED" ]
}

# example_run PRELOAD PORT — the example under (or without) the library; the same requests;
# responses and the exported spans reduced to what does not change between runs.
example_run() {
    local pre=$1 port=$2 tag=$3
    start_node "$port" "$W/ex.$tag.err" "$pre" EXPORT_FILE="$W/ex.$tag.jsonl" node "$EXAMPLE"
    local u
    for u in '/work?ms=12' '/work?ms=3' '/nope' '/work?ms=0'; do
        curl -sS -i --max-time 30 "http://127.0.0.1:$port$u" | tr -d '\r' | grep -vE '^(Date|Keep-Alive|Connection):'
    done >"$W/ex.$tag.resp"
    # every root ended (delivered at once: no profiler spoke, proflink is in auto mode)
    wait_lines_in "$W/ex.$tag.jsonl" '"parentSpanId":null' 4
    "$PY" - "$W/ex.$tag.jsonl" >"$W/ex.$tag.spans" <<'PY'
import json, sys
spans = [json.loads(l) for l in open(sys.argv[1])]
ids = {s["spanId"]: s["name"] for s in spans}
for s in spans:
    print(s["name"], s["kind"], ids.get(s["parentSpanId"]), json.dumps(s["attributes"], sort_keys=True))
PY
}

@test "node: the example behaves the same with and without the library" {
    example_run no "$PORT" plain
    example_run yes "$PORT2" preload
    [ -s "$W/ex.plain.resp" ]
    diff "$W/ex.plain.resp" "$W/ex.preload.resp"
    diff <(sort "$W/ex.plain.spans") <(sort "$W/ex.preload.spans")
    grep -q '"slices":3' "$W/ex.plain.resp"
    [ "$(grep -c . "$W/ex.plain.spans")" -eq 10 ]
}

@test "node: the README recipe: the example under proflink-run, sampled by proflink-agent, exports the agent's ids" {
    [ -x "$ROOT/build/proflink-agent" ] || skip "proflink-agent was not built (libunwind-dev)"
    env PORT="$PORT" EXPORT_FILE="$W/spans.jsonl" "$ROOT/scripts/proflink-run" --service checkout -- \
        node "$EXAMPLE" >"$W/ex.out" 2>"$W/ex.err" 3>&- &
    PIDS+=("$!")
    wait_for_line "$W/ex.err" '^listening'
    TARGET_PID=$(sed -n 's/.*(pid \([0-9]*\)).*/\1/p' "$W/ex.err")
    wait_attachable "$TARGET_PID"
    "$ROOT/build/proflink-agent" -d 3 --register 500 --json -o "$W/agent.json" "$TARGET_PID" \
        >/dev/null 2>"$W/agent.err" 3>&- &
    local agent=$! n=0
    PIDS+=("$agent")
    # requests for as long as the agent samples (bounded)
    while kill -0 "$agent" 2>/dev/null && [ "$n" -lt 60 ]; do
        curl -sS --max-time 30 "http://127.0.0.1:$PORT/work?ms=120" >/dev/null
        n=$((n + 1))
    done
    wait "$agent"
    [ -s "$W/agent.json" ]
    # the last transactions are delivered samples-delay-ms (500) after they ended
    wait_lines_in "$W/spans.jsonl" '"parentSpanId":null' "$n"
    "$PY" - "$W/agent.json" "$W/spans.jsonl" <<'PY'
import json, sys
from collections import Counter
agent = json.load(open(sys.argv[1]))
spans = [json.loads(l) for l in open(sys.argv[2])]
roots = {(s["traceId"], s["spanId"]): s for s in spans if s["parentSpanId"] is None}
assert agent["dropped"] == 0 and agent["sent"] > 0, agent["sent"]
matched = 0
for t in agent["transactions"]:
    root = roots.get((t["trace_id"], t["transaction_id"]))
    assert root is not None, ("the agent saw a transaction that is no exported root", t)
    got = Counter(root["attributes"].get("elastic.profiler_stack_trace_ids", []))
    assert got == Counter(t["stack_trace_ids"]), (got, t)
    matched += 1
assert matched >= 4, matched  # 8 requests of 120 ms of CPU at 20 Hz
for s in spans:
    if s["parentSpanId"] is not None:
        assert "elastic.profiler_stack_trace_ids" not in s["attributes"], s
print("matched", matched)
PY
}
