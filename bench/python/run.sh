#!/usr/bin/env bash
# make bench, the Python integration (proflink-otel) in build/pyenv: ratios measured in this run.
# usage: bench/python/run.sh LIBRARY
set -eu
cd "$(dirname "$0")/../.."
LIB=$1
PY=build/pyenv/bin/python
B=build/bench
mkdir -p "$B"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
val() { sed -n "s/^$1 //p"; }
best() { printf '%s\n' "$@" | sort -g | tail -1; }
low() { printf '%s\n' "$@" | sort -g | head -1; }

# PROFLINK_LOG=error: where a profiler runs on the machine, proflink holds the bench's tens of
# thousands of root spans and says once that its deferral queue is full
out=$(LD_PRELOAD=$LIB PROFLINK_LOG=error $PY bench/python/context_switch.py)
s=$(echo "$out" | val sdk_ns); p=$(echo "$out" | val proflink_ns)
echo "attach+detach of a span's context, SDK's contextvars context: ${s} ns   ProflinkRuntimeContext: ${p} ns   ratio $(ratio "$p" "$s")"
s=$(echo "$out" | val sdk_request_ns); p=$(echo "$out" | val proflink_request_ns)
echo "a root and a child span entered and left, SDK alone: ${s} ns   with the integration: ${p} ns   ratio $(ratio "$p" "$s")"

for loop in asyncio uvloop; do
    sdk=() hook=()
    for _ in 1 2 3; do
        sdk+=("$(LD_PRELOAD=$LIB $PY bench/python/asyncio_steps.py sdk $loop | val step_ns)")
        hook+=("$(LD_PRELOAD=$LIB $PY bench/python/asyncio_steps.py hook $loop | val step_ns)")
    done
    a=$(low "${sdk[@]}"); b=$(low "${hook[@]}")
    echo "$loop task step in a span, SDK alone: ${a} ns   with the integration (instrument()): ${b} ns   ratio $(ratio "$b" "$a")"
done

# HTTP, 2 ms of CPU per request: the SDK alone (no preload) against the integration under
# proflink, alternated three times. Two figures: requests/s (best of each), and the server's CPU
# time per request (its own CPU clock, every thread's, read before and after the run; lowest of
# each), whose inverse is the throughput of a CPU-bound server: on a loaded machine requests/s
# mostly measures the share of the CPUs the server got, CPU per request does not. Server and
# client share one CPU.
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c "$(($(nproc) - 1))"); fi
http_run() { # MODE VARIANT -> "REQUESTS_PER_S CPU_US_PER_REQUEST"
    local pid port out
    rm -f "$B/py_http.out"  # the last server's line must not be taken for this one's
    if [ "$2" = proflink ]; then
        LD_PRELOAD=$LIB "${pin[@]}" $PY bench/python/http_throughput.py server "$1" "$2" >"$B/py_http.out" &
    else
        "${pin[@]}" $PY bench/python/http_throughput.py server "$1" "$2" >"$B/py_http.out" &
    fi
    pid=$!
    for _ in $(seq 100); do grep -q listening "$B/py_http.out" 2>/dev/null && break; sleep 0.1; done
    port=$(sed -n 's/^listening //p' "$B/py_http.out")
    out=$("${pin[@]}" $PY bench/python/http_throughput.py client "$port" 1.5)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    echo "$(echo "$out" | val requests_per_s) $(echo "$out" | val server_cpu_us_per_request)"
}
for mode in threaded asyncio fastapi_async fastapi_def; do
    s=() p=() sc=() pc=()
    # the order alternates too: the first server of a pair may find the CPU in another state
    for first in sdk proflink sdk; do
        for v in "$first" "$([ "$first" = sdk ] && echo proflink || echo sdk)"; do
            read -r rps cpu < <(http_run "$mode" "$v")
            if [ "$v" = sdk ]; then s+=("$rps"); sc+=("$cpu"); else p+=("$rps"); pc+=("$cpu"); fi
        done
    done
    a=$(best "${s[@]}"); b=$(best "${p[@]}")
    echo "HTTP requests/s ($mode), SDK alone: ${a}   with the integration: ${b}   ratio $(ratio "$b" "$a") (target >= 0.90)"
    a=$(low "${sc[@]}"); b=$(low "${pc[@]}")
    echo "  server CPU per request ($mode), SDK alone: ${a} us   with the integration: ${b} us   throughput ratio at equal CPU $(ratio "$a" "$b") (target >= 0.90)"
done
