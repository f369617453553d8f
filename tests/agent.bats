#!/usr/bin/env bats
# serial: samples the CPU of its target and counts the samples
# proflink-agent, the local stand-in for the eBPF profiler, against the demo service running
# under the library: it must attach only where the profiler would, its correlation messages must
# reach the service exactly as sent (FIFO records, message callback, deferred transactions), a
# registration must change the deferral delay, and the sampled process must go on as if nothing
# happened (no thread left in a ptrace stop, exit status 0).

load helpers

AGENT=$ROOT/build/proflink-agent
SERVICE=$HELPERS/api_demo_service

setup() {
    setup_sockdir
    FIFO=$BATS_TEST_TMPDIR/fifo
    mkfifo -m 600 "$FIFO"
    # Held open (read-write: never blocks) so that the pipe has a reader from now on: proflink
    # opens the FIFO at start and, finding no reader, retries only once a second.
    exec {FIFO_FD}<>"$FIFO"
    # the reader must not hold bats' fd 3 (bats would wait for it) nor our writer end (no EOF)
    cat "$FIFO" >"$BATS_TEST_TMPDIR/fifo.jsonl" 3>&- {FIFO_FD}>&- &
    CAT_PID=$!
    export PROFLINK_FIFO=$FIFO ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true
}

teardown() {
    stop_target
    [ -z "${FIFO_FD:-}" ] || exec {FIFO_FD}>&-
    kill "$CAT_PID" 2>/dev/null || true
    wait "$CAT_PID" 2>/dev/null || true
    rm -rf "$SOCKDIR"
}

# Waits for the service to finish on its own; its status in $SERVICE_STATUS.
wait_service() {
    SERVICE_STATUS=0
    wait "$TARGET_PID" || SERVICE_STATUS=$?
    TARGET_PID=
    # the FIFO's writers are gone: cat ends
    exec {FIFO_FD}>&-
    FIFO_FD=
    for _ in $(seq 40); do kill -0 "$CAT_PID" 2>/dev/null || break; sleep 0.05; done
}

# No thread of pid is in a stopped or tracing-stop state.
no_thread_stopped() {
    local pid=$1 f state
    for f in /proc/"$pid"/task/*/status; do
        state=$(awk '/^State:/ {print $2}' "$f" 2>/dev/null) || continue
        if [ "$state" = t ] || [ "$state" = T ]; then
            echo "thread $f is in state $state" >&2
            return 1
        fi
    done
}

# TracerPid of every thread is 0 (the agent detached everywhere).
no_tracer() {
    local pid=$1 f tp
    for f in /proc/"$pid"/task/*/status; do
        tp=$(awk '/^TracerPid:/ {print $2}' "$f" 2>/dev/null) || continue
        [ -z "$tp" ] || [ "$tp" = 0 ] || { echo "$f: TracerPid $tp" >&2; return 1; }
    done
}

@test "agent: refuses a process without the library, a missing pid and bad usage" {
    sleep 30 &
    local plain=$!
    run "$AGENT" -d 1 "$plain"
    kill "$plain"
    wait "$plain" 2>/dev/null || true
    [ "$status" -eq 1 ]
    [[ "$output" == *"is not attachable"* ]]
    [[ "$output" == *"elastic-jvmti-linux"* ]]

    run "$AGENT" -d 1 999999999
    [ "$status" -eq 2 ]
    run "$AGENT" -d 1 4194304
    [ "$status" -eq 2 ]
    [[ "$output" == *"no such process"* || "$output" == *"No such"* || "$output" == *"not a process id"* ]]

    run "$AGENT" -f 0 1
    [ "$status" -eq 2 ]
    run "$AGENT"
    [ "$status" -eq 2 ]
    [[ "$output" == *usage* ]]
}

@test "agent: refuses a process where the library is disabled" {
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false \
        LD_PRELOAD=$LIB "$SERVICE" -s 3 >"$BATS_TEST_TMPDIR/target.out" 2>&1 &
    TARGET_PID=$!
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready'
    run "$AGENT" -d 1 "$TARGET_PID"
    [ "$status" -eq 1 ]
    [[ "$output" == *"is not attachable"* ]]
}

@test "agent: its correlations reach the service exactly as sent, and the service runs on" {
    start_target "$SERVICE" -s 5 -t 3
    "$AGENT" --json -d 2 -f 50 "$TARGET_PID" >"$BATS_TEST_TMPDIR/agent.json"
    no_thread_stopped "$TARGET_PID"
    no_tracer "$TARGET_PID"
    kill -0 "$TARGET_PID"
    wait_service
    [ "$SERVICE_STATUS" -eq 0 ]
    "$PY" - "$BATS_TEST_TMPDIR/agent.json" "$BATS_TEST_TMPDIR/fifo.jsonl" \
        "$BATS_TEST_TMPDIR/target.out" <<'EOF'
import json, re, sys
from collections import Counter, defaultdict
agent = json.load(open(sys.argv[1]))
assert agent["source"] == "elastic" and agent["registration"] is None, agent
assert agent["samples_with_trace"] > 20, agent
assert agent["sent"] > 0 and agent["failed"] == 0 and agent["unwind_failures"] == 0, agent
assert agent["sent"] + agent["dropped"] == agent["samples_with_trace"], agent

sent = Counter()
for t in agent["transactions"]:
    assert re.fullmatch(r"[0-9a-f]{32}", t["trace_id"]) and re.fullmatch(r"[0-9a-f]{16}", t["transaction_id"])
    for sid, c in t["stack_trace_ids"].items():
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", sid), sid
        assert sid in agent["stacks"], sid
        sent[(t["trace_id"], t["transaction_id"], sid)] += c
assert sum(sent.values()) == agent["sent"]
# every stack is one of the service's workers, nearly all in its recognisable work functions
# (a few land in proflink_set_trace/clear_trace, inside the trace too)
work = {"compute_prices", "render_report", "hash_passwords"}
in_work = cut_short = 0
api = {"proflink_set_trace", "proflink_clear_trace"}
for sid, s in agent["stacks"].items():
    # a sample inside a frameless API call is, rarely (in 1 run of 16 here), unwound no further
    # than that call by the stand-in's libunwind: only those may lack the worker's frames
    if "serve_requests" not in s["frames"]:
        assert set(s["frames"]) <= api, (sid, s["frames"])
        cut_short += s["samples"]
    in_work += s["samples"] if work & set(s["frames"]) else 0
assert cut_short <= max(1, 0.02 * agent["samples_with_trace"]), cut_short
assert in_work >= 0.9 * agent["samples_with_trace"], (in_work, agent["samples_with_trace"])

corr, txn = Counter(), defaultdict(Counter)
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r["type"] == "correlation":
        corr[(r["trace_id"], r["transaction_id"], r["stack_trace_id"])] += r["count"]
    elif r["type"] == "transaction":
        txn[(r["trace_id"], r["transaction_id"])].update(r["stack_trace_ids"])
assert corr == sent, ("FIFO correlation records differ from what the agent sent",
                      sum(corr.values()), sum(sent.values()), len(set(sent) - set(corr)),
                      len(set(corr) - set(sent)))

# deferred transactions carry every id (the default delay, 1000 ms, covers the 250 ms bursts)
per_txn = defaultdict(Counter)
for (t, x, sid), c in sent.items():
    per_txn[(t, x)][sid] += c
for key, ids in per_txn.items():
    assert txn.get(key) == ids, (key, dict(txn.get(key, {})), dict(ids))

done = [l for l in open(sys.argv[3]) if l.startswith("done ")][-1]
f = dict(kv.split("=") for kv in done.split()[1:])
assert int(f["correlations"]) == agent["sent"] == int(f["samples"]), (done, agent["sent"])
assert f["delay_ms"] == "1000", done
assert f["requests"] == f["delivered"], done
EOF
}

@test "agent: a registration sets the service's deferral delay and host id" {
    start_target "$SERVICE" -s 4 -t 2
    run "$AGENT" --register 300,agent-test-host -d 1 "$TARGET_PID"
    [ "$status" -eq 0 ]
    [[ "$output" == *'registration sent: samples-delay-ms 300, host id "agent-test-host"'* ]]
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^registration delay_ms=300 host_id=agent-test-host$'
    wait_service
    [ "$SERVICE_STATUS" -eq 0 ]
    grep -q '^done .* delay_ms=300$' "$BATS_TEST_TMPDIR/target.out"
    grep -q '"type":"registration".*"samples_delay_ms":300,"host_id":"agent-test-host"' \
        "$BATS_TEST_TMPDIR/fifo.jsonl"
}

@test "agent: a registration shorter than its reporting interval is warned about" {
    start_target "$SERVICE" -s 3 -t 1
    run "$AGENT" --register 100 -d 0.5 "$TARGET_PID"
    [ "$status" -eq 0 ]
    [[ "$output" == *"warning: samples-delay-ms 100 is shorter"* ]]
}

@test "agent: --otel reads the OpenTelemetry thread context and finds the same transactions" {
    start_target "$SERVICE" -s 4 -t 2
    "$AGENT" --otel --json -d 1.5 -f 50 "$TARGET_PID" >"$BATS_TEST_TMPDIR/agent.json"
    no_thread_stopped "$TARGET_PID"
    wait_service
    [ "$SERVICE_STATUS" -eq 0 ]
    "$PY" - "$BATS_TEST_TMPDIR/agent.json" "$BATS_TEST_TMPDIR/target.out" <<'EOF'
import json, sys
agent = json.load(open(sys.argv[1]))
assert agent["source"] == "otel" and agent["samples_with_trace"] > 10, agent
served = set()
for l in open(sys.argv[2]):
    if l.startswith("txn "):
        f = dict(kv.split("=", 1) for kv in l.split()[1:])
        served.add((f["trace"], f["transaction"]))
seen = {(t["trace_id"], t["transaction_id"]) for t in agent["transactions"]}
assert seen and seen <= served, seen - served
EOF
}

@test "agent: threads that come and go while sampled, and SIGINT, leave the target unharmed" {
    LD_PRELOAD=$LIB "$HELPERS/target_churn" 60000 8 >"$BATS_TEST_TMPDIR/target.out" 2>&1 &
    TARGET_PID=$!
    wait_attachable "$TARGET_PID"
    run "$AGENT" --all-threads -d 1 -f 200 "$TARGET_PID"
    [ "$status" -eq 0 ]
    local churn_status=0
    wait "$TARGET_PID" || churn_status=$?
    TARGET_PID=
    [ "$churn_status" -eq 0 ]
    grep -q '^churned 60000' "$BATS_TEST_TMPDIR/target.out"

    # SIGINT in the middle: the agent detaches, reports, exits 0
    start_target "$SERVICE" -s 4 -t 2
    local svc=$TARGET_PID
    "$AGENT" -d 30 "$svc" >"$BATS_TEST_TMPDIR/agent.out" 2>&1 &
    local agent=$!
    wait_for_line "$BATS_TEST_TMPDIR/agent.out" '^proflink-agent: sampling ' # attached, sampling
    kill -INT "$agent"
    wait "$agent"
    grep -q 'interrupted after' "$BATS_TEST_TMPDIR/agent.out"
    no_thread_stopped "$svc"
    no_tracer "$svc"
    wait_service
    [ "$SERVICE_STATUS" -eq 0 ]
}

@test "agent: datagrams the kernel refused are reported with the target's queue length and the fix" {
    unshare -n true 2>/dev/null || skip "no new network namespace here"
    # a network namespace whose queue holds one datagram: the agent's bursts overflow it
    LD_PRELOAD=$LIB unshare -n sh -c 'sysctl -qw net.unix.max_dgram_qlen=0 && exec "$@"' sh \
        "$SERVICE" -s 5 -t 3 >"$BATS_TEST_TMPDIR/target.out" 2>"$BATS_TEST_TMPDIR/target.err" 3>&- &
    TARGET_PID=$!
    # the pid is sh's (with the library) until sysctl has run and sh has exec'd the service: an
    # agent started before then samples sh and finds no trace
    wait_for_line "$BATS_TEST_TMPDIR/target.out" '^ready pid='
    wait_attachable "$TARGET_PID"
    run "$AGENT" -d 2 -f 200 --all-threads "$TARGET_PID"
    echo "$output"
    [ "$status" -eq 0 ]
    grep -qE '^proflink-agent: [0-9]+ correlation messages sent in [0-9]+ bursts, [1-9][0-9]* dropped \(socket full\)' <<<"$output"
    grep -q "net.unix.max_dgram_qlen messages, 10 by default, 0 in pid $TARGET_PID's network namespace" <<<"$output"
    grep -q "fix: net.unix.max_dgram_qlen=$(sed -n 's/^net\.unix\.max_dgram_qlen = //p' "$ROOT/packaging/deb/sysctl.conf") in that namespace before the service starts" <<<"$output"
}
