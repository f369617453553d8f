#!/usr/bin/env bats
# shellcheck shell=bash
# Real daemons and the ways processes end: privilege-dropping servers stay attachable and remove
# their own socket; no way out a library can see leaves a file; a sandboxed program is left
# alone; the socket directory cannot be turned against its user; a full directory does not
# slow every start; the inspector disturbs nothing.
# modules: hooks/setxid.c hooks/exit.c hooks/exec.c hooks/seccomp.c preload/leaves/runtime_state.c
# modules: hooks/children.c preload/publish/socket.c preload/publish/socket_cleanup.c
# modules: preload/start/runtime.c
load helpers

NGINX_PORT=$(free_port)
MEMCACHED_PORT=$(free_port)
ATTACKER=$(unique_user dm)

setup() {
    # a directory like /tmp: sticky, owned by root, writable by all, inside a tree every uid
    # can traverse (a worker that became nobody must reach its file to remove it)
    WORK=$(mktemp -d /tmp/plt.XXXXXX)
    chmod 755 "$WORK"
    SOCKDIR=$WORK/sock
    mkdir -m 1777 "$SOCKDIR"
    export ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$SOCKDIR
    PIDS=()
}

teardown() {
    local p
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
    done
    for p in "${PIDS[@]}"; do
        wait "$p" 2>/dev/null || true
    done
    if id "$ATTACKER" >/dev/null 2>&1; then
        userdel "$ATTACKER" 2>/dev/null || true
    fi
    ! mountpoint -q "$WORK/full" || umount "$WORK/full"
    rm -rf "$WORK"
}

# no_files DIR — DIR holds no proflink file.
no_files() {
    local left
    left=$(find "$1" -maxdepth 1 -name 'proflink-*' | head -5)
    if [ -n "$left" ]; then
        echo "left behind in $1:" >&2
        ls -l "$1" >&2
        return 1
    fi
}

# wait_gone PID — until the process has exited (10 s).
wait_gone() {
    for _ in $(seq 200); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.05
    done
    echo "pid $1 still running" >&2
    return 1
}

# ---- nginx ------------------------------------------------------------------------------------

nginx_conf() {
    local dir=$1
    cat >"$dir/nginx.conf" <<EOF
user nobody nogroup;
worker_processes 4;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log info;
events { worker_connections 64; }
http {
    access_log $dir/access.log;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server { listen 127.0.0.1:$NGINX_PORT; location / { return 200 "ok\n"; } }
}
EOF
}

# nginx_workers DIR — prints the worker pids once the master has 4 of them (10 s).
nginx_workers() {
    local dir=$1 master workers
    for _ in $(seq 200); do
        master=$(cat "$dir/nginx.pid" 2>/dev/null || true)
        if [ -n "$master" ]; then
            workers=$(pgrep -P "$master" || true)
            if [ "$(echo "$workers" | grep -c .)" = 4 ]; then
                echo "$workers"
                return 0
            fi
        fi
        sleep 0.05
    done
    echo "nginx in $dir never had 4 workers" >&2
    return 1
}

# run_nginx DIR PRELOAD — starts nginx (with PRELOAD, may be empty), checks each worker with
# INSPECT_WORKER (a function taking the pid, if set), sends requests, quits and waits.
run_nginx() {
    local dir=$1 preload=$2 workers w master
    mkdir -p "$dir"
    chmod 755 "$dir"
    nginx_conf "$dir"
    LD_PRELOAD=$preload nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" \
        >"$dir/stdout" 2>"$dir/stderr" &
    PIDS+=("$!")
    master=$!
    workers=$(nginx_workers "$dir")
    for w in $workers; do
        if [ -n "${INSPECT_WORKER:-}" ]; then
            "$INSPECT_WORKER" "$w"
        fi
    done
    for w in 1 2 3 4 5 6 7 8; do
        [ "$(curl -s --max-time 5 "http://127.0.0.1:$NGINX_PORT/")" = ok ]
    done
    nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" -s quit
    wait_gone "$master"
    for w in $workers; do
        wait_gone "$w"
    done
}

# The log without times and process ids, sorted (workers interleave freely), without the
# master's SIGCHLD/SIGIO lines: how many of those signals coalesce is a matter of timing.
# The lines that depend on timing alone are left out: how many SIGCHLD/SIGIO arrive, and the
# waitpid() ECHILD that nginx's master logs when an earlier SIGCHLD handler already reaped every
# worker (a race between nginx's own handlers, seen once in a run with four suites at a time: the
# library neither reaps children nor handles signals).
normalized_log() {
    sed -E 's/^[0-9\/]+ [0-9:]+ //; s/[0-9]+#[0-9]+: /P#T: /; s/[0-9]+/N/g' "$1" |
        grep -vE 'signal N \((SIGCHLD|SIGIO)\) received|waitpid\(\) failed \(N: No child processes\)' |
        sort
}

check_worker() {
    local w=$1
    "$INSPECT" --json "$w" >"$BATS_TEST_TMPDIR/w$w.json"
    python3 - "$BATS_TEST_TMPDIR/w$w.json" "$w" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
s = j["socket"]
assert j["attachable"], j["checks"]
assert s["target_euid"] == 65534 and s["uid"] == 65534 and s["gid"] == 65534, s
assert s["access"] == "owner" and s["connect"] == "ok", s
assert ("proflink-%d-" % pid) in j["storage"]["socket_path"], j["storage"]
threads = {c["name"]: c for c in j["checks"]}["threads"]
assert threads["status"] == "pass" and "no thread stopped" in threads["detail"], threads
assert all(t["thread_pointer"] and t["apm"] for t in j["threads"]), j["threads"]
EOF
}

@test "nginx: every 'user nobody' worker is attachable with its own socket, nothing left after quit, logs as without the library" {
    command -v nginx
    INSPECT_WORKER=check_worker run_nginx "$WORK/with" "$LIB"
    no_files "$SOCKDIR"
    INSPECT_WORKER='' run_nginx "$WORK/without" ""
    run grep -c 'Interrupted system call' "$WORK/with/error.log"
    [ "$output" = 0 ]
    diff <(normalized_log "$WORK/without/error.log") <(normalized_log "$WORK/with/error.log")
    diff "$WORK/without/stdout" "$WORK/with/stdout"
    diff "$WORK/without/stderr" "$WORK/with/stderr"
}

@test "nginx: a 'user nobody' worker killed by SIGKILL leaves no socket file once the master reaped it" {
    command -v nginx
    local dir=$WORK/killed master workers victim file
    mkdir -p "$dir"
    chmod 755 "$dir"
    nginx_conf "$dir"
    LD_PRELOAD=$LIB nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" \
        >"$dir/stdout" 2>"$dir/stderr" &
    PIDS+=("$!")
    master=$!
    workers=$(nginx_workers "$dir")
    victim=$(head -1 <<<"$workers")
    wait_attachable "$victim"
    # the worker's file is its user's: the master (root) reaps it with waitpid(-1, WNOHANG)
    file=$(find "$SOCKDIR" -name "proflink-$victim-*" -user 65534)
    [ -S "$file" ]
    kill -KILL "$victim"
    for _ in $(seq 200); do
        [ -e "/proc/$victim" ] || [ -e "$file" ] || break
        sleep 0.05
    done
    ls -l "$SOCKDIR"
    refute test -e "$file"
    # the master started another worker in its place, with a file of its own
    [ "$(nginx_workers "$dir" | grep -vcx "$victim")" = 4 ]
    nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" -s quit
    wait_gone "$master"
    no_files "$SOCKDIR"
}

@test "the inspector interrupts nothing by default; --stop does and says so" {
    command -v nginx
    stop_inspect() {
        run "$INSPECT" --stop "$1"
        [[ "$output" == *"thread pointers read by stopping each thread"* ]]
    }
    INSPECT_WORKER=stop_inspect run_nginx "$WORK/stop" "$LIB"
    # the check that the default run above logs none of these lines is only meaningful if a
    # ptrace stop really makes nginx log them
    run grep -c 'Interrupted system call' "$WORK/stop/error.log"
    [ "$output" -ge 1 ]
}

# ---- memcached and a C program ----------------------------------------------------------------

@test "memcached -u nobody: attachable as nobody, its socket removed at exit" {
    command -v memcached
    LD_PRELOAD=$LIB memcached -u nobody -l 127.0.0.1 -p "$MEMCACHED_PORT" -U 0 -t 2 \
        >"$WORK/mc.out" 2>"$WORK/mc.err" &
    PIDS+=("$!")
    local pid=$!
    for _ in $(seq 200); do
        [ "$(awk '/^Uid:/ {print $3}' "/proc/$pid/status" 2>/dev/null)" = 65534 ] && break
        sleep 0.05
    done
    wait_attachable "$pid"
    "$INSPECT" --json "$pid" >"$BATS_TEST_TMPDIR/mc.json"
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
s = j["socket"]
assert j["attachable"] and s["uid"] == 65534 and s["target_euid"] == 65534, s' "$BATS_TEST_TMPDIR/mc.json"
    kill -TERM "$pid"
    wait_gone "$pid"
    no_files "$SOCKDIR"
    run cat "$WORK/mc.err"
    [ "$output" = "" ]
}

@test "a program that drops uid/gid at run time (setuid, setresuid, setreuid, seteuid) stays attachable and removes its socket" {
    local way pid
    for way in setuid setresuid setreuid seteuid; do
        LD_PRELOAD=$LIB "$HELPERS/target_dropids" "$way" 65534 65534 >"$WORK/$way.out" 2>"$WORK/$way.err" &
        PIDS+=("$!")
        pid=$!
        wait_for_line "$WORK/$way.out" '^dropped 65534 65534$'
        "$INSPECT" --json "$pid" >"$BATS_TEST_TMPDIR/d.json"
        python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
s = j["socket"]
assert j["attachable"] and (s["uid"], s["gid"]) == (65534, 65534) and s["access"] == "owner", (sys.argv[2], s)' \
            "$BATS_TEST_TMPDIR/d.json" "$way"
        kill -USR1 "$pid"
        wait_gone "$pid"
        no_files "$SOCKDIR"
        [ ! -s "$WORK/$way.err" ]
    done
}

# ---- ways out ---------------------------------------------------------------------------------

# same_run CMD… — output and status equal with and without the library, and no file left.
same_run() {
    local plain pre plain_rc=0 pre_rc=0
    plain=$("$@" 2>&1) || plain_rc=$?
    pre=$(LD_PRELOAD=$LIB "$@" 2>&1) || pre_rc=$?
    if [ "$plain" != "$pre" ] || [ "$plain_rc" != "$pre_rc" ]; then
        echo "differs: [$plain_rc] $plain  vs  [$pre_rc] $pre" >&2
        return 1
    fi
    no_files "$SOCKDIR"
}

@test "dash, _exit, _Exit, exec into a static program, fork children that _exit: no file left" {
    [ "$(readlink -f /bin/sh)" = /usr/bin/dash ]
    same_run /bin/sh -c true
    same_run /bin/sh -c 'echo a; (echo b); echo c | cat'
    same_run "$HELPERS/target_exits" _exit
    same_run "$HELPERS/target_exits" _Exit
    same_run "$HELPERS/target_exits" exec "$HELPERS/target_static_true"
    same_run "$HELPERS/target_exits" exec /bin/true
    same_run "$HELPERS/target_exits" forks 300
    # shellcheck disable=SC2016 # $0 is the inner shell's
    same_run bash -c 'for i in 1 2 3; do /bin/true; done; exec "$0" true' /bin/busybox
}

@test "a raw exit_group (what Go's os.Exit does) leaves a file that the next start removes" {
    same_run_rc=0
    LD_PRELOAD=$LIB "$HELPERS/target_exits" exit_group >/dev/null || same_run_rc=$?
    [ "$same_run_rc" = 3 ]
    [ "$(find "$SOCKDIR" -name 'proflink-*' | wc -l)" = 1 ]
    LD_PRELOAD=$LIB /bin/true
    no_files "$SOCKDIR"
}

@test "a failed exec: the program runs on, attachable through a new socket, and removes it at exit" {
    LD_PRELOAD=$LIB "$HELPERS/target_exits" execfail >"$WORK/x.out" 2>"$WORK/x.err" &
    PIDS+=("$!")
    local pid=$!
    wait_for_line "$WORK/x.out" '^waiting$'
    grep -qx 'failed 2' "$WORK/x.out"
    "$INSPECT" --json "$pid" >"$BATS_TEST_TMPDIR/x.json"
    python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert j["attachable"] and j["socket"]["connect"] == "ok", j["checks"]' "$BATS_TEST_TMPDIR/x.json"
    [ "$(find "$SOCKDIR" -name 'proflink-*' | wc -l)" = 1 ]
    kill -USR1 "$pid"
    wait_gone "$pid"
    no_files "$SOCKDIR"
    [ ! -s "$WORK/x.err" ]
}

# ---- seccomp ----------------------------------------------------------------------------------

@test "a program with a seccomp allowlist: same output and exit status with the library" {
    local how end
    for how in prctl syscall; do
        for end in exit _exit; do
            run "$HELPERS/target_seccomp_allowlist" "$how" "$end"
            [ "$status" = 6 ]
            [ "$output" = sandboxed ]
            run env LD_PRELOAD="$LIB" "$HELPERS/target_seccomp_allowlist" "$how" "$end"
            echo "$how $end: $status $output"
            [ "$status" = 6 ]
            [ "$output" = sandboxed ]
        done
    done
}

@test "a sandboxed program whose tracer uses the message API: no new thread, no system call of proflink's in the tracer's calls" {
    local how
    for how in prctl syscall; do
        run "$HELPERS/target_seccomp_allowlist" "$how" exit api
        [ "$status" = 6 ]
        [ "$output" = "sandboxed"$'\n'"api rc=-2 delivered=0" ]
        # starting the reader and intake would be a clone() the allowlist kills for (SIGSYS)
        run env LD_PRELOAD="$LIB" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
            "$HELPERS/target_seccomp_allowlist" "$how" exit api
        echo "$how: $status $output"
        [ "$status" = 6 ]
        [ "$output" = "sandboxed"$'\n'"api rc=0 delivered=1" ]
        # threads started before the filter carry on (it is not theirs); the tracer's end makes
        # no system call of proflink's (getpid was one), and the reader delivers the held
        # transaction after the delay
        run env LD_PRELOAD="$LIB" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
            "$HELPERS/target_seccomp_allowlist" "$how" exit api-early
        echo "$how early: $status $output"
        [ "$status" = 6 ]
        [ "$output" = "sandboxed"$'\n'"api rc=1 delivered=1" ]
    done
}

# sandboxed_tsync LIB HELPERS — target_seccomp_allowlist under LIB with a message callback set
# before a TSYNC filter (proflink's threads run, then the filter covers them too), a profiler's
# datagrams sent after the filter; sets status and output as `run` does.
sandboxed_tsync() {
    local fifo=$BATS_TEST_TMPDIR/in out=$BATS_TEST_TMPDIR/tsync.out pid sock
    rm -f "$fifo"
    mkfifo "$fifo"
    env LD_PRELOAD="$1" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=true \
        "$2/target_seccomp_allowlist" tsync exit wait <"$fifo" >"$out" 2>&1 3>&- &
    pid=$!
    exec 9>"$fifo"
    wait_for_line "$out" '^sandboxed$'
    sock=$(compgen -G "$SOCKDIR/proflink-$pid-*.sock" | head -1)
    [ -n "$sock" ]
    # correlations and a registration, as the profiler sends them (refused ones are dropped)
    "$ROOT/build/tests/send_datagrams" --drop "$pid" "$sock" corr-ids 0af7651916cd43dd8448eb211c80319c \
        b7ad6b7169203331 20 >/dev/null || true
    "$ROOT/build/tests/send_datagrams" --drop "$pid" "$sock" reg 1000 >/dev/null || true
    echo go >&9
    exec 9>&-
    status=0
    wait "$pid" || status=$?
    output=$(cat "$out")
}

@test "a TSYNC seccomp filter covers proflink's threads: they end before it, the program lives (glibc and musl)" {
    run "$HELPERS/target_seccomp_allowlist" tsync exit wait </dev/null
    [ "$status" = 6 ]
    [ "$output" = "sandboxed"$'\n'"alive" ]
    sandboxed_tsync "$LIB" "$HELPERS"
    echo "glibc: $status $output"
    [ "$status" = 6 ]
    [ "$output" = "sandboxed"$'\n'"alive" ]
    local musl_lib=$ROOT/build/musl/elastic-jvmti-linux-proflink-musl-$ARCH.so
    [ -e "$musl_lib" ] || skip "no musl build (musl-gcc missing): the glibc run passed"
    sandboxed_tsync "$musl_lib" "$ROOT/build/tests/musl"
    echo "musl: $status $output"
    [ "$status" = 6 ]
    [ "$output" = "sandboxed"$'\n'"alive" ]
}

# ---- the socket directory ---------------------------------------------------------------------

@test "a socket directory others can write to is refused with one warning; a symlink swap changes no file's mode" {
    useradd --no-create-home --shell /usr/sbin/nologin "$ATTACKER"
    local open=$WORK/open victim=$WORK/victim
    mkdir -m 0777 "$open"
    echo secret >"$victim"
    chmod 0644 "$victim"
    # the attacker replaces every proflink file created in the directory with a symlink
    setpriv --reuid="$ATTACKER" --regid="$ATTACKER" --clear-groups \
        "$ROOT/build/tests/symlink_swapper" "$open" "$victim" 30 >"$WORK/attack.out" 2>&1 &
    PIDS+=("$!")
    local attacker=$!
    wait_for_line "$WORK/attack.out" '^ready$'
    for _ in $(seq 20); do
        ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$open TMPDIR=$SOCKDIR \
            LD_PRELOAD=$LIB /bin/true 2>"$WORK/err"
        [ "$(grep -c 'writable by others' "$WORK/err")" = 1 ]
        [ "$(wc -l <"$WORK/err")" = 1 ]
    done
    [ "$(stat -c %a "$victim")" = 644 ]
    [ -z "$(ls -A "$open")" ]
    no_files "$SOCKDIR"
    # the same attack in a sticky directory (as /tmp): it cannot remove our files
    kill "$attacker"
    wait "$attacker" || true
    setpriv --reuid="$ATTACKER" --regid="$ATTACKER" --clear-groups \
        "$ROOT/build/tests/symlink_swapper" "$SOCKDIR" "$victim" 30 >"$WORK/attack2.out" 2>&1 &
    PIDS+=("$!")
    attacker=$!
    wait_for_line "$WORK/attack2.out" '^ready$'
    for _ in $(seq 20); do
        LD_PRELOAD=$LIB /bin/true
    done
    kill -INT "$attacker"
    [ "$(stat -c %a "$victim")" = 644 ]
    no_files "$SOCKDIR"
}

@test "300,000 stale-looking files: each start looks at a bounded number of entries" {
    local full=$WORK/full
    mkdir "$full"
    # on a file system of its own: removing 300,000 files one by one from the overlay that
    # /tmp can be took two minutes of system time, unmounting takes none
    mount -t tmpfs -o size=64m,nr_inodes=400000,mode=755 proflink-sweep-test "$full"
    python3 - "$full" <<'EOF'
import os, sys
d = sys.argv[1]
for i in range(300000):
    # dead pids (beyond pid_max), names exactly like proflink's sockets
    os.close(os.open("%s/proflink-%d-%08x.sock" % (d, 4194304 + 1 + i, i), os.O_CREAT | os.O_WRONLY, 0o600))
EOF
    local run n
    for run in 1 2 3; do
        echo "start $run"
        ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_SOCKET_DIR=$full PROFLINK_LOG=debug \
            LD_PRELOAD=$LIB /bin/true 2>"$WORK/sweep.err"
        n=$(sed -n 's/.*socket sweep of .*: \([0-9]*\) entries examined.*/\1/p' "$WORK/sweep.err")
        echo "examined: $n"
        [ -n "$n" ]
        [ "$n" -le 1024 ]
    done
    [ "$(find "$full" -name 'proflink-*' | wc -l)" = 300000 ]
}

# ---- threads the library cannot see -----------------------------------------------------------

@test "a raw clone() thread is reported as lacking a record of its own, with or without --stop" {
    LD_PRELOAD=$LIB "$HELPERS/target_rawclone" >"$WORK/r.out" 2>"$WORK/r.err" &
    PIDS+=("$!")
    local pid=$! opt
    wait_for_line "$WORK/r.out" '^ready$'
    for opt in "" --stop; do
        "$INSPECT" --json ${opt:+"$opt"} "$pid" >"$BATS_TEST_TMPDIR/r.json"
        python3 - "$BATS_TEST_TMPDIR/r.json" "$pid" "$opt" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
threads = {c["name"]: c for c in j["checks"]}["threads"]
assert threads["status"] == "warn" and "raw clone" in threads["detail"], (sys.argv[3], threads)
raw = [t for t in j["threads"] if t["tid"] != pid]
main = [t for t in j["threads"] if t["tid"] == pid][0]
assert len(raw) == 1 and not raw[0]["own_record_possible"] and "raw clone" in raw[0]["error"], raw
assert main["own_record_possible"] and main["apm"], main
PY
    done
    kill -USR1 "$pid"
    wait_gone "$pid"
}

@test "threads made through a pthread_create proflink does not interpose are named as lacking a record, not PASS" {
    LD_PRELOAD=$LIB "$HELPERS/target_bypass_threads" >"$WORK/b.out" 2>"$WORK/b.err" &
    PIDS+=("$!")
    local pid=$!
    wait_for_line "$WORK/b.out" '^ready$'
    "$INSPECT" --json "$pid" >"$BATS_TEST_TMPDIR/b.json"
    python3 - "$BATS_TEST_TMPDIR/b.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
threads = {c["name"]: c for c in j["checks"]}["threads"]
assert threads["status"] == "warn" and "2 without a record" in threads["detail"], threads
assert sum(1 for t in j["threads"] if t["apm"]) == 2, j["threads"]
PY
    kill -USR1 "$pid"
    wait_gone "$pid"
}
