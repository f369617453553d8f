#!/usr/bin/env bash
# fetch.sh [DEST] — the OpenTelemetry Java agent at the pinned version, from Maven Central with
# Maven (mvn dependency:get), its SHA-256 checked against the pinned one, copied to DEST
# (default build/java/opentelemetry-javaagent.jar). The tests run the service under it. Nothing
# is fetched when DEST already has the pinned bytes.
set -euo pipefail
VERSION=2.31.1
SHA256=bbf83c151b6400709e2f225bdd07a04f839d9d13b8b93464241333fd25d3e3ba
root=$(cd "$(dirname "$0")/../.." && pwd)
dest=${1:-$root/build/java/opentelemetry-javaagent.jar}

sum() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$dest" ] && [ "$(sum "$dest")" = "$SHA256" ]; then
    exit 0
fi
command -v mvn >/dev/null || { echo "fetch.sh: mvn is not installed (apt-get install maven)" >&2; exit 1; }
mvn -q -B dependency:get -Dtransitive=false \
    -Dartifact="io.opentelemetry.javaagent:opentelemetry-javaagent:$VERSION" >&2
repo=$(mvn -q -B help:evaluate -Dexpression=settings.localRepository -DforceStdout 2>/dev/null || true)
[ -d "$repo" ] || repo=$HOME/.m2/repository
jar=$repo/io/opentelemetry/javaagent/opentelemetry-javaagent/$VERSION/opentelemetry-javaagent-$VERSION.jar
got=$(sum "$jar")
if [ "$got" != "$SHA256" ]; then
    echo "fetch.sh: $jar has SHA-256 $got, not the pinned $SHA256" >&2
    exit 1
fi
mkdir -p "$(dirname "$dest")"
cp "$jar" "$dest.tmp" && mv "$dest.tmp" "$dest"
