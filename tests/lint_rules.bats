#!/usr/bin/env bats
# shellcheck shell=bash
# tests/lint_bats.py (make lint): the checks errexit ignores in a bats test are rejected, the
# forms that do check are let through.
load helpers

# lint — the linter on the sample written to s.in (TEST at a line's start stands for bats'
# test keyword, which bats would otherwise take for a test of this file)
lint() {
    sed 's/^TEST /@test /' "$BATS_TEST_TMPDIR/s.in" >"$BATS_TEST_TMPDIR/s.bats"
    run python3 "$ROOT/tests/lint_bats.py" "$BATS_TEST_TMPDIR/s.bats"
}

@test "lint: an && list or a negation before a test's last line is rejected, with its line" {
    libc_independent
    cat >"$BATS_TEST_TMPDIR/s.in" <<'EOF2'
TEST "t" {
    [ -n "$a" ] && [ -n "$b" ]
    [[ $x == y ]] && echo "$z" |
        grep -q z
    ! grep -q x file
    helper() { :; }
    true
}
check_in_a_function() {
    [ -f a ] && [ -f b ]
    true
}
EOF2
    lint
    echo "$output"
    [ "$status" -eq 1 ]
    [ "${#lines[@]}" -eq 4 ]
    [[ "${lines[0]}" == *"s.bats:2: \`&&\` before the last command"* ]]
    [[ "${lines[1]}" == *"s.bats:3: \`&&\`"* ]]
    [[ "${lines[2]}" == *"s.bats:5: \`!\` before the last command"* ]]
    [[ "${lines[3]}" == *"s.bats:10: \`&&\`"* ]]
}

@test "lint: conditions, quoted or substituted &&, control flow, teardown and the last line pass" {
    libc_independent
    cat >"$BATS_TEST_TMPDIR/s.in" <<'EOF2'
teardown() {
    [ -n "$PID" ] && kill "$PID"
    true
}
TEST "t" {
    if [ -n "$a" ] && [ -n "$b" ]; then echo; fi
    while [ -e x ] && [ -e y ]; do break; done
    run bash -c 'a && b'
    x=$(a && b)
    (cd dir && make)
    [[ -n $a && -n $b ]]
    for _ in 1 2; do [ -e f ] && break; sleep 0.1; done
    out=$(cmd) && rc=0 || rc=$?
    cat <<'X'
a && b
X
    [ -n "$a" ] && [ -n "$b" ]
}
EOF2
    lint
    echo "$output"
    [ "$status" -eq 0 ]
    [ -z "$output" ]
}
