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
# with the extension against without, proflink preloaded both ways. The JVM's CPU time is the
# sum of its threads' run time in ns (/proc/PID/task/*/schedstat; clock ticks are too coarse),
# but for the JIT's compiler threads
# while a client sends keep-alive requests (4 connections). Each JVM: 8 s of warm-up (the JIT
# compiles the path), then 5 windows of 2 s, its figure the median window. ROUNDS (7) pairs of
# JVMs, the order alternating within each pair (machine drift cancels), the ratio the median of
# the pairs' ratios: a single pair varies by up to +-40% on a shared machine (the JIT, the
# neighbours' load), the median by a few %.
AGENT=build/java/opentelemetry-javaagent.jar
ROUNDS=${JAVA_BENCH_ROUNDS:-7}
if [ -f "$AGENT" ]; then
    javac --release 17 -nowarn -d "$out/svc" tests/java/JavaService.java
    # the JIT's compiler threads left out: what they compile after the warm-up lands in one
    # window or another (a one-time cost, and the largest noise)
    cpu_ns() {
        local t c n s=0
        for t in /proc/"$1"/task/*; do
            read -r c <"$t/comm" 2>/dev/null || continue
            case $c in C1\ CompilerThre* | C2\ CompilerThre*) continue ;; esac
            read -r n _ <"$t/schedstat" 2>/dev/null || continue
            s=$((s + n))
        done
        echo "$s"
    }
    rps() { # EXT(yes|no) — the median of 5 windows' requests per CPU second
        local ext=() pid port w c0 c1 r vals=()
        [ "$1" = yes ] && ext=(-Dotel.javaagent.extensions="$EXT")
        LD_PRELOAD=$LIB java -javaagent:$AGENT "${ext[@]}" -Dotel.traces.exporter=none \
            -Dotel.metrics.exporter=none -Dotel.logs.exporter=none -cp "$out/svc" JavaService \
            /dev/null pool >"$out/svc.out" 2>/dev/null &
        pid=$!
        for _ in $(seq 300); do grep -q '^port' "$out/svc.out" 2>/dev/null && break; sleep 0.1; done
        port=$(sed -n 's/^port //p' "$out/svc.out")
        python3 bench/java/http_rps.py "$port" 8 4 >/dev/null
        for w in 1 2 3 4 5; do
            c0=$(cpu_ns "$pid")
            r=$(python3 bench/java/http_rps.py "$port" 2 4 | sed -n 's/^requests_per_s //p')
            c1=$(cpu_ns "$pid")
            vals+=("$(awk -v r="$r" -v c=$((c1 - c0)) 'BEGIN { printf "%.1f", r * 2 / (c > 0 ? c / 1e9 : 1) }')")
        done
        kill "$pid"; wait "$pid" 2>/dev/null || true
        printf '%s\n' "${vals[@]}" | sort -n | sed -n 3p
    }
    ratios=() alone=() with=()
    for i in $(seq "$ROUNDS"); do
        if [ $((i % 2)) = 1 ]; then a=$(rps no); b=$(rps yes); else b=$(rps yes); a=$(rps no); fi
        alone+=("$a"); with+=("$b")
        ratios+=("$(awk -v a="$b" -v b="$a" 'BEGIN { printf "%.3f", a / b }')")
    done
    med() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    echo "HTTP requests per CPU s, agent alone: $(med "${alone[@]}")   agent + extension: $(med "${with[@]}") (medians of $ROUNDS JVMs each)"
    echo "  ratio: median $(med "${ratios[@]}") of $ROUNDS interleaved pairs (each: ${ratios[*]}) (target >= 0.95)"
fi

# One unmount + mount of a virtual thread (Thread.yield, bench/java/VirtualYieldBench.java) under
# the agent alone and with the extension, whose hooks add a JNI call to each: Java 21+ only.
JAVA21=${JAVA21:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}
if [ -f "$AGENT" ] && [ -x "$JAVA21" ]; then
    "${JAVA21%/java}/javac" -nowarn -d "$out/vy" bench/java/VirtualYieldBench.java
    vy() { # EXT(yes|no)
        local ext=()
        [ "$1" = yes ] && ext=(-Dotel.javaagent.extensions="$EXT")
        LD_PRELOAD=$LIB "$JAVA21" -javaagent:$AGENT "${ext[@]}" -Dotel.traces.exporter=none \
            -Dotel.metrics.exporter=none -Dotel.logs.exporter=none -cp "$out/vy" VirtualYieldBench \
            2>/dev/null | sed -n 's/^yield_ns //p'
    }
    y1=$(vy no); w1=$(vy yes); y2=$(vy no); w2=$(vy yes)
    y=$(printf '%s\n' "$y1" "$y2" | sort -n | head -1); w=$(printf '%s\n' "$w1" "$w2" | sort -n | head -1)
    echo "virtual thread yield (unmount + mount), agent alone: ${y} ns   agent + extension: ${w} ns   ratio $(awk -v a="$w" -v b="$y" 'BEGIN { printf "%.2f", a / b }')"
fi
