#!/usr/bin/env bash
# bench/java/run.sh — one attach + close pair on the OpenTelemetry context storage, with the
# Java agent extension's wrapper against without (bench/java/ContextSwitchBench.java), as a ratio.
# Needs a JDK, the extension (make) and the API/SDK jars in Maven's local repository (the
# extension's build fetched them).
set -eu
cd "$(dirname "$0")/../.."
EXT=build/proflink-otel-javaagent-extension.jar
LIB=$PWD/build/elastic-jvmti-linux-proflink-$(uname -m).so
if ! command -v javac >/dev/null || [ ! -f "$EXT" ]; then
    echo "(skipped: no JDK or no build/proflink-otel-javaagent-extension.jar)"
    exit 0
fi
repo=$HOME/.m2/repository/io/opentelemetry
v=1.65.0
cp=$EXT
for a in api context common sdk-trace sdk-common; do
    cp=$cp:$repo/opentelemetry-$a/$v/opentelemetry-$a-$v.jar
done
out=build/bench/java
mkdir -p "$out"
javac --release 17 -nowarn -cp "$cp" -d "$out" bench/java/ContextSwitchBench.java
r=$(LD_PRELOAD=$LIB java -cp "$out:$cp" proflink.otel.ContextSwitchBench)
p=$(echo "$r" | sed -n 's/^plain_ns //p'); w=$(echo "$r" | sed -n 's/^proflink_ns //p')
echo "OTel context storage, attach+close:  ${p} ns"
echo "with the extension's wrapper:         ${w} ns   ratio $(awk -v a="$w" -v b="$p" 'BEGIN { printf "%.2f", a / b }') vs without"

# Requests per CPU second of tests/java/JavaService.java (JDK HttpServer, pool) under the agent,
# with the extension against without, proflink preloaded both ways: the JVM's user + system time
# over 3 s of requests after 6 s of warm-up (the JIT still compiles), twice each alternating, the best of each. (Its
# requests/s are bound by the client's delayed ACKs of the server's two writes, not by CPU.)
AGENT=build/java/opentelemetry-javaagent.jar
if [ -f "$AGENT" ]; then
    javac --release 17 -nowarn -d "$out/svc" tests/java/JavaService.java
    rps() { # EXT(yes|no)
        local ext=() pid port
        [ "$1" = yes ] && ext=(-Dotel.javaagent.extensions="$EXT")
        LD_PRELOAD=$LIB java -javaagent:$AGENT "${ext[@]}" -Dotel.traces.exporter=none \
            -Dotel.metrics.exporter=none -Dotel.logs.exporter=none -cp "$out/svc" JavaService \
            /dev/null pool >"$out/svc.out" 2>/dev/null &
        pid=$!
        for _ in $(seq 300); do grep -q '^port' "$out/svc.out" 2>/dev/null && break; sleep 0.1; done
        port=$(sed -n 's/^port //p' "$out/svc.out")
        python3 bench/java/http_rps.py "$port" 6 4 >/dev/null
        c0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
        r=$(python3 bench/java/http_rps.py "$port" 3 4 | sed -n 's/^requests_per_s //p')
        c1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
        kill "$pid"; wait "$pid" 2>/dev/null || true
        # requests per CPU second (clock ticks of the JVM's user + system time)
        awk -v r="$r" -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", r * 3 / (c > 0 ? c / hz : 1) }'
    }
    a1=$(rps no); b1=$(rps yes); a2=$(rps no); b2=$(rps yes)
    a=$(printf '%s\n' "$a1" "$a2" | sort -n | tail -1); b=$(printf '%s\n' "$b1" "$b2" | sort -n | tail -1)
    echo "HTTP requests per CPU s, agent alone: ${a}   agent + extension: ${b}   ratio $(awk -v a="$b" -v b="$a" 'BEGIN { printf "%.2f", a / b }') (target >= 0.95)"
fi
