# stepped_helpers.bash — for suites whose target program advances one step per line it reads on
# stdin (so that the test can read its memory from outside between steps).
# Variables set here (OUT, TARGET_PID) are read by the suites that load it.
# shellcheck disable=SC2034
load helpers

# start_stepped [VAR=VALUE…] PROGRAM ARGS… — starts it in the background, stdin from fd 8,
# stdout to $OUT; sets TARGET_PID.
start_stepped() {
    OUT=$BATS_TEST_TMPDIR/target.out
    rm -f "$BATS_TEST_TMPDIR/cmd"
    mkfifo "$BATS_TEST_TMPDIR/cmd"
    env "$@" <"$BATS_TEST_TMPDIR/cmd" >"$OUT" 2>"$BATS_TEST_TMPDIR/target.err" &
    TARGET_PID=$!
    exec 8>"$BATS_TEST_TMPDIR/cmd"
}

stepped_teardown() {
    exec 8>&- 2>/dev/null || true
    stop_target
    rm -rf "$SOCKDIR"
}
