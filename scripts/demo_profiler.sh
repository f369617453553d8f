#!/usr/bin/env bash
# demo_profiler.sh — the demo's last part, where the real OpenTelemetry eBPF profiler has been
# built (make e2e, needs Go): the demo service again, this time sampled by that profiler (the
# same binary the end-to-end suite runs, tests/e2e/profiler.bats). It shows the profiler
# attaching to the service, the samples it exported linked to each transaction, and checks that
# every stack-trace id the profiler sent for a transaction is in what proflink delivered for it.
# Where that profiler is not built or cannot run here (not root, no BPF), it says so and exits 0:
# the demo's own check (with proflink-agent) stands.
# usage: demo_profiler.sh LIBRARY SERVICE (demo.sh passes its own)
set -eu

LIB=$1 SERVICE=$2
cd "$(dirname "$0")/.."
ROOT=$PWD
VERSION=$(sed -n 's/^[[:space:]]*go\.opentelemetry\.io\/ebpf-profiler \(v[^ ]*\).*/\1/p' tests/e2e/go.mod)
PROFILER=$ROOT/build/e2e/ebpf-profiler-$VERSION
REPORT=$ROOT/tests/e2e/e2e_report.py
SERVICE_S=5

not_here() {
    printf '\n=== 8. The real profiler: not run, %s\n' "$1"
    exit 0
}
# a test suite that runs the demo beside others turns this part off: the profiler samples every
# process of the host and would send the other suites' processes its own stack-trace ids
[ "${PROFLINK_DEMO_PROFILER:-on}" != off ] || not_here "PROFLINK_DEMO_PROFILER=off"
for f in "$PROFILER" build/e2e/receiver build/e2e/memlock_exec; do
    [ -x "$f" ] || not_here "the OpenTelemetry eBPF profiler $VERSION is not built (make e2e builds it, with Go)"
done
[ "$(id -u)" = 0 ] || not_here "it needs root"
if pgrep '^ebpf-profiler' >/dev/null; then not_here "another eBPF profiler is running"; fi
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
    not_here "tracefs is not mounted and cannot be"

WORK=$(mktemp -d /tmp/proflink-demo-profiler.XXXXXX)
chmod 755 "$WORK"
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${DEMO_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

printf '\n=== 8. The real profiler: OpenTelemetry eBPF profiler %s samples the same service\n' "$VERSION"
build/e2e/receiver -port-file "$WORK/port" -out "$WORK/samples.jsonl" 2>"$WORK/receiver.log" &
PIDS+=("$!")
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
echo "ebpf-profiler -collection-agent=127.0.0.1:$(cat "$WORK/port") -disable-tls -v (OTLP to a local receiver)"
build/e2e/memlock_exec "$PROFILER" -collection-agent="127.0.0.1:$(cat "$WORK/port")" -disable-tls -v \
    -reporter-interval 1s >"$WORK/profiler.log" 2>&1 &
PROFILER_PID=$!
PIDS+=("$PROFILER_PID")
for _ in $(seq 1200); do
    grep -q 'msg="Attached tracer program"' "$WORK/profiler.log" 2>/dev/null && break
    kill -0 "$PROFILER_PID" 2>/dev/null || not_here "the profiler did not start: $(grep -m1 -i error "$WORK/profiler.log")"
    sleep 0.05
done

mkfifo -m 600 "$WORK/fifo"
exec {FIFO_FD}<>"$WORK/fifo"
cat "$WORK/fifo" >"$WORK/fifo.jsonl" {FIFO_FD}>&- &
CAT_PID=$!
PIDS+=("$CAT_PID")
# ENABLED=true (as in the demo's first part): transactions are held for the profiler's delay
# from the start, not only once its first datagram arrived (auto)
LD_PRELOAD=$LIB PROFLINK_FIFO=$WORK/fifo OTEL_SERVICE_NAME=proflink-demo \
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
    ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$WORK \
    "$SERVICE" -s "$SERVICE_S" -t 3 >"$WORK/service.out" 2>"$WORK/service.err" {FIFO_FD}>&- &
SERVICE_PID=$!
wait "$SERVICE_PID" || { echo "demo: the service failed" >&2; cat "$WORK/service.err" >&2; exit 1; }
# what was sampled before the service ended reaches the receiver within two report cycles
cycles() { grep -c 'export [0-9]*:' "$WORK/receiver.log" || true; }
want=$(($(cycles) + 2))
for _ in $(seq 100); do [ "$(cycles)" -ge "$want" ] && break; sleep 0.1; done
# the FIFO's writers are gone (the service, our holder): cat ends at end of file
exec {FIFO_FD}>&-
for _ in $(seq 40); do kill -0 "$CAT_PID" 2>/dev/null || break; sleep 0.05; done
grep -m1 "apm.service.name: .*proflink-$SERVICE_PID-" "$WORK/profiler.log" | sed 's/.*msg="/profiler: /; s/"$//'
tail -n 1 "$WORK/service.out"

python3 - "$SERVICE_PID" <<EOF
import json, subprocess, sys
pid = sys.argv[1]
def report(*a):
    return json.loads(subprocess.check_output(["python3", "$REPORT", *a]))
samples = report("samples", "$WORK/samples.jsonl", pid)
log = report("log", "$WORK/profiler.log", pid)
deferral = report("deferral", "$WORK/fifo.jsonl", pid)
sent = log["reported"] - log["failed"]
received = sum(t["before"] + t["late"] for t in deferral.values())
late = sum(t["late"] for t in deferral.values())
print("profiler: %d samples of the service exported, %d linked to %d transactions; "
      "%d correlation datagrams sent (%d more refused by a full socket queue), %d received"
      % (samples["samples"], samples["linked"], len(samples["links"]), sent, log["failed"], received))
for link, n in sorted(samples["links"].items(), key=lambda kv: -kv[1])[:3]:
    trace, txn = link.split("/")
    print("  trace %s transaction %s: %d samples exported, %d stack-trace ids delivered"
          % (trace, txn, n, deferral.get(txn, {}).get("delivered", 0)))
problems = ["transaction %s: %d ids arrived before its delivery, %d delivered" % (txn, t["before"], t["delivered"])
            for txn, t in sorted(deferral.items()) if t["before"] != t["delivered"]]
if received != sent:
    problems.append("the profiler sent %d datagrams, proflink received %d" % (sent, received))
if not log["attached"]:
    problems.append("the profiler never attached")
if problems:
    print("demo: MISMATCH with the real profiler:", *problems[:10], sep="\n  ")
    sys.exit(1)
print("demo: every datagram the real profiler sent reached proflink, and every stack-trace id that "
      "arrived before its transaction was delivered is in it")
if late:
    print("demo: %d ids arrived after their transaction had been delivered: the profiler reported "
          "those samples more than samples-delay-ms (1000 ms: it registers no other) after the "
          "transaction ended" % late)
EOF
