#!/usr/bin/env bats
# What every user meets first: --version on every tool, proflink-agent --help naming every
# option the agent accepts, and `make install` refreshing the linker cache (ldconfig) only when
# it installs for real (no DESTDIR).
# shellcheck shell=bash
load helpers
load browser
bats_require_minimum_version 1.5.0

version() { sed -n 's/^#define PROFLINK_VERSION_STRING "\(.*\)"/\1/p' "$ROOT/include/proflink.h"; }

@test "tools: --version on every tool prints the library's version" {
    v=$(version)
    [ -n "$v" ]
    for t in proflink-inspect proflink-agent; do
        run "$ROOT/build/$t" --version
        [ "$status" -eq 0 ]
        [ "$output" = "$t $v" ]
    done
    run "$ROOT/scripts/proflink-run" --version
    [ "$status" -eq 0 ] && [ "$output" = "proflink-run $v" ]
}

@test "tools: proflink-agent --help documents every option it accepts" {
    run "$ROOT/build/proflink-agent" --help
    [ "$status" -eq 0 ]
    help=$output
    # the long options from the agent's own option table, the short ones from its optstring
    mapfile -t longs < <(sed -n '/static const struct option opts/,/NULL, 0, NULL, 0/p' \
        "$ROOT/tools/agent/agent_options.c" | grep -o '{"[a-z-]*"' | tr -d '{"')
    [ "${#longs[@]}" -ge 6 ]
    for o in "${longs[@]}"; do
        grep -qE -- "^ +(-., )?--$o( |$)" <<<"$help" || { echo "--$o undocumented" >&2; false; }
    done
    shorts=$(grep -o 'getopt_long(argc, argv, "[^"]*"' "$ROOT/tools/agent/agent_options.c" | sed 's/.*"\(.*\)"/\1/' | tr -d :)
    [ -n "$shorts" ]
    for ((i = 0; i < ${#shorts}; i++)); do
        grep -qE -- "^ +-${shorts:i:1}( |,)" <<<"$help" || { echo "-${shorts:i:1} undocumented" >&2; false; }
    done
}

@test "install: ldconfig runs for a real install, not for a DESTDIR staging tree" {
    d=$BATS_TEST_TMPDIR
    make -s -C "$ROOT" install PREFIX="$d/prefix" LDCONFIG="touch $d/ldconfig-ran" >/dev/null
    [ -f "$d/ldconfig-ran" ]
    [ -f "$d/prefix/lib/elastic-jvmti-linux-proflink-$ARCH.so" ]
    rm -f "$d/ldconfig-ran"
    make -s -C "$ROOT" install PREFIX=/usr/local DESTDIR="$d/stage" LDCONFIG="touch $d/ldconfig-ran" >/dev/null
    [ -f "$d/stage/usr/local/lib/elastic-jvmti-linux-proflink-$ARCH.so" ]
    [ ! -e "$d/ldconfig-ran" ]
    # the installed proflink-run knows its version without the source tree
    [ "$("$d/stage/usr/local/bin/proflink-run" --version)" = "proflink-run $(version)" ]
}

@test "demo: succeeds, cuts long lines only between words, explains the ids and drops, states its duration" {
    # (not the real profiler's part: it would sample the processes of the suites running beside)
    PROFLINK_DEMO_PROFILER=off run bash "$ROOT/scripts/demo.sh"
    [ "$status" -eq 0 ]
    local demo=$output
    grep -qE '^demo: done in [0-9]+ ms$' <<<"$output"
    grep -q '^demo: in a profiling UI each stack-trace id is one sampled stack' <<<"$output"
    # a shortened line ends right after a space or a comma, never inside an id or a word
    grep -q '…$' <<<"$output"
    run ! grep -E '[^ ,]…$' <<<"$output"
    # if the agent dropped samples, the demo says what "dropped (socket full)" means
    if grep -q 'more samples were' <<<"$output"; then
        grep -q 'dropped (socket full)": the agent sends in bursts' <<<"$output"
    fi
    # paths a user copies are absolute: the preload line and the service
    grep -q "^LD_PRELOAD=$ROOT/build/elastic-jvmti-linux-proflink-$ARCH.so " <<<"$demo"
    grep -qE "^ +$ROOT/build/tests/api_demo_service -s [0-9]+" <<<"$demo"
    # it ends with a flame graph per request (trace), each path absolute, existing, titled
    sed -n '/^=== 7. A flame graph per request/,$p' <<<"$demo" >"$BATS_TEST_TMPDIR/end"
    mapfile -t graphs < <(sed -n 's/^flame graph of trace \([0-9a-f]\{32\}\) ([0-9]* samples): \(.*\)$/\1 \2/p' "$BATS_TEST_TMPDIR/end")
    [ "${#graphs[@]}" -ge 3 ]
    for g in "${graphs[@]}"; do
        [[ "${g#* }" == "$ROOT/build/demo/flamegraphs/trace-${g%% *}.svg" ]]
        grep -q "<title>proflink flame graph: trace ${g%% *}</title>" "${g#* }"
    done
    grep -q "all listed in $ROOT/build/demo/flamegraphs/index.html$" "$BATS_TEST_TMPDIR/end"
    # one graph per sampled request: as many as the transactions the agent sampled
    [ "$(grep -c '^<li>' "$ROOT/build/demo/flamegraphs/index.html")" -ge 10 ]
    grep -q "^(the words used here: $ROOT/docs/glossary.md)$" "$BATS_TEST_TMPDIR/end"
    # and a browser shows the first one (last: without a browser the test is skipped here)
    chromium_or_skip
    screenshot_svg "${graphs[0]#* }" "$BATS_TEST_TMPDIR/shot.png"
    flame_on_screen "$BATS_TEST_TMPDIR/shot.png"
}

@test "glossary: the words the demo and the README use are defined, and the README points there" {
    for w in apmint transaction registration deferral; do
        grep -q "^\*\*$w\*\* — " "$ROOT/docs/glossary.md"
        grep -q "\*\*$w\*\*" "$ROOT/README.md"
    done
    grep -q '(docs/glossary.md)' "$ROOT/README.md"
}
