#!/usr/bin/env bash
# demo.sh — the whole correlation loop on one machine, in about 10 seconds (`make demo`).
#
#  1. a small multi-threaded service (tests/helpers/api_demo_service.c) runs under proflink; it
#     marks each "request" as a trace with proflink_set_trace and hands every ended transaction
#     to proflink_end_transaction;
#  2. proflink-inspect shows what an eBPF profiler concludes about the process;
#  3. proflink-agent, a local stand-in for the profiler, samples the service's threads, unwinds
#     their stacks and sends the profiler's correlation messages to the service's socket;
#  4. proflink delivers each transaction, after samples-delay-ms, with the stack-trace ids the
#     profiler reported for it; the service prints them and proflink writes JSON lines to a FIFO;
#  5. the demo checks that those ids and counts are exactly the ones the agent sent;
#  6. it ends with a flame graph per request (trace), written by the agent under build/demo/.
# Exit status 0 only if they match. Paths are printed absolute, so that a line copied into a
# script works from any directory. Words (apmint, transaction, deferral, registration):
# docs/glossary.md.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ARCH=$(uname -m)
LIB=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so
SERVICE=$ROOT/build/tests/api_demo_service
INSPECT=$ROOT/build/proflink-inspect
AGENT=$ROOT/build/proflink-agent
DELAY_MS=500   # samples-delay-ms the agent registers: above its 250 ms reporting interval
SAMPLE_S=4
SERVICE_S=6
FLAME_DIR=$ROOT/build/demo/flamegraphs   # kept after the demo (the rest is in a temporary directory)

make -s -C "$ROOT" build/tests/api_demo_service >/dev/null # only what the demo runs (no C++, no sanitizers)
for f in "$LIB" "$SERVICE" "$INSPECT" "$AGENT"; do
    [ -x "$f" ] || [ -f "$f" ] || { echo "demo: $f is missing (run make all)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "demo: python3 is needed for the final check" >&2; exit 1; }

WORK=$(mktemp -d /tmp/proflink-demo.XXXXXX)
SERVICE_PID='' CAT_PID=''
cleanup() {
    if [ -n "$SERVICE_PID" ]; then kill "$SERVICE_PID" 2>/dev/null || true; fi
    if [ -n "$CAT_PID" ]; then kill "$CAT_PID" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

heading() { printf '\n=== %s\n' "$*"; }
# short N: lines longer than N characters end at the last space or comma before N, then "…",
# so that no id or word is cut in the middle
short() {
    awk -v n="$1" '{
        if (length($0) <= n) { print; next }
        s = substr($0, 1, n)
        i = match(s, /[ ,][^ ,]*$/)
        if (i > 1) s = substr(s, 1, i)
        print s "…"
    }'
}
DEMO_START=$(date +%s%N)

mkfifo -m 600 "$WORK/fifo"
# Held open (read-write: never blocks) so the pipe has a reader before the service starts: the
# library opens the FIFO at start and, finding no reader, retries only once a second.
exec {FIFO_FD}<>"$WORK/fifo"
cat "$WORK/fifo" >"$WORK/fifo.jsonl" {FIFO_FD}>&- &
CAT_PID=$!

heading "1. The service: 3 threads serving requests for ${SERVICE_S} s under proflink"
echo "LD_PRELOAD=$LIB PROFLINK_FIFO=$WORK/fifo \\"
echo "    OTEL_SERVICE_NAME=proflink-demo ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \\"
echo "    $SERVICE -s $SERVICE_S -t 3"
LD_PRELOAD=$LIB PROFLINK_FIFO=$WORK/fifo OTEL_SERVICE_NAME=proflink-demo \
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$WORK \
    "$SERVICE" -s "$SERVICE_S" -t 3 >"$WORK/service.out" 2>"$WORK/service.err" {FIFO_FD}>&- &
SERVICE_PID=$!
for _ in $(seq 100); do
    "$INSPECT" --no-threads "$SERVICE_PID" >/dev/null 2>&1 && break
    kill -0 "$SERVICE_PID" 2>/dev/null || break
    sleep 0.05
done
head -n 1 "$WORK/service.out"

heading "2. What a profiler sees in pid $SERVICE_PID (proflink-inspect)"
"$INSPECT" "$SERVICE_PID" | grep -E '^(PASS|FAIL|WARN|SKIP)|attach' | short 150 || true

heading "3. The stand-in profiler samples it: $AGENT --register $DELAY_MS,demo-host -d $SAMPLE_S -f 50 --flamegraph $FLAME_DIR $SERVICE_PID"
rm -rf "$FLAME_DIR"
"$AGENT" --register "$DELAY_MS,demo-host" -d "$SAMPLE_S" -f 50 -n 8 -o "$WORK/agent.json" \
    --flamegraph "$FLAME_DIR" "$SERVICE_PID" >"$WORK/agent.out" ||
    { echo "demo: proflink-agent failed" >&2; exit 1; }
grep -v 'flame graph' "$WORK/agent.out" | short 160 | awk '
        /^Stacks/ { stacks = 1; print; next }
        stacks && /^  / { if (++n <= 12) print; else if (n == 13) print "  … (more stacks)"; next }
        { stacks = 0; print }'

heading "4. proflink delivers the ended transactions ${DELAY_MS} ms later (the service prints them)"
status=0
wait "$SERVICE_PID" || status=$?
SERVICE_PID=
grep -E '^registration' "$WORK/service.out" || true
grep -E '^txn .* n=[1-9]' "$WORK/service.out" | awk 'NR <= 5' | short 160
echo "…"
tail -n 1 "$WORK/service.out"
[ "$status" -eq 0 ] || { echo "demo: the service exited with status $status" >&2; cat "$WORK/service.err" >&2; exit 1; }

# The FIFO's writers are gone (the service and our holder): cat sees end of file.
exec {FIFO_FD}>&-
for _ in $(seq 40); do kill -0 "$CAT_PID" 2>/dev/null || break; sleep 0.05; done
kill "$CAT_PID" 2>/dev/null || true
wait "$CAT_PID" 2>/dev/null || true
CAT_PID=

heading "5. The same as JSON lines on the FIFO (PROFLINK_FIFO)"
grep -m1 '"type":"registration"' "$WORK/fifo.jsonl" || true
grep -m3 '"type":"correlation"' "$WORK/fifo.jsonl" || true
grep '"type":"transaction"' "$WORK/fifo.jsonl" | grep -v '"stack_trace_ids":{}' | awk 'NR <= 3' | short 200
echo "($(grep -c '' "$WORK/fifo.jsonl") records)"

heading "6. Check: the ids in the transaction records are the ones the agent sent"
python3 - "$WORK/agent.json" "$WORK/fifo.jsonl" "$WORK/service.out" <<'EOF'
import json, sys
from collections import Counter, defaultdict

agent = json.load(open(sys.argv[1]))
sent = {(t["trace_id"], t["transaction_id"]): Counter(t["stack_trace_ids"])
        for t in agent["transactions"] if t["stack_trace_ids"]}

fifo_txn = defaultdict(Counter)   # a large transaction may be split over several records
corr = Counter()
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r["type"] == "transaction":
        fifo_txn[(r["trace_id"], r["transaction_id"])].update(r["stack_trace_ids"])
    elif r["type"] == "correlation":
        corr[(r["trace_id"], r["transaction_id"], r["stack_trace_id"])] += r["count"]

svc_txn = {}                      # what the tracer's callback received
for line in open(sys.argv[3]):
    if line.startswith("txn "):
        f = dict(kv.split("=", 1) for kv in line.split()[1:])
        ids = Counter()
        if f["ids"] != "-":
            for item in f["ids"].split(","):
                k, c = item.rsplit(":", 1)
                ids[k] += int(c)
        svc_txn[(f["trace"], f["transaction"])] = ids

problems = []
for key, ids in sent.items():
    if fifo_txn.get(key) != ids:
        problems.append(f"FIFO transaction {key}: {dict(fifo_txn.get(key, {}))} != agent {dict(ids)}")
    if svc_txn.get(key) != ids:
        problems.append(f"callback transaction {key}: {dict(svc_txn.get(key, {}))} != agent {dict(ids)}")
for key, ids in fifo_txn.items():
    if ids and key not in sent:
        problems.append(f"FIFO transaction {key} has ids the agent never sent: {dict(ids)}")
if sum(corr.values()) != agent["sent"]:
    problems.append(f"{sum(corr.values())} correlation records on the FIFO, agent sent {agent['sent']}")

n_ids = sum(len(c) for c in sent.values())
n_samples = sum(sum(c.values()) for c in sent.values())
if problems:
    print(f"demo: MISMATCH ({len(problems)} problems):")
    for p in problems[:10]:
        print("  " + p)
    sys.exit(1)
print(f"demo: {len(sent)} transactions carried {n_ids} stack-trace ids ({n_samples} samples); "
      f"all match the agent's stacks (FIFO records and tracer callback alike)")
if agent["dropped"]:
    print(f"demo: {agent['dropped']} more samples were \"dropped (socket full)\": the agent sends in "
          f"bursts, and when a burst outgrows the socket's queue (net.unix.max_dgram_qlen) the kernel "
          f"refuses the rest; the real profiler loses them the same way, so those samples carry no "
          f"trace ids.")
print("demo: in a profiling UI each stack-trace id is one sampled stack (its frames); a transaction's "
      "ids with their counts are where that request spent its CPU time, so the trace view can show "
      "the profile of one request.")
EOF
heading "7. A flame graph per request: where each trace spent its CPU (open in a browser)"
grep 'flame graph' "$WORK/agent.out" | sed 's/^proflink-agent: //'
echo "(the words used here: $ROOT/docs/glossary.md)"
# the real OpenTelemetry eBPF profiler too, where make e2e has built it (otherwise it says why not)
bash "$ROOT/scripts/demo_profiler.sh" "$LIB" "$SERVICE"
echo "demo: done in $(( ($(date +%s%N) - DEMO_START) / 1000000 )) ms"
