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
