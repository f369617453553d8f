#!/usr/bin/env bats
# variants: glibc musl
# shellcheck shell=bash
# A child made by a raw clone(SIGCHLD) system call runs no fork handlers: until its first use of
# the library it publishes its parent's socket (the inspector must not call that a pass); at its
# first use it gets its own socket and OTel process context, as a fork child does, and leaves
# its parent's alone. A child in its parent's memory (vfork-like) is never "set up" there.
# modules: preload/start/fork_sequence.c preload/api/resource_api.c preload/start/runtime.c
# modules: hooks/pthread_create.c
load helpers

setup() {
    setup_sockdir
    WORK=$(mktemp -d /tmp/plt.XXXXXX)
    PIDS=()
}

teardown() {
    stop_pids "${PIDS[@]}"
    rm -rf "$WORK" "$SOCKDIR"
}

# start_rawchild MODE — starts the fixture; sets PARENT and CHILD (the raw clone child).
start_rawchild() {
    LD_PRELOAD=$LIB "$HELPERS/target_rawchild" "$1" >"$WORK/out" 2>"$WORK/err" &
    PIDS+=("$!")
    PARENT=$!
    wait_for_line "$WORK/out" '^child [0-9]+$'
    CHILD=$(sed -n 's/^child //p' "$WORK/out")
    PIDS+=("$CHILD")
}

# report_json PID FILE — the inspector's JSON report (its exit status is not this helper's).
report_json() {
    "$INSPECT" --json --no-threads "$1" >"$2" || true
}

# views PID FILE — "socket-path instance-id" of PID as the inspector sees it ("-" when none).
views() {
    report_json "$1" "$2"
    "$PY" - "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
st = j["storage"] or {}
ctx = j["otel_process_context"]
iid = ctx["resource"]["service.instance.id"] if ctx.get("found") and ctx.get("valid") else "-"
print(st.get("socket_path", "-"), iid)
PY
}

# wait_exited PID — until the process has exited (10 s): gone, or a zombie its parent has not
# reaped yet (the raw child's parent waits for it only at the end).
wait_exited() {
    for _ in $(seq 200); do
        grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null && return 0
        [ -e "/proc/$1" ] || return 0
        sleep 0.05
    done
    echo "pid $1 still running" >&2
    return 1
}

@test "before its first use, a raw clone child's socket (its parent's) FAILs the inspection, with a fix line" {
    start_rawchild thread
    run "$INSPECT" --no-threads "$CHILD"
    echo "$output"
    [ "$status" -ne 0 ]
    [[ "$output" == *"FAIL  socket "*"proflink-$PARENT-"*"is named for pid $PARENT (its parent), not for this process (pid $CHILD)"* ]]
    [[ "$output" == *"fix: this process is a copy of its parent, pid $PARENT made by a raw clone()"* ]]
    [[ "$output" == *"result: NOT attachable"* ]]
    # the parent itself is fine
    "$INSPECT" --no-threads "$PARENT" >"$WORK/parent.txt"
    grep -q '^PASS  socket ' "$WORK/parent.txt"
    report_json "$CHILD" "$WORK/child.json"
    "$PY" - "$WORK/child.json" "$PARENT" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
sock = {c["name"]: c for c in j["checks"]}["socket"]
assert sock["status"] == "fail" and "named for pid %s" % sys.argv[2] in sock["detail"], sock
assert j["attachable"] is False, j["attachable"]
assert not j["otel_process_context"]["found"], j["otel_process_context"]
PY
}

# first_use_sets_up MODE — the raw clone child's first use (MODE: thread, api or fork) gives it its own
# socket file (named for it, writable, a datagram peer) and its own OTel context; its parent's
# are unchanged; at the child's exit its file goes and the parent's stays.
first_use_sets_up() {
    start_rawchild "$1"
    local before_parent child_before after_parent child_after
    before_parent=$(views "$PARENT" "$WORK/p0.json")
    child_before=$(views "$CHILD" "$WORK/c0.json")
    echo "parent: $before_parent / child before: $child_before"
    [[ "$before_parent" == "$SOCKDIR/proflink-$PARENT-"*" "* ]]
    [[ "$child_before" == "${before_parent% *} -" ]] # the parent's socket, no context
    kill -USR1 "$CHILD"
    wait_for_line "$WORK/out" '^used$'
    child_after=$(views "$CHILD" "$WORK/c1.json")
    after_parent=$(views "$PARENT" "$WORK/p1.json")
    echo "child after: $child_after / parent after: $after_parent"
    [ "$after_parent" = "$before_parent" ]
    [[ "$child_after" == "$SOCKDIR/proflink-$CHILD-"*" "* ]]
    [ "${child_after#* }" != - ]
    [ "${child_after#* }" != "${before_parent#* }" ] # a context of its own: a new instance id
    "$PY" - "$WORK/c1.json" "$CHILD" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
checks = {c["name"]: c for c in j["checks"]}
assert j["attachable"] is True, checks
assert checks["socket"]["status"] == "pass", checks["socket"]
assert j["socket"]["connect"] == "ok" and j["socket"]["access"], j["socket"]
assert checks["otel"]["status"] == "pass", checks["otel"]
PY
    local child_file=${child_after% *} parent_file=${before_parent% *}
    [ -S "$child_file" ]
    [ -S "$parent_file" ]
    kill -USR1 "$CHILD"
    wait_exited "$CHILD"
    [ ! -e "$child_file" ]
    [ -S "$parent_file" ]
    kill -USR1 "$PARENT"
    wait "$PARENT" # the child exited 0
    [ ! -e "$parent_file" ]
}

@test "a raw clone child's first pthread_create gives it its own socket and OTel context; its parent's are unchanged; its file goes at exit" {
    first_use_sets_up thread
}

@test "a raw clone child's first message API call gives it its own socket and OTel context; its parent's are unchanged; its file goes at exit" {
    first_use_sets_up api
}

@test "a raw clone child's first fork() sets it up before it is copied again; its parent's socket and context are unchanged" {
    first_use_sets_up fork
}

@test "a child in its parent's memory (clone CLONE_VM|CLONE_VFORK) calling the API leaves the parent's socket and context alone" {
    LD_PRELOAD=$LIB "$HELPERS/target_rawchild" vm >"$WORK/out" 2>"$WORK/err" &
    PIDS+=("$!")
    PARENT=$!
    wait_for_line "$WORK/out" '^parent [0-9]+$'
    grep -qx 'vm done' "$WORK/out"
    "$INSPECT" --no-threads "$PARENT" >"$WORK/p.txt"
    cat "$WORK/p.txt"
    grep -q "^PASS  socket .*/proflink-$PARENT-" "$WORK/p.txt"
    grep -q '^PASS  otel ' "$WORK/p.txt"
    [ "$(find "$SOCKDIR" -name 'proflink-*' | wc -l)" = 1 ]
    kill -USR1 "$PARENT"
    wait "$PARENT"
}

@test "raw clone children copied while a parent thread holds proflink's resource lock are set up all the same" {
    # musl's malloc has one lock for the process, which these copies take held as often as not
    # (the parent's thread allocates while it republishes): such a child hangs in its first
    # malloc, proflink's or its own. glibc's main thread allocates from an arena of its own.
    if [ "$LIBC" = musl ]; then skip "musl: a raw clone of a multi-threaded program may copy malloc's lock held"; fi
    LD_PRELOAD=$LIB "$HELPERS/target_rawchild" busy >"$WORK/out" 2>"$WORK/err" &
    PIDS+=("$!")
    wait "$!"
    cat "$WORK/out"
    grep -qx 'busy: 8 of 8 children set up' "$WORK/out"
}
