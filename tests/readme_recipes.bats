#!/usr/bin/env bats
# serial: the HTTP recipe samples a server's CPU
# The README's recipes as a new user runs them: each taken from the README's text (so the test
# follows the text) and run verbatim, and the promised result checked.
#  - Unmodified HTTP servers: the requests overlap the sampling, big.bin exists, the samples are
#    attributed to the recipe's trace. Run in namespaces of its own (pid, network, mount with a
#    private /tmp/www: not all of /tmp, which may hold the checkout), so its fixed port 8000,
#    `pidof python3` and /tmp/www see nothing else.
#  - Node.js: the tarball `make` packs installs as a copy with koffi resolved inside the
#    installing project, not as a symlink into the checkout.
# shellcheck shell=bash
load helpers
load readme_recipes
bats_require_minimum_version 1.5.0

@test "README, Unmodified HTTP servers: the recipe works as written" {
    libc_independent # python3 and proflink-run's choice of library
    command -v curl >/dev/null || skip "curl is not installed"
    unshare --pid --fork --mount-proc --net --mount true 2>/dev/null ||
        skip "no pid/network/mount namespaces here (unshare)"
    readme_block "Unmodified HTTP servers" 1 >"$BATS_TEST_TMPDIR/recipe.sh"
    grep -q 'proflink-agent' "$BATS_TEST_TMPDIR/recipe.sh"
    cat "$BATS_TEST_TMPDIR/recipe.sh"
    # from the checkout, as the README is read; Debian's python3 first (not a version manager's
    # shim); no socket directory of the suite's (the recipe uses the default, /tmp)
    cd "$ROOT"
    unset ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR
    # shellcheck disable=SC2016 # expanded by the inner shell
    run timeout 120 unshare --pid --fork --mount-proc --net --mount bash -c '
        ip link set lo up && mkdir -p /tmp/www && mount -t tmpfs tmpfs /tmp/www || exit 99
        PATH=/usr/bin:/bin:$PATH bash -e -c "$1"
        echo "rc=$?"
        ls -l /tmp/www/big.bin' sh "$(cat "$BATS_TEST_TMPDIR/recipe.sh")" 3>&-
    echo "$output"
    [ "$status" -ne 99 ]
    grep -q '^rc=0$' <<<"$output"
    grep -q ' /tmp/www/big.bin$' <<<"$output"
    grep -qE '^proflink-agent: attached to pid [0-9]+, service "unknown_service:python3' <<<"$output"
    # samples inside the recipe's trace, listed under its trace and transaction (parent) id
    n=$(sed -n 's/^proflink-agent: [0-9]* samples of threads on a CPU, \([0-9]*\) inside a trace$/\1/p' <<<"$output")
    [ "${n:-0}" -gt 0 ]
    grep -qE '^  4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7: ' <<<"$output"
    # and the real reason no id goes back: nothing in the server reads its socket
    grep -q "^proflink-agent: nothing in pid [0-9]* reads its socket" <<<"$output"
}

@test "README, Node.js: the package make packs installs as a copy, koffi resolved in the project" {
    libc_independent
    command -v npm >/dev/null || skip "npm is not installed"
    [ -d "$ROOT/integrations/node/node_modules/koffi" ] ||
        skip "the Node.js integration's packages are not installed (cd integrations/node && npm ci)"
    cmd=$(readme_block "Node.js (OpenTelemetry JS)" 1)
    echo "$cmd"
    [[ "$cmd" == "npm install /path/to/proflink/build/proflink-otel-"*.tgz ]]
    tgz=${cmd#npm install /path/to/proflink/}
    make -s -C "$ROOT" "$tgz"
    [ -f "$ROOT/$tgz" ]
    # a project of its own, as in an image: the README's command with the real path
    app=$BATS_TEST_TMPDIR/app
    mkdir -p "$app"
    cd "$app"
    echo '{"name": "app", "version": "1.0.0", "private": true}' >package.json
    read -ra words <<<"${cmd/\/path\/to\/proflink/$ROOT}"
    # only its own dependency (koffi, pinned by the package): the peers are the SDK user's
    run timeout 300 "${words[@]}" --no-audit --no-fund --prefer-offline --legacy-peer-deps
    echo "$output"
    [ "$status" -eq 0 ]
    [ -d node_modules/proflink-otel ]
    [ ! -L node_modules/proflink-otel ]
    run node -e 'console.log(require.resolve("koffi", {paths: [require.resolve("proflink-otel")]}))'
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" == "$app/node_modules/koffi/"* ]]
}

@test "README, Java: the recipe works as written: the agent's spans on the service's threads, the ids on the exported roots" {
    libc_independent # java and proflink-run's choice of library
    command -v javac >/dev/null || skip "no JDK (javac) on this machine"
    [ -f "$ROOT/build/proflink-otel-javaagent-extension.jar" ] || skip "the Java extension was not built (JDK and Maven)"
    [ -f "$ROOT/build/java/opentelemetry-javaagent.jar" ] || skip "the OpenTelemetry Java agent was not fetched (make java-agent)"
    [ -x "$ROOT/build/proflink-agent" ] || skip "proflink-agent was not built (libunwind-dev)"
    unshare --pid --fork --mount-proc --mount true 2>/dev/null || skip "no pid/mount namespaces here (unshare)"
    readme_block "Java (OpenTelemetry Java agent)" 1 >"$BATS_TEST_TMPDIR/recipe.sh"
    cat "$BATS_TEST_TMPDIR/recipe.sh"
    cd "$ROOT"
    unset ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR
    # its own /tmp (the recipe's fixed paths) and pid namespace (the service ends with it); the
    # deferred roots are exported once the profiler's delay and the agent's batch delay (5 s)
    # are over: the service runs until an exported root carries ids (60 s at most), its logging
    # exporter's lines (stderr) kept in a file meanwhile and shown after
    # shellcheck disable=SC2016 # expanded by the inner shell
    run timeout 240 unshare --pid --fork --mount-proc --mount bash -c '
        mount -t tmpfs tmpfs /tmp || exit 99
        exec 2>/tmp/recipe.err
        PATH=/usr/bin:/bin:$PATH bash -e -c "$1"
        rc=$?
        for _ in $(seq 300); do
            grep -q elastic.profiler_stack_trace_ids /tmp/recipe.err && break
            sleep 0.2
        done
        cat /tmp/recipe.err
        echo "rc=$rc"' sh "$(cat "$BATS_TEST_TMPDIR/recipe.sh")" 3>&-
    echo "$output"
    [ "$status" -ne 99 ]
    grep -q '^rc=0$' <<<"$output"
    # (curl's responses have no newline: the agent's lines may follow them)
    n=$(sed -n 's/.*proflink-agent: [0-9]* samples of threads [^,]*, \([0-9]*\) inside a trace$/\1/p' <<<"$output")
    [ "${n:-0}" -gt 0 ]
    grep -q 'elastic.profiler_stack_trace_ids' <<<"$output"
}
